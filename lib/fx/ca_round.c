/*
 * ca_round.c - what a round of FX's cost_aware pass builds once for all its
 * tries (ca_internal.h): the partitions' DAG by list position (edges with
 * FX's bytes and the credit FX's mapping gives a partition on its inputs'
 * device), a topological order, the list's fresh mapping with the devices'
 * state (memory left, partitions held, sorted order) before every
 * position, the cost at each position under that mapping and the
 * latencies-alone bounds a try stops by. Also the mapping's step itself
 * (choose, take), which a try replays. Errors: PARTD_OK, PARTD_ENOMEM,
 * PARTD_EINTERNAL (a cycle among the list's partitions).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ca_internal.h"
#include "fx_internal.h"
#include "partd/partd.h"

/* Every array of a round, those round_build allocates first. */
#define ROUND_BUILT 4
#define ROUND_PARTS 80
static size_t round_parts(partd__ca_round *d, void **all)
{
    void *p[] = {d->par_off, d->par,     d->comm,     d->cred,     d->ch_off,  d->ch,
                 d->topo,    d->tpos,    d->lat,      d->lvl,      d->s_left,  d->s_non,
                 d->s_ord,   d->bdev,    d->left,     d->credit,   d->non,     d->ord,
                 d->tdev,    d->best,    d->nb,       d->pst,      d->in_st,   d->out_st,
                 d->in_comm, d->in_cred, d->out_comm, d->in_list,  d->out_list, d->defer,
                 d->queue,   d->desc,    d->in_u,     d->nseen,    d->cu,      d->dist,
                 d->chg,     d->bbest,   d->by_best,  d->heap,     d->hst,     d->vst,
                 d->r_left,  d->r_non,   d->r_ord,    d->f0,       d->tail0,   d->bextra,
                 d->lack,    d->rank0,   d->evr,      d->evt,      d->wr.dl,   d->wr.dn,
                 d->wr.ox,   d->wt.dl,   d->wt.dn,    d->wt.ox,    d->wr.mk,   d->wt.mk,
                 d->wr.sd,   d->wt.sd,   d->tst,      d->any_next, d->rng_lo,  d->rng_hi,
                 d->lv_off,  d->lv_pos,  d->cand,     d->cand_nb};
    _Static_assert(sizeof p / sizeof *p <= ROUND_PARTS, "ROUND_PARTS too small");
    memcpy(all, p, sizeof p);
    return sizeof p / sizeof *p;
}

int partd__ca_round_alloc(partd__ca_state *st)
{
    partd__ca_round *d = &st->rd;
    size_t R = (size_t)st->g->n_ops + 2, N = (size_t)st->g->n_nodes + 1;
    size_t D = st->req->n_devices + 1, E = st->g->in_off[st->g->n_nodes] + 1;
    d->D = st->req->n_devices;
    d->ch_off = malloc((R + 1) * sizeof *d->ch_off);
    d->ch = malloc(E * sizeof *d->ch);
    d->topo = malloc(R * sizeof *d->topo);
    d->tpos = malloc(R * sizeof *d->tpos);
    d->lat = malloc(R * sizeof *d->lat);
    d->lvl = malloc(R * sizeof *d->lvl);
    d->s_left = malloc(R * D * sizeof *d->s_left);
    d->s_non = malloc(R * D * sizeof *d->s_non);
    d->s_ord = malloc(R * D * sizeof *d->s_ord);
    d->bdev = malloc(R * sizeof *d->bdev);
    d->left = malloc(D * sizeof *d->left);
    d->credit = calloc(D, sizeof *d->credit);
    d->non = malloc(D * sizeof *d->non);
    d->r_left = malloc(D * sizeof *d->r_left);
    d->r_non = malloc(D * sizeof *d->r_non);
    d->r_ord = malloc(D * sizeof *d->r_ord);
    d->ord = malloc(D * sizeof *d->ord);
    d->tdev = malloc(R * sizeof *d->tdev);
    d->tst = calloc(R, sizeof *d->tst);
    d->any_next = malloc((R + 1) * sizeof *d->any_next);
    for (d->rng_leaves = 1; d->rng_leaves < R; d->rng_leaves *= 2)
        ;
    /* 32 bytes per device and leaf, as the snapshots' 24 per device and
     * position: the pass's memory stays linear in devices x partitions */
    d->rng_lo = malloc(2 * D * d->rng_leaves * sizeof *d->rng_lo);
    d->rng_hi = malloc(2 * D * d->rng_leaves * sizeof *d->rng_hi);
    d->bextra = malloc(R * sizeof *d->bextra);
    d->lack = malloc(R * D * sizeof *d->lack);
    d->rank0 = malloc(D * sizeof *d->rank0);
    d->evr = calloc(R, sizeof *d->evr);
    d->evt = calloc(R, sizeof *d->evt);
    partd__ca_walk *ws[2] = {&d->wr, &d->wt};
    for (int w = 0; w < 2; w++) {
        ws[w]->dl = malloc(D * sizeof *ws[w]->dl);
        ws[w]->dn = malloc(D * sizeof *ws[w]->dn);
        ws[w]->ox = malloc(D * sizeof *ws[w]->ox);
        ws[w]->mk = malloc(2 * R * sizeof *ws[w]->mk);
        ws[w]->sd = malloc(D * sizeof *ws[w]->sd);
    }
    d->best = malloc(R * sizeof *d->best);
    d->nb = calloc(R, sizeof *d->nb);
    d->lv_off = malloc((R + 2) * sizeof *d->lv_off);
    d->lv_pos = malloc(R * sizeof *d->lv_pos);
    d->cand = malloc(R * sizeof *d->cand);
    d->cand_nb = malloc(R * sizeof *d->cand_nb);
    d->pst = calloc(R, sizeof *d->pst);
    d->in_st = calloc(R, sizeof *d->in_st);
    d->out_st = calloc(R, sizeof *d->out_st);
    d->in_comm = malloc(R * sizeof *d->in_comm);
    d->in_cred = malloc(R * sizeof *d->in_cred);
    d->out_comm = malloc(R * sizeof *d->out_comm);
    d->in_list = malloc(R * sizeof *d->in_list);
    d->out_list = malloc(R * sizeof *d->out_list);
    d->defer = malloc(R * sizeof *d->defer);
    d->queue = malloc(R * sizeof *d->queue);
    d->desc = calloc(R, sizeof *d->desc);
    d->chg = malloc(R * sizeof *d->chg);
    d->bbest = malloc(R * sizeof *d->bbest);
    d->f0 = malloc(R * sizeof *d->f0);
    d->tail0 = malloc(R * sizeof *d->tail0);
    d->by_best = malloc(R * sizeof *d->by_best);
    d->heap = malloc(R * sizeof *d->heap);
    d->hst = calloc(R, sizeof *d->hst);
    d->vst = calloc(R, sizeof *d->vst);
    d->in_u = calloc(N, sizeof *d->in_u);
    d->nseen = calloc(N, sizeof *d->nseen);
    d->cu = malloc(N * sizeof *d->cu);
    d->dist = malloc(N * sizeof *d->dist);
    void *parts[ROUND_PARTS];
    size_t n = round_parts(d, parts);
    for (size_t x = ROUND_BUILT; x < n; x++)
        if (!parts[x])
            return PARTD_ENOMEM;
    return PARTD_OK;
}

void partd__ca_round_free(partd__ca_round *d)
{
    void *parts[ROUND_PARTS];
    size_t n = round_parts(d, parts);
    for (size_t x = 0; x < n; x++)
        free(parts[x]);
}
/* Python's sorted() by memory left, stable: partd__fx_map's step. Only
 * the start needs it whole; after a step the one device that changed moves
 * (take), and the order stays what a fresh stable sort gives. */
static void sort_devices(uint32_t D, const int64_t *left, uint32_t *ord)
{
    for (uint32_t i = 1; i < D; i++) {
        uint32_t dv = ord[i], j = i;
        while (j > 0 && left[ord[j - 1]] > left[dv]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = dv;
    }
}

/* Device c's memory left went down by `extra` (up, were it negative): it
 * moves past the strictly larger (smaller) ones, as a stable sort puts it. */
void partd__ca_round_take(uint32_t D, int64_t *left, uint32_t *ord, uint32_t c, int64_t extra)
{
    uint32_t at = 0;
    while (ord[at] != c)
        at++;
    left[c] -= extra;
    while (at > 0 && left[ord[at - 1]] > left[c]) {
        ord[at] = ord[at - 1];
        ord[--at] = c;
    }
    while (at + 1 < D && left[ord[at + 1]] < left[c]) {
        ord[at] = ord[at + 1];
        ord[++at] = c;
    }
}

/* The first device in ord with room for a partition of `used` bytes less
 * the credit of its inputs there (partd__fx_map's choice), or PARTD_NONE;
 * *extra receives what it takes. */
uint32_t partd__ca_round_choose(uint32_t D, const int64_t *left, const uint32_t *non,
                                const uint32_t *ord, const int64_t *credit, int64_t used,
                                int64_t *extra)
{
    for (uint32_t k = 0; k < D; k++) {
        uint32_t dv = ord[k];
        *extra = non[dv] ? used - credit[dv] : used;
        if (*extra < left[dv])
            return dv;
    }
    return PARTD_NONE;
}


#define RNG_INF (INT64_MAX / 4)

/* The shifts of memory left (dl per device, the partition's inputs where
 * they were) under which the mapping's step at position k still chooses c
 * with the same bytes: c keeps room, and every other device either still
 * lacks it or stays strictly above c in memory left, so after c in any
 * order sorted by it. Sufficient ranges per device, [lo, hi], with the
 * gaps to the devices with room split evenly between c and each; a device
 * with room tying c (a stable sort's choice) makes every shift suspect. */
static void build_ranges(partd__ca_round *d, uint32_t k, const int64_t *left,
                         const int64_t *credit, int64_t used, uint32_t c)
{
    uint32_t D = d->D, L = d->rng_leaves;
    int64_t h = RNG_INF;
    int any = 0;
    for (uint32_t dv = 0; dv < D; dv++) {
        int64_t lack = used - credit[dv] - left[dv], gap = left[dv] - left[c];
        if (dv != c && lack < 0) {
            if (gap < 1)
                any = 1;
            else if ((gap - 1) / 2 < h)
                h = (gap - 1) / 2;
        }
    }
    d->any_next[k] = any ? k : PARTD_NONE;
    for (uint32_t dv = 0; dv < D; dv++) {
        int64_t lack = used - credit[dv] - left[dv], gap = left[dv] - left[c];
        int64_t lo = -RNG_INF, hi = RNG_INF;
        if (dv == c) {
            lo = lack + 1;
            hi = h;
        } else if (lack >= 0) {
            hi = lack; /* still lacking */
        } else if (gap >= 1) {
            lo = -(gap - 1 - h);
        }
        d->rng_lo[(size_t)dv * 2 * L + L + k] = -lo;
        d->rng_hi[(size_t)dv * 2 * L + L + k] = hi;
    }
}

/* any_next from each position on, and the range trees over the positions
 * the fresh mapping placed (the rest never looked at: a walk stops where
 * the mapping does). */
static void build_range_trees(partd__ca_round *d)
{
    uint32_t L = d->rng_leaves, P = d->P;
    d->any_next[P] = P;
    for (uint32_t k = P; k-- > 0;)
        if (k >= d->fail_at || d->any_next[k] == PARTD_NONE)
            d->any_next[k] = d->any_next[k + 1];
    for (uint32_t dv = 0; dv < d->D; dv++) {
        int64_t *ts[2] = {d->rng_lo + (size_t)dv * 2 * L, d->rng_hi + (size_t)dv * 2 * L};
        for (int h = 0; h < 2; h++) {
            int64_t *t = ts[h];
            for (uint32_t k = d->fail_at; k < L; k++)
                t[L + k] = RNG_INF;
            for (uint32_t x = L; x-- > 1;)
                t[x] = t[2 * x] < t[2 * x + 1] ? t[2 * x] : t[2 * x + 1];
        }
    }
}

/* lv_off, lv_pos: the positions of each bfs level, in order (a level is
 * below P: a longest path visits each partition once) */
static void build_levels(partd__ca_round *d)
{
    uint32_t P = d->P;
    memset(d->lv_off, 0, ((size_t)P + 2) * sizeof *d->lv_off);
    for (uint32_t k = 0; k < P; k++)
        d->lv_off[d->lvl[k] + 2]++;
    for (uint32_t l = 2; l <= P + 1; l++)
        d->lv_off[l] += d->lv_off[l - 1];
    for (uint32_t k = 0; k < P; k++)
        d->lv_pos[d->lv_off[d->lvl[k] + 1]++] = k;
}

/* Positions by bbest, largest first (merge sort; tmp as large). */
static void sort_by_best(uint32_t *a, uint32_t n, const double *key, uint32_t *tmp)
{
    for (uint32_t w = 1; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t x = lo, y = mid, k = lo;
            while (x < mid || y < hi)
                tmp[k++] = y >= hi || (x < mid && key[a[x]] >= key[a[y]]) ? a[x++] : a[y++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

/* The fresh mapping's cost at each position (bbest): a try recomputes only
 * the positions whose figure it changes. */
static void build_fresh_costs(partd__ca_state *st)
{
    partd__ca_round *d = &st->rd;
    double rate = st->req->options.transfer_bytes_per_sec;
    if (d->fail_at < d->P)
        return;
    for (uint32_t k = 0; k < d->P; k++) {
        uint32_t z = d->topo[k];
        double in = 0;
        for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1]; e++) {
            uint32_t q = d->par[e];
            double comm = d->bdev[q] == d->bdev[z] ? 0.0 : (double)d->comm[e] / rate;
            double x = d->bbest[q] + comm;
            if (x > in)
                in = x;
        }
        d->bbest[z] = in + d->lat[z];
    }
    for (uint32_t k = 0; k < d->P; k++)
        d->by_best[k] = k;
    sort_by_best(d->by_best, d->P, d->bbest, d->queue);
}

int partd__ca_round_build(partd__ca_state *st)
{
    const partd_graph *g = st->g;
    partd__ca_round *d = &st->rd;
    uint32_t P = st->n_order, D = d->D;
    d->P = P;
    free(d->par_off);
    free(d->par);
    free(d->comm);
    free(d->cred);
    d->par_off = d->par = NULL;
    d->comm = d->cred = NULL;
    partd__fx_layout l = {P, st->c_part_of, NULL, NULL};
    int rc = partd__fx_edges(st->req, &l, &d->par_off, &d->par, &d->comm);
    if (rc != PARTD_OK)
        return rc;
    uint32_t m = d->par_off[P];
    d->cred = calloc((size_t)m + 1, sizeof *d->cred);
    if (!d->cred)
        return PARTD_ENOMEM;
    /* credit per edge: every node edge counts (partd__fx_map); pst holds
     * the edge of each parent of q */
    for (uint32_t q = 0; q < P; q++) {
        for (uint32_t e = d->par_off[q]; e < d->par_off[q + 1]; e++)
            d->pst[d->par[e]] = e;
        const partd__ca_rec *r = &st->recs[st->order[q]];
        for (uint32_t i = 0; i < r->n; i++) {
            uint32_t v = r->ops[i];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k], p = st->c_part_of[u];
                if (p != PARTD_NONE && p != q)
                    d->cred[d->pst[p]] += partd__fx_output(g, u);
            }
        }
    }
    /* stamps start afresh each round: no token wraps */
    size_t R = (size_t)st->g->n_ops + 2, N = (size_t)g->n_nodes + 1;
    memset(d->pst, 0, R * sizeof *d->pst);
    memset(d->nb, 0, R * sizeof *d->nb);
    memset(d->in_st, 0, R * sizeof *d->in_st);
    memset(d->out_st, 0, R * sizeof *d->out_st);
    memset(d->desc, 0, R * sizeof *d->desc);
    memset(d->hst, 0, R * sizeof *d->hst);
    memset(d->vst, 0, R * sizeof *d->vst);
    memset(d->in_u, 0, N * sizeof *d->in_u);
    memset(d->nseen, 0, N * sizeof *d->nseen);
    memset(d->evr, 0, R * sizeof *d->evr);
    memset(d->evt, 0, R * sizeof *d->evt);
    memset(d->tst, 0, R * sizeof *d->tst);
    d->e_tok = 0;
    d->p_tok = d->nb_tok = d->u_tok = d->d_tok = d->n_tok = d->h_tok = 0;
    memset(d->ch_off, 0, ((size_t)P + 1) * sizeof *d->ch_off);
    for (uint32_t e = 0; e < m; e++)
        d->ch_off[d->par[e] + 1]++;
    for (uint32_t p = 0; p < P; p++)
        d->ch_off[p + 1] += d->ch_off[p];
    for (uint32_t q = 0; q < P; q++)
        for (uint32_t e = d->par_off[q]; e < d->par_off[q + 1]; e++)
            d->ch[d->ch_off[d->par[e]]++] = q;
    for (uint32_t p = P; p > 0; p--)
        d->ch_off[p] = d->ch_off[p - 1];
    d->ch_off[0] = 0;
    /* Kahn: indegree in tdev */
    uint32_t head = 0, tail = 0;
    for (uint32_t q = 0; q < P; q++) {
        d->tdev[q] = d->par_off[q + 1] - d->par_off[q];
        if (!d->tdev[q])
            d->topo[tail++] = q;
        d->lat[q] = st->recs[st->order[q]].lat;
        d->lvl[q] = st->level[st->order[q]];
    }
    while (head < tail) {
        uint32_t p = d->topo[head++];
        for (uint32_t k = d->ch_off[p]; k < d->ch_off[p + 1]; k++)
            if (--d->tdev[d->ch[k]] == 0)
                d->topo[tail++] = d->ch[k];
    }
    if (tail != P)
        return PARTD_EINTERNAL;
    for (uint32_t k = 0; k < P; k++)
        d->tpos[d->topo[k]] = k;
    /* a path's cost is at least its latencies: bounds that let a try stop
     * as soon as it cannot win */
    for (uint32_t k = 0; k < P; k++) {
        uint32_t z = d->topo[k];
        double in = 0;
        for (uint32_t e = d->par_off[z]; e < d->par_off[z + 1]; e++)
            if (d->f0[d->par[e]] > in)
                in = d->f0[d->par[e]];
        d->f0[z] = in + d->lat[z];
    }
    for (uint32_t k = P; k-- > 0;) {
        uint32_t z = d->topo[k];
        double out = 0;
        for (uint32_t e = d->ch_off[z]; e < d->ch_off[z + 1]; e++) {
            uint32_t c = d->ch[e];
            if (d->tail0[c] + d->lat[c] > out)
                out = d->tail0[c] + d->lat[c];
        }
        d->tail0[z] = out;
    }
    /* the fresh mapping */
    for (uint32_t dv = 0; dv < D; dv++) {
        d->left[dv] = st->req->devices[dv].memory_bytes;
        d->ord[dv] = dv;
        d->non[dv] = 0;
    }
    sort_devices(D, d->left, d->ord);
    for (uint32_t k = 0; k < D; k++)
        d->rank0[d->ord[k]] = k;
    d->fail_at = P;
    for (uint32_t k = 0; k < P; k++)
        d->bdev[k] = PARTD_NONE;
    for (uint32_t k = 0; k < P; k++) {
        memcpy(d->s_left + (size_t)k * D, d->left, D * sizeof *d->left);
        memcpy(d->s_non + (size_t)k * D, d->non, D * sizeof *d->non);
        memcpy(d->s_ord + (size_t)k * D, d->ord, D * sizeof *d->ord);
        for (uint32_t e = d->par_off[k]; e < d->par_off[k + 1]; e++)
            if (d->par[e] < k)
                d->credit[d->bdev[d->par[e]]] += d->cred[e];
        int64_t extra = 0;
        uint32_t c =
            partd__ca_round_choose(D, d->left, d->non, d->ord, d->credit, st->c_used[k], &extra);
        if (c == PARTD_NONE) {
            for (uint32_t e = d->par_off[k]; e < d->par_off[k + 1]; e++)
                if (d->par[e] < k)
                    d->credit[d->bdev[d->par[e]]] = 0;
            d->fail_at = k;
            break;
        }
        d->bdev[k] = c;
        d->bextra[k] = extra;
        build_ranges(d, k, d->left, d->credit, st->c_used[k], c);
        for (uint32_t dv = 0; dv < D; dv++)
            d->lack[(size_t)k * D + dv] = st->c_used[k] - d->credit[dv] - d->left[dv];
        for (uint32_t e = d->par_off[k]; e < d->par_off[k + 1]; e++)
            if (d->par[e] < k)
                d->credit[d->bdev[d->par[e]]] = 0;
        partd__ca_round_take(D, d->left, d->ord, c, extra);
        d->non[c]++;
    }
    build_range_trees(d);
    build_levels(d);
    if (d->fail_at == P) {
        memcpy(d->s_left + (size_t)P * D, d->left, D * sizeof *d->left);
        memcpy(d->s_non + (size_t)P * D, d->non, D * sizeof *d->non);
        memcpy(d->s_ord + (size_t)P * D, d->ord, D * sizeof *d->ord);
    }
    build_fresh_costs(st);
    return PARTD_OK;
}
