/*
 * ca_cost.c - one pair's cost in a round of FX's cost_aware pass
 * (ca_internal.h), get_latency_of_partitioned_graph's figure to the bit
 * (sums in its order): in full over the round's topological order, the
 * union at the later of the pair's places; or incrementally from the
 * round's costs: the union, the partitions the try's mapping moved and
 * what their new figures reach are recomputed (a heap in topological
 * order), the rest kept, with a stop as soon as some path already costs
 * more than the bound with latencies alone after it. Errors: none; a
 * stopped try costs HUGE_VAL.
 */
#include <math.h>

#include "ca_internal.h"
#include "partd/partd.h"

/* The cost of one position z of the candidate (u: the union's slot). */
static double try_best(partd__ca_state *st, uint32_t i, uint32_t j, uint32_t z, uint32_t dev_u,
                       double best_u)
{
    partd__ca_round *d = &st->rd;
    double rate = st->req->options.transfer_bytes_per_sec, in = 0;
    uint32_t dz = partd__ca_dev(d, i, z);
    for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1]; e++) {
        uint32_t q = d->par[e], dq;
        double pb;
        int64_t bytes;
        if (q == i || q == j) {
            pb = best_u;
            dq = dev_u;
            bytes = d->out_comm[z];
        } else {
            pb = d->best[q];
            dq = partd__ca_dev(d, i, q);
            bytes = d->comm[e];
        }
        double comm = dq != PARTD_NONE && dq == dz ? 0.0 : (double)bytes / rate;
        double x = pb + comm;
        if (x > in)
            in = x;
    }
    return in + d->lat[z];
}

/* The candidate's cost (partd__fx_latency's figure) in the topological
 * order of the list, the union taking the later of i and j's places and
 * the descendants of the earlier one between them waiting for it. */
double partd__ca_cost_full(partd__ca_state *st, uint32_t i, uint32_t j, uint32_t dev_u,
                           double lat_u)
{
    partd__ca_round *d = &st->rd;
    double rate = st->req->options.transfer_bytes_per_sec, worst = 0, best_u = 0;
    uint32_t x = d->tpos[i] < d->tpos[j] ? i : j, y = x == i ? j : i;
    uint32_t t = ++d->d_tok, n_defer = 0;
    for (uint32_t k = 0; k < d->P; k++) {
        uint32_t z = d->topo[k];
        if (z == x)
            continue;
        if (z == y) {
            double in = 0;
            for (uint32_t h = 0; h < d->n_in; h++) {
                uint32_t q = d->in_list[h], dq = partd__ca_dev(d, i, q);
                double comm =
                    dq != PARTD_NONE && dq == dev_u ? 0.0 : (double)d->in_comm[q] / rate;
                double v = d->best[q] + comm;
                if (v > in)
                    in = v;
            }
            best_u = in + lat_u;
            if (best_u > worst)
                worst = best_u;
            for (uint32_t h = 0; h < n_defer; h++) {
                uint32_t w = d->defer[h];
                d->best[w] = try_best(st, i, j, w, dev_u, best_u);
                if (d->best[w] > worst)
                    worst = d->best[w];
            }
            n_defer = 0;
            continue;
        }
        if (d->tpos[z] > d->tpos[x] && d->tpos[z] < d->tpos[y]) {
            int late = 0;
            for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1] && !late; e++)
                late = d->par[e] == x || d->desc[d->par[e]] == t;
            if (late) {
                d->desc[z] = t;
                d->defer[n_defer++] = z;
                continue;
            }
        }
        d->best[z] = try_best(st, i, j, z, dev_u, best_u);
        if (d->best[z] > worst)
            worst = d->best[z];
    }
    return worst;
}

/* Queue position z (d->P: the union) once, in an order where every
 * partition follows its parents: topological, the union at the later y of
 * the pair's places, the earlier one's descendants between them after it.
 * The key names the position: tpos << 32 for most; tpos[y] << 32 for the
 * union (y itself is gone); tpos[y] << 32 | 1 + tpos for a late one. */
static void enqueue(partd__ca_round *d, uint32_t z, uint32_t y, uint32_t t)
{
    if (d->hst[z] == t)
        return;
    d->hst[z] = t;
    uint64_t key;
    if (z == d->P)
        key = (uint64_t)d->tpos[y] << 32;
    else if (d->desc[z] == d->d_tok)
        key = (uint64_t)d->tpos[y] << 32 | (1 + (uint64_t)d->tpos[z]);
    else
        key = (uint64_t)d->tpos[z] << 32;
    partd__ca_heap_push(d->heap, &d->n_heap, key);
}

static uint32_t key_position(const partd__ca_round *d, uint64_t key, uint32_t y)
{
    uint32_t major = (uint32_t)(key >> 32), minor = (uint32_t)(key & 0xffffffffu);
    if (minor)
        return d->topo[minor - 1];
    return major == d->tpos[y] ? d->P : d->topo[major];
}

/* try_cost, from the fresh mapping's figures: only the union, the
 * partitions whose device the try moved, their children and whatever
 * their new figures reach are recomputed; the cost is the largest of
 * those and of the untouched figures. Needs the fresh mapping whole. */
double partd__ca_cost_lazy(partd__ca_state *st, uint32_t i, uint32_t j, uint32_t dev_u,
                           double lat_u, double tail_u, double bound, int adjacent)
{
    partd__ca_round *d = &st->rd;
    double rate = st->req->options.transfer_bytes_per_sec, worst = 0, best_u = 0;
    uint32_t x = d->tpos[i] < d->tpos[j] ? i : j, y = x == i ? j : i;
    uint32_t t = ++d->h_tok;
    /* a path through both of an adjacent pair is shorter after the merge:
     * the bound after a partition holds for those the union does not
     * follow, which is all of them once the union is done */
    int bounded = !adjacent;
    d->d_tok++;
    /* the earlier one's descendants placed before the later one */
    for (uint32_t k = d->tpos[x] + 1; k < d->tpos[y]; k++) {
        uint32_t z = d->topo[k];
        for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1]; e++)
            if (d->par[e] == x || d->desc[d->par[e]] == d->d_tok) {
                d->desc[z] = d->d_tok;
                break;
            }
    }
    d->n_heap = 0;
    enqueue(d, d->P, y, t);
    for (int h = 0; h < 2; h++) {
        uint32_t s = h ? j : i;
        for (uint32_t e = d->ch_off[s]; e < d->ch_off[s + 1]; e++)
            if (d->ch[e] != i && d->ch[e] != j)
                enqueue(d, d->ch[e], y, t);
    }
    for (uint32_t c = 0; c < d->n_chg; c++) {
        uint32_t z = d->chg[c];
        enqueue(d, z, y, t);
        for (uint32_t e = d->ch_off[z]; e < d->ch_off[z + 1]; e++)
            if (d->ch[e] != i && d->ch[e] != j)
                enqueue(d, d->ch[e], y, t);
    }
    while (d->n_heap) {
        uint32_t z = key_position(d, partd__ca_heap_pop(d->heap, &d->n_heap), y);
        if (z == d->P) {
            double in = 0;
            for (uint32_t h = 0; h < d->n_in; h++) {
                uint32_t q = d->in_list[h], dq = partd__ca_dev(d, i, q);
                double comm =
                    dq != PARTD_NONE && dq == dev_u ? 0.0 : (double)d->in_comm[q] / rate;
                double v = (d->vst[q] == t ? d->best[q] : d->bbest[q]) + comm;
                if (v > in)
                    in = v;
            }
            best_u = in + lat_u;
            if (best_u > worst)
                worst = best_u;
            if (partd__ca_exceeds(best_u, tail_u, bound))
                return HUGE_VAL;
            bounded = 1;
            continue;
        }
        double in = 0;
        uint32_t dz = partd__ca_dev(d, i, z);
        for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1]; e++) {
            uint32_t q = d->par[e], dq;
            double pb;
            int64_t bytes;
            if (q == i || q == j) {
                pb = best_u;
                dq = dev_u;
                bytes = d->out_comm[z];
            } else {
                pb = d->vst[q] == t ? d->best[q] : d->bbest[q];
                dq = partd__ca_dev(d, i, q);
                bytes = d->comm[e];
            }
            double comm = dq != PARTD_NONE && dq == dz ? 0.0 : (double)bytes / rate;
            double v = pb + comm;
            if (v > in)
                in = v;
        }
        double nv = in + d->lat[z];
        d->vst[z] = t;
        d->best[z] = nv;
        if (nv > worst)
            worst = nv;
        if (bounded && partd__ca_exceeds(nv, d->tail0[z], bound))
            return HUGE_VAL; /* cannot win: the rest is not needed */
        if (nv != d->bbest[z])
            for (uint32_t e = d->ch_off[z]; e < d->ch_off[z + 1]; e++)
                if (d->ch[e] != i && d->ch[e] != j)
                    enqueue(d, d->ch[e], y, t);
    }
    /* the largest figure nothing touched */
    for (uint32_t k = 0; k < d->P; k++) {
        uint32_t z = d->by_best[k];
        if (z == i || z == j || d->vst[z] == t)
            continue;
        if (d->bbest[z] > worst)
            worst = d->bbest[z];
        break;
    }
    return worst;
}
