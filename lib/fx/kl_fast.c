/*
 * kl_fast.c - the incremental state of FX's kl_based pass; see
 * kl_internal.h.
 *
 * While no operation is in two partitions, a try changes the partitions of
 * one or two operations, so what FX recomputes for the whole list is kept
 * up to date instead: each partition's memory, the partitions' links
 * (dense P x P tables: op edges, bytes per edge for the device mapping's
 * credit, FX's comm bytes per link), and the longest path ending at each
 * operation within its partition, recomputed in a partition from the
 * lowest operation a change can reach. All of it is a function of the list
 * alone (integer sums, and the same longest-path recurrence over the same
 * inputs), so a try's cost is the full recomputation's (kl_state.c) to the
 * bit. partd__kl_state_add and _remove note each operation they change;
 * sync carries the notes over when nothing is in two partitions, and the
 * full recomputation serves while something is.
 *
 * Errors: PARTD_OK or PARTD_ENOMEM (after which the state stays off and
 * the full recomputation serves).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "kl_internal.h"
#include "partd/partd.h"

#define FAST_MAX_P 256u

/* users of op u in partition q */
static int users_in(const partd__kl *k, uint32_t u, uint32_t q)
{
    const partd_graph *g = k->g;
    for (uint32_t j = g->user_off[u]; j < g->user_off[u + 1]; j++)
        if (k->f.part[g->user_idx[j]] == q)
            return 1;
    return 0;
}

static uint32_t lower_bound(const uint32_t *a, uint32_t n, uint32_t v)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void stale_from(partd__kl_fast *f, uint32_t p, uint32_t v)
{
    if (f->from[p] == PARTD_NONE || v < f->from[p])
        f->from[p] = v;
}

/* op v leaves its partition */
static void detach(partd__kl *k, uint32_t v)
{
    const partd_graph *g = k->g;
    partd__kl_fast *f = &k->f;
    uint32_t P = f->P, a = f->part[v];
    f->part[v] = PARTD_NONE;
    uint32_t i = lower_bound(f->pl[a], f->pn[a], v);
    memmove(f->pl[a] + i, f->pl[a] + i + 1, (f->pn[a] - i - 1) * sizeof *f->pl[a]);
    f->pn[a]--;
    stale_from(f, a, v);
    f->used[a] -= partd__fx_total(g, v);
    uint64_t t = ++k->tok;
    for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
        uint32_t u = g->in_idx[j];
        int64_t ou = partd__fx_output(g, u);
        if (partd__fx_is_constant(g, u)) {
            uint32_t *cc = f->cc + (size_t)f->cid[u] * P;
            if (--cc[a] == 0) {
                f->used[a] -= partd__fx_total(g, u);
                for (uint32_t b = 0; b < P; b++)
                    if (b != a && cc[b]) {
                        f->c[(size_t)a * P + b] -= ou;
                        f->c[(size_t)b * P + a] -= ou;
                    }
            }
            continue;
        }
        uint32_t s = f->part[u];
        if (s != a)
            f->used[a] -= ou;
        if (s == PARTD_NONE || s == a)
            continue;
        f->ec[(size_t)s * P + a]--;
        f->w[(size_t)a * P + s] -= ou;
        if (k->nstamp[u] != t) {
            k->nstamp[u] = t;
            if (!users_in(k, u, a))
                f->c[(size_t)s * P + a] -= ou;
        }
    }
    int64_t ov = partd__fx_output(g, v);
    t = ++k->tok;
    for (uint32_t j = g->user_off[v]; j < g->user_off[v + 1]; j++) {
        uint32_t b = f->part[g->user_idx[j]];
        if (b == PARTD_NONE)
            continue;
        if (b == a) {
            f->used[a] += ov;
            continue;
        }
        f->ec[(size_t)a * P + b]--;
        f->w[(size_t)b * P + a] -= ov;
        if (k->pstamp[b] != t) {
            k->pstamp[b] = t;
            f->c[(size_t)a * P + b] -= ov;
        }
    }
}

/* op v, in no partition, joins b */
static int attach(partd__kl *k, uint32_t v, uint32_t b)
{
    const partd_graph *g = k->g;
    partd__kl_fast *f = &k->f;
    uint32_t P = f->P;
    if (f->pn[b] == f->pcap[b]) {
        uint32_t cap = f->pcap[b] ? 2 * f->pcap[b] : 64;
        uint32_t *pl = realloc(f->pl[b], (size_t)cap * sizeof *pl);
        if (!pl)
            return PARTD_ENOMEM;
        f->pl[b] = pl;
        f->pcap[b] = cap;
    }
    f->used[b] += partd__fx_total(g, v);
    uint64_t t = ++k->tok;
    for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
        uint32_t u = g->in_idx[j];
        int64_t ou = partd__fx_output(g, u);
        if (partd__fx_is_constant(g, u)) {
            uint32_t *cc = f->cc + (size_t)f->cid[u] * P;
            if (cc[b]++ == 0) {
                f->used[b] += partd__fx_total(g, u);
                for (uint32_t q = 0; q < P; q++)
                    if (q != b && cc[q]) {
                        f->c[(size_t)b * P + q] += ou;
                        f->c[(size_t)q * P + b] += ou;
                    }
            }
            continue;
        }
        uint32_t s = f->part[u];
        if (s != b)
            f->used[b] += ou;
        if (s == PARTD_NONE || s == b)
            continue;
        f->ec[(size_t)s * P + b]++;
        f->w[(size_t)b * P + s] += ou;
        if (k->nstamp[u] != t) {
            k->nstamp[u] = t;
            if (!users_in(k, u, b))
                f->c[(size_t)s * P + b] += ou;
        }
    }
    int64_t ov = partd__fx_output(g, v);
    t = ++k->tok;
    for (uint32_t j = g->user_off[v]; j < g->user_off[v + 1]; j++) {
        uint32_t q = f->part[g->user_idx[j]];
        if (q == PARTD_NONE)
            continue;
        if (q == b) {
            f->used[b] -= ov;
            continue;
        }
        f->ec[(size_t)b * P + q]++;
        f->w[(size_t)q * P + b] += ov;
        if (k->pstamp[q] != t) {
            k->pstamp[q] = t;
            f->c[(size_t)b * P + q] += ov;
        }
    }
    f->part[v] = b;
    uint32_t i = lower_bound(f->pl[b], f->pn[b], v);
    memmove(f->pl[b] + i + 1, f->pl[b] + i, (f->pn[b] - i) * sizeof *f->pl[b]);
    f->pl[b][i] = v;
    f->pn[b]++;
    stale_from(f, b, v);
    return PARTD_OK;
}

/* the longest paths of partition p from its first stale operation on, and
 * its critical path (partd__kl_state_latency's recurrence) */
static void repath(partd__kl *k, uint32_t p)
{
    const partd_graph *g = k->g;
    partd__kl_fast *f = &k->f;
    const uint32_t *pl = f->pl[p];
    uint32_t n = f->pn[p];
    for (uint32_t i = lower_bound(pl, n, f->from[p]); i < n; i++) {
        uint32_t v = pl[i];
        double top = 0;
        for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
            uint32_t u = g->in_idx[j];
            if (f->part[u] == p && f->d[u] > top)
                top = f->d[u];
        }
        f->d[v] = top + f->sec[v];
    }
    double lat = 0;
    for (uint32_t i = 0; i < n; i++)
        if (f->d[pl[i]] > lat)
            lat = f->d[pl[i]];
    f->lat[p] = lat;
    f->from[p] = PARTD_NONE;
}

/* The incremental state brought up to the list: *ready 1, or 0 while an
 * operation is in two partitions (or the state is off). */
int partd__kl_fast_sync(partd__kl *k, int *ready)
{
    partd__kl_fast *f = &k->f;
    *ready = 0;
    if (!f->on || k->n_dups)
        return PARTD_OK;
    for (uint32_t i = 0; i < f->n_pending; i++) {
        uint32_t v = f->pending[i];
        uint32_t want = k->mn[v] ? k->m[v][0].p : PARTD_NONE;
        f->is_pending[v] = 0;
        if (want == f->part[v])
            continue;
        if (f->part[v] != PARTD_NONE)
            detach(k, v);
        if (want != PARTD_NONE && attach(k, v, want) != PARTD_OK) {
            f->on = 0; /* half carried over: the full recomputation from here */
            return PARTD_ENOMEM;
        }
    }
    f->n_pending = 0;
    for (uint32_t p = 0; p < f->P; p++)
        if (f->from[p] != PARTD_NONE)
            repath(k, p);
    *ready = 1;
    return PARTD_OK;
}

/* partd__kl_state_on_cycle over the tables */
static int on_cycle_fast(partd__kl *k, uint32_t p)
{
    const partd__kl_fast *f = &k->f;
    uint32_t P = f->P, head = 0, tail = 0;
    uint64_t t = ++k->tok;
    k->pstamp[p] = t;
    k->queue[tail++] = p;
    while (head < tail) {
        const uint32_t *row = f->ec + (size_t)k->queue[head++] * P;
        for (uint32_t c = 0; c < P; c++) {
            if (!row[c])
                continue;
            if (c == p)
                return 1;
            if (k->pstamp[c] != t) {
                k->pstamp[c] = t;
                k->queue[tail++] = c;
            }
        }
    }
    return 0;
}

/* partd__kl_state_map over the tables: a partition's credit on a device is the
 * bytes per edge it reads from the partitions there */
int partd__kl_fast_map(partd__kl *k, uint32_t *dev)
{
    const partd__kl_fast *f = &k->f;
    uint32_t D = k->D, P = f->P;
    for (uint32_t d = 0; d < D; d++) {
        k->left[d] = k->req->devices[d].memory_bytes;
        k->order[d] = d;
    }
    for (uint32_t p = 0; p < P; p++)
        if (dev[p] != PARTD_NONE)
            k->left[dev[p]] -= f->used[p];
    for (uint32_t p = 0; p < P; p++) {
        if (dev[p] != PARTD_NONE)
            continue;
        for (uint32_t i = 1; i < D; i++) {
            uint32_t d = k->order[i], j = i;
            while (j > 0 && k->left[k->order[j - 1]] > k->left[d]) {
                k->order[j] = k->order[j - 1];
                j--;
            }
            k->order[j] = d;
        }
        for (uint32_t d = 0; d < D; d++)
            k->credit[d] = 0;
        const int64_t *row = f->w + (size_t)p * P;
        for (uint32_t s = 0; s < P; s++)
            if (s != p && dev[s] != PARTD_NONE)
                k->credit[dev[s]] += row[s];
        uint32_t chosen = PARTD_NONE;
        int64_t extra = 0;
        for (uint32_t j = 0; j < D && chosen == PARTD_NONE; j++) {
            uint32_t d = k->order[j];
            extra = f->used[p] - k->credit[d];
            if (extra < k->left[d])
                chosen = d;
        }
        if (chosen == PARTD_NONE)
            return 0;
        dev[p] = chosen;
        k->left[chosen] -= extra;
    }
    return 1;
}

/* partd__kl_state_latency over the tables */
static double latency_fast(partd__kl *k, const uint32_t *dev)
{
    const partd__kl_fast *f = &k->f;
    uint32_t P = f->P, head = 0, tail = 0, n_reach = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->reach[q] = 0;
        k->indeg[q] = 0;
        for (uint32_t a = 0; a < P; a++)
            k->indeg[q] += f->ec[(size_t)a * P + q] != 0;
    }
    for (uint32_t q = 0; q < P; q++)
        if (!k->indeg[q]) {
            k->reach[q] = 1;
            k->queue[tail++] = q;
        }
    while (head < tail) {
        const uint32_t *row = f->ec + (size_t)k->queue[head++] * P;
        n_reach++;
        for (uint32_t c = 0; c < P; c++)
            if (row[c] && !k->reach[c]) {
                k->reach[c] = 1;
                k->queue[tail++] = c;
            }
    }
    head = tail = 0;
    for (uint32_t q = 0; q < P; q++) {
        k->indeg[q] = 0;
        if (!k->reach[q])
            continue;
        for (uint32_t a = 0; a < P; a++)
            k->indeg[q] += f->ec[(size_t)a * P + q] && k->reach[a];
        if (!k->indeg[q])
            k->queue[tail++] = q;
    }
    double worst = 0, rate = k->req->options.transfer_bytes_per_sec;
    while (head < tail) {
        uint32_t q = k->queue[head++];
        double in = 0;
        for (uint32_t a = 0; a < P; a++) {
            if (!f->ec[(size_t)a * P + q] || !k->reach[a])
                continue;
            double comm =
                partd__kl_same_device(dev, a, q) ? 0.0 : (double)f->c[(size_t)a * P + q] / rate;
            double x = k->best[a] + comm;
            if (x > in)
                in = x;
        }
        k->best[q] = in + f->lat[q];
        if (k->best[q] > worst)
            worst = k->best[q];
        const uint32_t *row = f->ec + (size_t)q * P;
        for (uint32_t c = 0; c < P; c++)
            if (row[c] && --k->indeg[c] == 0)
                k->queue[tail++] = c;
    }
    return tail < n_reach ? PARTD__KL_RAISED : worst;
}

/* a try's costing over the tables */
double partd__kl_fast_cost(partd__kl *k, uint32_t p0, uint32_t p1)
{
    if (on_cycle_fast(k, p0) || on_cycle_fast(k, p1))
        return INFINITY;
    for (uint32_t p = 0; p < k->P; p++)
        k->fdev[p] = PARTD_NONE;
    return partd__kl_fast_map(k, k->fdev) ? latency_fast(k, k->fdev) : INFINITY;
}

int partd__kl_fast_init(partd__kl *k)
{
    const partd_graph *g = k->g;
    partd__kl_fast *f = &k->f;
    uint32_t P = k->P, n_const = 0;
    for (uint32_t v = 0; v < k->n; v++)
        n_const += partd__fx_is_constant(g, v) != 0;
    if (P < 2 || P > FAST_MAX_P || (uint64_t)n_const * P > (1u << 22))
        return PARTD_OK; /* the full recomputation throughout */
    size_t N = (size_t)k->n + 1, PP = (size_t)P * P;
    f->P = P;
    f->part = malloc(N * sizeof *f->part);
    f->sec = malloc(N * sizeof *f->sec);
    f->d = calloc(N, sizeof *f->d);
    f->cid = malloc(N * sizeof *f->cid);
    f->pending = malloc(N * sizeof *f->pending);
    f->is_pending = calloc(N, 1);
    f->lat = calloc(P, sizeof *f->lat);
    f->used = calloc(P, sizeof *f->used);
    f->from = malloc(P * sizeof *f->from);
    f->pn = calloc(P, sizeof *f->pn);
    f->pl = calloc(P, sizeof *f->pl);
    f->pcap = calloc(P, sizeof *f->pcap);
    f->cc = calloc((size_t)n_const * P + 1, sizeof *f->cc);
    f->ec = calloc(PP, sizeof *f->ec);
    f->w = calloc(PP, sizeof *f->w);
    f->c = calloc(PP, sizeof *f->c);
    if (!f->part || !f->sec || !f->d || !f->cid || !f->pending || !f->is_pending || !f->lat ||
        !f->used || !f->from || !f->pn || !f->pl || !f->pcap || !f->cc || !f->ec || !f->w || !f->c)
        return PARTD_ENOMEM;
    for (uint32_t p = 0; p < P; p++)
        f->from[p] = PARTD_NONE;
    for (uint32_t v = 0, c = 0; v < k->n; v++) {
        f->part[v] = PARTD_NONE;
        f->sec[v] = partd__fx_node_sec(g, v);
        f->cid[v] = partd__fx_is_constant(g, v) ? c++ : PARTD_NONE;
    }
    f->on = 1;
    return PARTD_OK;
}

void partd__kl_fast_free(partd__kl_fast *f)
{
    for (uint32_t p = 0; f->pl && p < f->P; p++)
        free(f->pl[p]);
    free(f->pl);
    free(f->part);
    free(f->sec);
    free(f->d);
    free(f->cid);
    free(f->pending);
    free(f->is_pending);
    free(f->lat);
    free(f->used);
    free(f->from);
    free(f->pn);
    free(f->pcap);
    free(f->cc);
    free(f->ec);
    free(f->w);
    free(f->c);
}

