/*
 * cost_aware.c - FX's cost_aware mode (cost_aware.h): the entry, the merge
 * rounds and the fallback; the units it drives are listed in ca_internal.h.
 *
 * FX (cost_aware_partition in accelerator_partitioner.py, 1.13) tries every
 * pair of partitions by merging them in a copy of the list, mapping every
 * partition onto devices again (get_device_to_partitions_mapping, which
 * decides which partitions share a device and so transfer nothing) and
 * walking every path of the partitions' DAG; each try costs it time
 * quadratic in the graph. Here each round builds, once, the partitions'
 * DAG by list position (edges with FX's bytes and the mapping's credit),
 * a topological order, the list's fresh mapping with the devices' state
 * before every position, and the cost at each position under it. A try of
 * positions i < j then does only what differs from that round state:
 *   - the union's latency, edges and bytes from its own nodes;
 *   - a cycle search only when the levels differ by two or more;
 *   - the mapping from the state before i, shared by the tries of one i up
 *     to their j, then to the end and the union;
 *   - the cost recomputed at the union, the partitions the mapping moved
 *     and what their new figures reach (a heap in topological order, the
 *     union at the later of the pair's places), the rest kept;
 *   - a stop as soon as some path already costs more than the best so far
 *     with latencies alone after it (1e-9 margin for rounding), before the
 *     mapping when the union's own path does.
 * The figures are FX's to the bit (sums in its order). The rules are FX's:
 *   - a pair is tried when the bfs levels (longest path from a partition
 *     without parents) differ by at most 1 or one is the other's parent or
 *     child; a try whose union closes a cycle or whose list does not map
 *     costs infinity;
 *   - the baseline of each round is the cost of the current list with the
 *     devices the previous round mapped (none in the first round), and a
 *     try wins with a cost <= the best so far, so the last of equals wins;
 *   - the winner's union is appended and the two removed; levels and the
 *     mapping are then redone on the list.
 */
#include "cost_aware.h"

#include <stdlib.h>

#include "ca_internal.h"
#include "fx_internal.h"
#include "partd/partd.h"
#include "size_based.h"

/* The try of positions i < j (next: one is the other's parent or child)
 * against the best cost so far: 0 when FX would not try it, it closes a
 * cycle, the list does not map or it cannot beat the bound; else 1 with
 * its cost and the union's used bytes. */
static int try_pair(partd__ca_state *st, uint32_t i, uint32_t j, int next, double bound,
                    double *cost, int64_t *used)
{
    partd__ca_round *d = &st->rd;
    if (next && partd__ca_try_closes_cycle(d, i, j))
        return 0;
    const partd__ca_rec *a = &st->recs[st->order[i]], *b = &st->recs[st->order[j]];
    double lat_u = partd__ca_list_lat(st, a, b);
    double head = 0, tail = 0;
    for (int h = 0; h < 2; h++) {
        uint32_t q = h ? j : i;
        for (uint32_t e = d->par_off[q]; e < d->par_off[q + 1]; e++)
            if (d->par[e] != i && d->par[e] != j && d->f0[d->par[e]] > head)
                head = d->f0[d->par[e]];
        for (uint32_t e = d->ch_off[q]; e < d->ch_off[q + 1]; e++) {
            uint32_t c = d->ch[e];
            if (c != i && c != j && d->tail0[c] + d->lat[c] > tail)
                tail = d->tail0[c] + d->lat[c];
        }
    }
    if (partd__ca_exceeds(head + lat_u, tail, bound))
        return 0;
    *used = partd__ca_list_bytes(st, a, b);
    partd__ca_try_scan(st, i, j);
    uint32_t dev_u = partd__ca_try_map(st, i, j, *used);
    if (dev_u == PARTD_NONE)
        return 0;
    *cost = d->fail_at == d->P ? partd__ca_cost_lazy(st, i, j, dev_u, lat_u, tail, bound, next)
                               : partd__ca_cost_full(st, i, j, dev_u, lat_u);
    return 1;
}

/* The second positions j > i FX tries with first position i, in order:
 * those whose bfs level is within one of i's and i's parents and children
 * at other levels, merged. */
static void candidates(partd__ca_round *d, uint32_t i)
{
    uint32_t li = d->lvl[i], lo[3], hi[3], n_runs = 0, n_nb = 0, *nbs = d->cand_nb;
    for (uint32_t l = li ? li - 1 : 0; l <= li + 1 && l < d->P; l++) {
        uint32_t a = d->lv_off[l], b = d->lv_off[l + 1];
        while (a < b) { /* the first position past i */
            uint32_t m = a + (b - a) / 2;
            if (d->lv_pos[m] <= i)
                a = m + 1;
            else
                b = m;
        }
        if (a < d->lv_off[l + 1]) {
            lo[n_runs] = a;
            hi[n_runs++] = d->lv_off[l + 1];
        }
    }
    for (int h = 0; h < 2; h++) {
        const uint32_t *xs = h ? d->ch : d->par;
        const uint32_t *off = h ? d->ch_off : d->par_off;
        uint32_t from = off[i], to = off[i + 1];
        for (uint32_t e = from; e < to; e++) {
            uint32_t j = xs[e], lj = d->lvl[j];
            if (j <= i || (lj + 1 >= li && lj <= li + 1))
                continue;
            uint32_t at = n_nb++;
            for (; at > 0 && nbs[at - 1] > j; at--)
                nbs[at] = nbs[at - 1];
            nbs[at] = j;
        }
    }
    uint32_t n = 0, x = 0;
    for (;;) {
        uint32_t best = PARTD_NONE, from = 3;
        for (uint32_t r = 0; r < n_runs; r++)
            if (lo[r] < hi[r] && d->lv_pos[lo[r]] < best) {
                best = d->lv_pos[lo[r]];
                from = r;
            }
        if (x < n_nb && nbs[x] < best) {
            best = nbs[x];
            x++;
        } else if (from < 3) {
            lo[from]++;
        } else {
            break;
        }
        d->cand[n++] = best;
    }
    d->n_cand = n;
}

/* Every pair FX tries, in its order; the last of the cheapest (no dearer
 * than `cost`, the list's) in *best_a, *best_b, PARTD_NONE when none. */
static int search(partd__ca_state *st, const partd_cancel *cancel, double cost,
                  uint32_t *best_a, uint32_t *best_b, int64_t *best_used)
{
    partd__ca_round *d = &st->rd;
    int rc;
    *best_a = *best_b = PARTD_NONE;
    for (uint32_t i = 0; i + 1 < d->P; i++) {
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            return rc;
        uint32_t tok = ++d->nb_tok;
        partd__ca_try_start(st, i);
        for (uint32_t e = d->par_off[i]; e < d->par_off[i + 1]; e++)
            d->nb[d->par[e]] = tok;
        for (uint32_t e = d->ch_off[i]; e < d->ch_off[i + 1]; e++)
            d->nb[d->ch[e]] = tok;
        candidates(d, i);
        for (uint32_t x = 0; x < d->n_cand; x++) {
            uint32_t j = d->cand[x];
            int next = d->nb[j] == tok;
            double c;
            int64_t used;
            if (try_pair(st, i, j, next, cost, &c, &used) && c <= cost) {
                cost = c;
                *best_a = st->order[i];
                *best_b = st->order[j];
                *best_used = used;
            }
        }
    }
    return PARTD_OK;
}

/* reset_partition_device, get_device_to_partitions_mapping on the list */
static int remap(partd__ca_state *st)
{
    double cost;
    int ok;
    int rc = partd__ca_list_evaluate(st, PARTD_NONE, PARTD_NONE, 0, 1, &cost, &ok);
    if (rc != PARTD_OK)
        return rc;
    if (!ok) {
        /* FX keeps what its mapping gave before it stopped: only whether
         * every partition has a device matters from here (see finish) */
        for (uint32_t i = 0; i < st->n_order; i++)
            st->dev[st->order[i]] = PARTD_NONE;
        return PARTD_OK;
    }
    for (uint32_t i = 0; i < st->n_order; i++)
        st->dev[st->order[i]] = st->c_dev[st->pos[st->order[i]]];
    return PARTD_OK;
}

/* One round of search_combination; *merged set when a pair was merged. */
static int round_(partd__ca_state *st, const partd_cancel *cancel, int *merged)
{
    double cost;
    int ok, rc;
    *merged = 0;
    if ((rc = partd__ca_list_evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &cost, &ok)) != PARTD_OK)
        return rc;
    if (!ok)
        return PARTD_EINTERNAL;
    if (st->n_order == 1)
        return PARTD_OK;
    if ((rc = partd__ca_round_build(st)) != PARTD_OK)
        return rc;
    uint32_t best_a, best_b;
    int64_t best_used = 0;
    if ((rc = search(st, cancel, cost, &best_a, &best_b, &best_used)) != PARTD_OK)
        return rc;
    if (best_a != PARTD_NONE) {
        if ((rc = partd__ca_list_merge(st, best_a, best_b, best_used)) != PARTD_OK)
            return rc;
        *merged = 1;
    }
    if ((rc = partd__ca_list_levels(st)) != PARTD_OK)
        return rc;
    return remap(st);
}

/* FX's size_based plan (its list and devices), costed as this mode's. */
static int size_based_instead(const partd_request *req, const partd_cancel *cancel,
                              partd_plan **out, partd_problem *pb)
{
    partd_plan *sb = NULL;
    int rc = partd_size_based(req, cancel, &sb, pb);
    if (rc != PARTD_OK)
        return rc;
    const partd_graph *g = &req->graph;
    uint32_t P = sb->n_parts, nd = 0;
    for (uint32_t p = 0; p < P; p++)
        nd += sb->parts[p].n_devices;
    uint32_t *part_of = malloc(((size_t)g->n_nodes + 1) * sizeof *part_of);
    uint32_t *dev_off = malloc(((size_t)P + 1) * sizeof *dev_off);
    uint32_t *dev_idx = malloc(((size_t)nd + 1) * sizeof *dev_idx);
    int64_t *used = malloc(((size_t)P + 1) * sizeof *used);
    rc = PARTD_ENOMEM;
    if (part_of && dev_off && dev_idx && used) {
        for (uint32_t v = 0; v < g->n_nodes; v++)
            part_of[v] = PARTD_NONE;
        uint32_t at = 0;
        for (uint32_t p = 0; p < P; p++) {
            const partd_part *pt = &sb->parts[p];
            for (uint32_t i = 0; i < pt->n_nodes; i++)
                part_of[pt->nodes[i]] = p;
            dev_off[p] = at;
            for (uint32_t i = 0; i < pt->n_devices; i++)
                dev_idx[at++] = pt->devices[i];
            used[p] = pt->memory_bytes;
        }
        dev_off[P] = at;
        partd__fx_layout l = {P, part_of, dev_off, dev_idx};
        double sec;
        uint32_t cycle;
        rc = partd__fx_latency(req, &l, &sec, &cycle);
        if (rc == PARTD_EINFEASIBLE)
            rc = PARTD_EINTERNAL; /* size_based's partitions follow node order */
        if (rc == PARTD_OK)
            rc = partd__fx_plan(req, PARTD_MODE_COST_AWARE, &l, used, sec, out);
    }
    partd_plan_free(sb);
    free(part_of);
    free(dev_off);
    free(dev_idx);
    free(used);
    return rc;
}

static int finish(partd__ca_state *st, const partd_cancel *cancel, partd_plan **out,
                  partd_problem *pb)
{
    for (uint32_t i = 0; i < st->n_order; i++)
        if (st->dev[st->order[i]] == PARTD_NONE)
            return size_based_instead(st->req, cancel, out, pb);
    double sec;
    int ok;
    int rc = partd__ca_list_evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &sec, &ok);
    if (rc == PARTD_OK && !ok)
        rc = PARTD_EINTERNAL;
    if (rc == PARTD_OK)
        rc = partd__fx_plan(st->req, PARTD_MODE_COST_AWARE,
                            &(partd__fx_layout){st->n_order, st->c_part_of, st->c_dev_off,
                                                st->c_dev_idx},
                            st->c_used, sec, out);
    return rc;
}

/* The pass's state (ca_internal.h: per position and device, the mapping's
 * memory left, partitions held, order and lack, 24 bytes, and the range
 * trees over up to twice as many leaves, 64) against its cap. */
static int state_fits(const partd_request *req, partd_problem *pb)
{
    uint64_t cells = ((uint64_t)req->graph.n_ops + 2) * ((uint64_t)req->n_devices + 1);
    uint64_t bytes = cells * PARTD_COST_AWARE_CELL_BYTES;
    if (bytes <= PARTD_COST_AWARE_MAX_STATE_BYTES)
        return PARTD_OK;
    char need[PARTD_PROBLEM_BYTES_CAP], cap[PARTD_PROBLEM_BYTES_CAP];
    partd_problem_bytes(need, (double)bytes);
    partd_problem_bytes(cap, (double)PARTD_COST_AWARE_MAX_STATE_BYTES);
    partd_problem_set(pb, 422, "search-limit", "Search limit",
                      "cost_aware keeps FX's device mapping as it stands before each partition "
                      "of its list: %u operations on %u devices need %s of it, more than the "
                      "%s this mode may use; give fewer devices or use size_based or kl_based",
                      req->graph.n_ops, req->n_devices, need, cap);
    partd_problem_add(pb, "/devices", "%u devices with %u operations need %s in cost_aware",
                      req->n_devices, req->graph.n_ops, need);
    return PARTD_ETOOBIG;
}

int partd_cost_aware(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                     partd_problem *problem)
{
    int rc = partd__fx_whole(req, PARTD_MODE_COST_AWARE, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    if ((rc = state_fits(req, problem)) != PARTD_OK)
        return rc;
    partd__ca_state st;
    rc = partd__ca_list_init(&st, req);
    int merged = 1;
    while (rc == PARTD_OK && merged)
        rc = round_(&st, cancel, &merged);
    if (rc == PARTD_OK)
        rc = finish(&st, cancel, out, problem);
    partd__ca_list_free(&st);
    return rc;
}
