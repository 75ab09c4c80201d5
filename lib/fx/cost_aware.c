/*
 * cost_aware.c - FX's cost_aware mode; see cost_aware.h.
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

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "partd/partd.h"
#include "size_based.h"

typedef struct rec {
    uint32_t *ops;         /* in node order */
    uint32_t n;
    int64_t used;
    double lat;            /* critical path of node latencies (seconds) */
} rec;

/* One round's partitions' DAG, by position in the list, the mapping of the
 * list taken fresh (the state before each position: a try keeps the
 * mapping of the partitions before the first one it removes), and the
 * scratch of a try. Sized once for the largest list. */
typedef struct round_data {
    uint32_t P, D;
    uint32_t *par_off, *par; /* parents of each position (CSR) */
    int64_t *comm, *cred;    /* per parent edge: FX's comm_size; the mapping's credit */
    uint32_t *ch_off, *ch;   /* children of each position (CSR) */
    uint32_t *topo, *tpos;
    double *lat;
    uint32_t *lvl;
    int64_t *s_left;         /* P x D snapshots */
    uint32_t *s_non, *s_ord;
    uint32_t *bdev;          /* fresh mapping; positions from fail_at on have none */
    uint32_t fail_at;
    /* a try */
    int64_t *left, *credit;
    uint32_t *non, *ord, *tdev;
    int64_t *r_left;         /* the mapping with the first of the pairs removed */
    uint32_t *r_non, *r_ord, r_at, r_nchg;
    int r_ok;
    double *best;
    uint32_t *nb, nb_tok;    /* positions next to the first of a pair */
    uint32_t *pst, p_tok;    /* per-position stamps */
    uint32_t *in_st, *out_st, u_tok;
    int64_t *in_comm, *in_cred, *out_comm;
    uint32_t *in_list, *out_list, n_in, n_out;
    uint32_t *defer, *queue, *desc, d_tok;
    uint32_t *chg, n_chg;    /* positions the try's mapping moved */
    double *bbest;           /* cost at each position under the fresh mapping */
    double *f0, *tail0;      /* longest path to each position, and on from its
                              * children, with no transfer time: bounds */
    uint32_t *by_best;       /* positions by bbest, largest first */
    uint64_t *heap;
    uint32_t n_heap, *hst, *vst, h_tok;
    uint32_t *in_u, *nseen, n_tok; /* per node */
    uint32_t *cu, n_cu;      /* constants the union reads */
    double *dist;            /* per node */
} round_data;

typedef struct state {
    const partd_request *req;
    const partd_graph *g;
    rec *recs;
    uint32_t n_recs;
    uint32_t *part_of;     /* op -> rec */
    uint32_t *order;       /* FX's self.partitions: rec ids */
    uint32_t n_order;
    uint32_t *level;       /* per rec */
    uint32_t *dev;         /* per rec: device of the last mapping, or PARTD_NONE */
    uint32_t *stamp;       /* per node (unions) */
    uint32_t token;
    /* a candidate list */
    uint32_t *pos;         /* rec -> index in the candidate */
    uint32_t *c_part_of;
    int64_t *c_used;
    uint32_t *c_dev, *c_dev_off, *c_dev_idx;
    round_data rd;
} state;

static int64_t union_bytes(state *st, const rec *a, const rec *b)
{
    const partd_graph *g = st->g;
    uint32_t t = ++st->token;
    const rec *rs[2] = {a, b};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < rs[k]->n; i++)
            st->stamp[rs[k]->ops[i]] = t;
    int64_t bytes = 0;
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < rs[k]->n; i++) {
            uint32_t v = rs[k]->ops[i];
            bytes += partd__fx_total(g, v);
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (st->stamp[u] == t)
                    continue;
                if (partd__fx_is_constant(g, u)) {
                    st->stamp[u] = t;
                    bytes += partd__fx_total(g, u);
                } else {
                    bytes += partd__fx_output(g, u);
                }
            }
        }
    return bytes;
}

/* Levels (get_bfs_level_partition) of the list. */
static int analyse(state *st)
{
    const partd_graph *g = st->g;
    uint32_t R = st->n_recs;
    size_t E = g->in_off[g->n_nodes];
    uint32_t *indeg = calloc((size_t)R + 1, sizeof *indeg);
    uint32_t *off = calloc((size_t)R + 2, sizeof *off);
    uint32_t *queue = malloc(((size_t)R + 1) * sizeof *queue);
    uint32_t *ch = malloc((E + 1) * sizeof *ch);
    int rc = PARTD_ENOMEM;
    if (!indeg || !off || !queue || !ch)
        goto out;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            uint32_t r = st->part_of[v];
            if (r == PARTD_NONE)
                continue;
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t q = st->part_of[g->in_idx[k]];
                if (q == PARTD_NONE || q == r)
                    continue;
                if (pass == 0) {
                    off[q + 2]++;
                } else {
                    ch[off[q + 1]++] = r;
                    indeg[r]++;
                }
            }
        }
        if (pass == 0)
            for (uint32_t i = 0; i < R; i++)
                off[i + 2] += off[i + 1];
    }
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < st->n_order; i++) {
        uint32_t r = st->order[i];
        st->level[r] = 0;
        if (!indeg[r])
            queue[tail++] = r;
    }
    while (head < tail) {
        uint32_t r = queue[head++];
        for (uint32_t j = off[r]; j < off[r + 1]; j++) {
            uint32_t c = ch[j];
            if (st->level[c] < st->level[r] + 1)
                st->level[c] = st->level[r] + 1;
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    rc = tail == st->n_order ? PARTD_OK : PARTD_EINTERNAL; /* merges never close a cycle */
out:
    free(indeg);
    free(off);
    free(queue);
    free(ch);
    return rc;
}

/* The cost of the list with recs a and b merged (a == b: the list as it
 * is, with the devices of st->dev); INFINITY-like: returns 0 and leaves
 * *cost when the merge closes a cycle or the list does not map. With map
 * set, the candidate's devices are kept in st->c_dev. */
static int evaluate(state *st, uint32_t a, uint32_t b, int64_t merged_used, int remap,
                    double *cost, int *ok)
{
    const partd_graph *g = st->g;
    uint32_t k = 0;
    *ok = 0;
    for (uint32_t i = 0; i < st->n_order; i++) {
        uint32_t r = st->order[i];
        if (r == a || r == b)
            continue;
        st->pos[r] = k;
        st->c_used[k++] = st->recs[r].used;
    }
    if (a != b) {
        st->pos[a] = st->pos[b] = k;
        st->c_used[k++] = merged_used;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++)
        st->c_part_of[v] = st->part_of[v] == PARTD_NONE ? PARTD_NONE : st->pos[st->part_of[v]];
    partd__fx_layout l = {k, st->c_part_of, st->c_dev_off, st->c_dev_idx};
    if (remap) {
        int found = partd__fx_map(st->req, &l, st->c_used, st->c_dev);
        if (found < 0)
            return PARTD_ENOMEM;
        if (!found)
            return PARTD_OK;
    } else {
        for (uint32_t i = 0; i < st->n_order; i++)
            st->c_dev[st->pos[st->order[i]]] = st->dev[st->order[i]];
    }
    uint32_t at = 0;
    for (uint32_t p = 0; p < k; p++) {
        st->c_dev_off[p] = at;
        if (st->c_dev[p] != PARTD_NONE)
            st->c_dev_idx[at++] = st->c_dev[p];
    }
    st->c_dev_off[k] = at;
    uint32_t cycle;
    int rc = partd__fx_latency(st->req, &l, cost, &cycle);
    if (rc == PARTD_EINFEASIBLE)
        return PARTD_OK;
    *ok = rc == PARTD_OK;
    return rc;
}

/* The critical path of node latencies over the ops of a and b (b may be
 * NULL), as partd__fx_latency takes it: node order, top down. */
static double union_lat(state *st, const rec *a, const rec *b)
{
    const partd_graph *g = st->g;
    round_data *d = &st->rd;
    uint32_t t = ++d->n_tok;
    uint32_t nb = b ? b->n : 0;
    for (uint32_t i = 0; i < a->n; i++)
        d->in_u[a->ops[i]] = t;
    for (uint32_t i = 0; i < nb; i++)
        d->in_u[b->ops[i]] = t;
    double lat = 0;
    uint32_t i = 0, k = 0;
    while (i < a->n || k < nb) {
        uint32_t v = k >= nb || (i < a->n && a->ops[i] < b->ops[k]) ? a->ops[i++] : b->ops[k++];
        double top = 0;
        for (uint32_t e = g->in_off[v]; e < g->in_off[v + 1]; e++) {
            uint32_t u = g->in_idx[e];
            if (d->in_u[u] == t && d->dist[u] > top)
                top = d->dist[u];
        }
        d->dist[v] = top + partd__fx_node_sec(g, v);
        if (d->dist[v] > lat)
            lat = d->dist[v];
    }
    return lat;
}

static int alloc_round(state *st)
{
    round_data *d = &st->rd;
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
    d->best = malloc(R * sizeof *d->best);
    d->nb = calloc(R, sizeof *d->nb);
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
    if (!d->ch_off || !d->ch || !d->topo || !d->tpos || !d->lat || !d->lvl || !d->s_left ||
        !d->s_non || !d->s_ord || !d->bdev || !d->left || !d->credit || !d->non || !d->ord ||
        !d->r_left || !d->r_non || !d->r_ord ||
        !d->tdev || !d->best || !d->nb || !d->pst || !d->in_st || !d->out_st || !d->in_comm ||
        !d->in_cred || !d->out_comm || !d->in_list || !d->out_list || !d->defer || !d->queue ||
        !d->desc || !d->chg || !d->bbest || !d->f0 || !d->tail0 || !d->by_best || !d->heap || !d->hst || !d->vst ||
        !d->in_u || !d->nseen || !d->cu || !d->dist)
        return PARTD_ENOMEM;
    return PARTD_OK;
}

static void free_round(round_data *d)
{
    void *all[] = {d->par_off, d->par,   d->comm,    d->cred,    d->ch_off,   d->ch,
                   d->topo,    d->tpos,  d->lat,     d->lvl,     d->s_left,   d->s_non,
                   d->s_ord,   d->bdev,  d->left,    d->credit,  d->non,      d->ord,
                   d->tdev,    d->best,  d->nb,      d->pst,     d->in_st,    d->out_st,
                   d->in_comm, d->in_cred, d->out_comm, d->in_list, d->out_list, d->defer,
                   d->queue,   d->desc,  d->in_u,    d->nseen,   d->cu,       d->dist,
                   d->chg,     d->bbest, d->by_best, d->heap,    d->hst,      d->vst,
                   d->r_left,  d->r_non, d->r_ord,   d->f0,      d->tail0};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
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
static void take(uint32_t D, int64_t *left, uint32_t *ord, uint32_t c, int64_t extra)
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
static uint32_t choose(uint32_t D, const int64_t *left, const uint32_t *non, const uint32_t *ord,
                       const int64_t *credit, int64_t used, int64_t *extra)
{
    for (uint32_t k = 0; k < D; k++) {
        uint32_t dv = ord[k];
        *extra = non[dv] ? used - credit[dv] : used;
        if (*extra < left[dv])
            return dv;
    }
    return PARTD_NONE;
}

/* The round's DAG by position (st->pos, c_part_of and c_used as the
 * baseline's evaluate left them), its topological order and the fresh
 * mapping of the list with the state before each position. */
static void build_fresh_costs(state *st);

/* Whether a path costing `head` up to a partition, then `tail` in
 * latencies alone, costs more than `bound` for certain: the margin covers
 * the rounding of sums taken in another order than FX's (1e-9 relative is
 * far above a million roundings). */
static inline int exceeds(double head, double tail, double bound)
{
    return (head + tail) * (1.0 - 1e-9) > bound;
}

static int build_round(state *st)
{
    const partd_graph *g = st->g;
    round_data *d = &st->rd;
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
        const rec *r = &st->recs[st->order[q]];
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
        uint32_t c = choose(D, d->left, d->non, d->ord, d->credit, st->c_used[k], &extra);
        for (uint32_t e = d->par_off[k]; e < d->par_off[k + 1]; e++)
            if (d->par[e] < k)
                d->credit[d->bdev[d->par[e]]] = 0;
        if (c == PARTD_NONE) {
            d->fail_at = k;
            break;
        }
        d->bdev[k] = c;
        take(D, d->left, d->ord, c, extra);
        d->non[c]++;
    }
    build_fresh_costs(st);
    return PARTD_OK;
}

/* The union of the partitions at positions i and j: the bytes of its edges
 * (as build_edges counts them, placeholders and get_attrs both ends read
 * included) and the credit of its inputs. */
static void scan_union(state *st, uint32_t i, uint32_t j)
{
    const partd_graph *g = st->g;
    round_data *d = &st->rd;
    const rec *rs[2] = {&st->recs[st->order[i]], &st->recs[st->order[j]]};
    uint32_t t = ++d->n_tok, tu = ++d->u_tok;
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++)
            d->in_u[rs[h]->ops[x]] = t;
    d->n_in = d->n_out = d->n_cu = 0;
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++) {
            uint32_t v = rs[h]->ops[x];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k];
                if (d->in_u[u] == t)
                    continue;
                uint32_t q = st->c_part_of[u];
                if (q == PARTD_NONE) {
                    if (partd__fx_is_constant(g, u) && d->nseen[u] != t) {
                        d->nseen[u] = t;
                        d->cu[d->n_cu++] = u;
                    }
                    continue;
                }
                if (d->in_st[q] != tu) {
                    d->in_st[q] = tu;
                    d->in_list[d->n_in++] = q;
                    d->in_comm[q] = d->in_cred[q] = 0;
                }
                d->in_cred[q] += partd__fx_output(g, u);
                if (d->nseen[u] != t) {
                    d->nseen[u] = t;
                    d->in_comm[q] += partd__fx_output(g, u);
                }
            }
        }
    for (int h = 0; h < 2; h++)
        for (uint32_t x = 0; x < rs[h]->n; x++) {
            uint32_t v = rs[h]->ops[x], tt = ++d->p_tok;
            for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
                uint32_t w = g->user_idx[k];
                uint32_t q = st->c_part_of[w];
                if (d->in_u[w] == t || q == PARTD_NONE)
                    continue;
                if (d->out_st[q] != tu) {
                    d->out_st[q] = tu;
                    d->out_list[d->n_out++] = q;
                    d->out_comm[q] = 0;
                }
                if (d->pst[q] != tt) {
                    d->pst[q] = tt;
                    d->out_comm[q] += partd__fx_output(g, v);
                }
            }
        }
    /* a placeholder or get_attr the union and a neighbour both read */
    for (int side = 0; side < 2; side++)
        for (uint32_t c = 0; c < d->n_cu; c++) {
            uint32_t x = d->cu[c], tt = ++d->p_tok;
            for (uint32_t k = g->user_off[x]; k < g->user_off[x + 1]; k++) {
                uint32_t q = st->c_part_of[g->user_idx[k]];
                if (q == PARTD_NONE || q == i || q == j || d->pst[q] == tt)
                    continue;
                if (side == 0 && d->in_st[q] == tu) {
                    d->pst[q] = tt;
                    d->in_comm[q] += partd__fx_output(g, x);
                } else if (side == 1 && d->out_st[q] == tu) {
                    d->pst[q] = tt;
                    d->out_comm[q] += partd__fx_output(g, x);
                }
            }
        }
}

/* Whether merging positions i and j closes a cycle: a path of two edges or
 * more from the one to the other. Such a path climbs at least two bfs
 * levels, and every partition on it lies strictly between the two. */
static int closes_cycle(round_data *d, uint32_t i, uint32_t j)
{
    uint32_t x = d->lvl[i] < d->lvl[j] ? i : j, y = x == i ? j : i;
    if (d->lvl[y] < d->lvl[x] + 2)
        return 0;
    uint32_t t = ++d->d_tok, head = 0, tail = 0;
    for (uint32_t k = d->ch_off[x]; k < d->ch_off[x + 1]; k++) {
        uint32_t c = d->ch[k];
        if (c != y && d->lvl[c] < d->lvl[y] && d->desc[c] != t) {
            d->desc[c] = t;
            d->queue[tail++] = c;
        }
    }
    while (head < tail) {
        uint32_t z = d->queue[head++];
        for (uint32_t k = d->ch_off[z]; k < d->ch_off[z + 1]; k++) {
            uint32_t c = d->ch[k];
            if (c == y)
                return 1;
            if (d->lvl[c] < d->lvl[y] && d->desc[c] != t) {
                d->desc[c] = t;
                d->queue[tail++] = c;
            }
        }
    }
    return 0;
}

/* One position k of a try's mapping (positions i and j removed; j is
 * PARTD_NONE while only i is): partd__fx_map's step on left, non, ord. */
static uint32_t map_step(state *st, int64_t *left, uint32_t *non, uint32_t *ord, uint32_t i,
                         uint32_t j, uint32_t k)
{
    round_data *d = &st->rd;
    uint32_t lo = d->par_off[k], hi = d->par_off[k + 1];
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < i)
            d->credit[d->bdev[q]] += d->cred[e];
        else if (q < k && q != i && q != j)
            d->credit[d->tdev[q]] += d->cred[e];
    }
    int64_t extra = 0;
    uint32_t c = choose(d->D, left, non, ord, d->credit, st->c_used[k], &extra);
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t q = d->par[e];
        if (q < i)
            d->credit[d->bdev[q]] = 0;
        else if (q < k && q != i && q != j)
            d->credit[d->tdev[q]] = 0;
    }
    if (c == PARTD_NONE)
        return c;
    d->tdev[k] = c;
    if (c != d->bdev[k])
        d->chg[d->n_chg++] = k;
    take(d->D, left, ord, c, extra);
    non[c]++;
    return c;
}

/* Start the tries whose first partition is at position i: the mapping
 * with i removed, kept as far as the next try's second partition (the
 * tries of one i share it up to there). */
static void start_first(state *st, uint32_t i)
{
    round_data *d = &st->rd;
    uint32_t D = d->D;
    d->r_at = i + 1;
    d->r_ok = i <= d->fail_at;
    if (!d->r_ok)
        return;
    memcpy(d->r_left, d->s_left + (size_t)i * D, D * sizeof *d->r_left);
    memcpy(d->r_non, d->s_non + (size_t)i * D, D * sizeof *d->r_non);
    memcpy(d->r_ord, d->s_ord + (size_t)i * D, D * sizeof *d->r_ord);
    d->n_chg = d->r_nchg = 0;
}

/* FX's mapping of the list with positions i < j removed and their union
 * (used bytes) last: the shared mapping with i removed advanced to j, then
 * the rest. Returns the union's device, or PARTD_NONE when some partition
 * finds none. */
static uint32_t try_map(state *st, uint32_t i, uint32_t j, int64_t used)
{
    round_data *d = &st->rd;
    uint32_t D = d->D, P = d->P;
    d->n_chg = d->r_nchg;
    while (d->r_ok && d->r_at < j) {
        d->r_ok = map_step(st, d->r_left, d->r_non, d->r_ord, i, PARTD_NONE, d->r_at) !=
                  PARTD_NONE;
        d->r_at++;
    }
    d->r_nchg = d->n_chg;
    if (!d->r_ok)
        return PARTD_NONE;
    memcpy(d->left, d->r_left, D * sizeof *d->left);
    memcpy(d->non, d->r_non, D * sizeof *d->non);
    memcpy(d->ord, d->r_ord, D * sizeof *d->ord);
    for (uint32_t k = j + 1; k < P; k++)
        if (map_step(st, d->left, d->non, d->ord, i, j, k) == PARTD_NONE)
            return PARTD_NONE;
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[q < i ? d->bdev[q] : d->tdev[q]] += d->in_cred[q];
    }
    int64_t extra = 0;
    uint32_t c = choose(D, d->left, d->non, d->ord, d->credit, used, &extra);
    for (uint32_t x = 0; x < d->n_in; x++) {
        uint32_t q = d->in_list[x];
        d->credit[q < i ? d->bdev[q] : d->tdev[q]] = 0;
    }
    return c;
}

static inline uint32_t try_dev(const round_data *d, uint32_t i, uint32_t q)
{
    return q < i ? d->bdev[q] : d->tdev[q];
}

/* The cost of one position z of the candidate (u: the union's slot). */
static double try_best(state *st, uint32_t i, uint32_t j, uint32_t z, uint32_t dev_u, double best_u)
{
    round_data *d = &st->rd;
    double rate = st->req->options.transfer_bytes_per_sec, in = 0;
    uint32_t dz = try_dev(d, i, z);
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
            dq = try_dev(d, i, q);
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
static double try_cost(state *st, uint32_t i, uint32_t j, uint32_t dev_u, double lat_u)
{
    round_data *d = &st->rd;
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
                uint32_t q = d->in_list[h], dq = try_dev(d, i, q);
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
static void build_fresh_costs(state *st)
{
    round_data *d = &st->rd;
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

static void heap_push(round_data *d, uint64_t key)
{
    uint32_t at = d->n_heap++;
    while (at > 0) {
        uint32_t up = (at - 1) / 2;
        if (d->heap[up] <= key)
            break;
        d->heap[at] = d->heap[up];
        at = up;
    }
    d->heap[at] = key;
}

static uint64_t heap_pop(round_data *d)
{
    uint64_t top = d->heap[0], last = d->heap[--d->n_heap];
    uint32_t at = 0, n = d->n_heap;
    if (!n)
        return top;
    for (;;) {
        uint32_t c = 2 * at + 1;
        if (c >= n)
            break;
        if (c + 1 < n && d->heap[c + 1] < d->heap[c])
            c++;
        if (d->heap[c] >= last)
            break;
        d->heap[at] = d->heap[c];
        at = c;
    }
    d->heap[at] = last;
    return top;
}

/* Queue position z (d->P: the union) once, in an order where every
 * partition follows its parents: topological, the union at the later y of
 * the pair's places, the earlier one's descendants between them after it.
 * The key names the position: tpos << 32 for most; tpos[y] << 32 for the
 * union (y itself is gone); tpos[y] << 32 | 1 + tpos for a late one. */
static void enqueue(round_data *d, uint32_t z, uint32_t y, uint32_t t)
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
    heap_push(d, key);
}

static uint32_t key_position(const round_data *d, uint64_t key, uint32_t y)
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
static double try_cost_lazy(state *st, uint32_t i, uint32_t j, uint32_t dev_u, double lat_u,
                            double tail_u, double bound, int adjacent)
{
    round_data *d = &st->rd;
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
        uint32_t z = key_position(d, heap_pop(d), y);
        if (z == d->P) {
            double in = 0;
            for (uint32_t h = 0; h < d->n_in; h++) {
                uint32_t q = d->in_list[h], dq = try_dev(d, i, q);
                double comm =
                    dq != PARTD_NONE && dq == dev_u ? 0.0 : (double)d->in_comm[q] / rate;
                double v = (d->vst[q] == t ? d->best[q] : d->bbest[q]) + comm;
                if (v > in)
                    in = v;
            }
            best_u = in + lat_u;
            if (best_u > worst)
                worst = best_u;
            if (exceeds(best_u, tail_u, bound))
                return HUGE_VAL;
            bounded = 1;
            continue;
        }
        double in = 0;
        uint32_t dz = try_dev(d, i, z);
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
                dq = try_dev(d, i, q);
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
        if (bounded && exceeds(nv, d->tail0[z], bound))
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

static int merge(state *st, uint32_t a, uint32_t b, int64_t used)
{
    rec *n = &st->recs[st->n_recs];
    const rec *ra = &st->recs[a], *rb = &st->recs[b];
    n->n = ra->n + rb->n;
    n->ops = malloc(n->n * sizeof *n->ops);
    if (!n->ops)
        return PARTD_ENOMEM;
    for (uint32_t i = 0, k = 0, at = 0; at < n->n; at++)
        n->ops[at] = k >= rb->n || (i < ra->n && ra->ops[i] < rb->ops[k]) ? ra->ops[i++]
                                                                           : rb->ops[k++];
    n->used = used;
    n->lat = union_lat(st, ra, rb);
    uint32_t r = st->n_recs++;
    for (uint32_t i = 0; i < n->n; i++)
        st->part_of[n->ops[i]] = r;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st->n_order; i++)
        if (st->order[i] != a && st->order[i] != b)
            st->order[k++] = st->order[i];
    st->order[k++] = r;
    st->n_order = k;
    st->dev[r] = PARTD_NONE;
    free(st->recs[a].ops);
    free(st->recs[b].ops);
    st->recs[a].ops = st->recs[b].ops = NULL;
    return PARTD_OK;
}

/* One round of search_combination; *merged set when a pair was merged. */
static int round_(state *st, const partd_cancel *cancel, int *merged)
{
    double cost;
    int ok, rc;
    *merged = 0;
    if ((rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &cost, &ok)) != PARTD_OK)
        return rc;
    if (!ok)
        return PARTD_EINTERNAL;
    if (st->n_order == 1)
        return PARTD_OK;
    if ((rc = build_round(st)) != PARTD_OK)
        return rc;
    round_data *d = &st->rd;
    uint32_t best_a = PARTD_NONE, best_b = PARTD_NONE;
    int64_t best_used = 0;
    for (uint32_t i = 0; i + 1 < d->P; i++) {
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            return rc;
        uint32_t tok = ++d->nb_tok;
        start_first(st, i);
        for (uint32_t e = d->par_off[i]; e < d->par_off[i + 1]; e++)
            d->nb[d->par[e]] = tok;
        for (uint32_t e = d->ch_off[i]; e < d->ch_off[i + 1]; e++)
            d->nb[d->ch[e]] = tok;
        for (uint32_t j = i + 1; j < d->P; j++) {
            uint32_t li = d->lvl[i], lj = d->lvl[j];
            int next = d->nb[j] == tok;
            if ((li > lj ? li - lj : lj - li) > 1 && !next)
                continue;
            if (next && closes_cycle(d, i, j))
                continue;
            uint32_t a = st->order[i], b = st->order[j];
            double lat_u = union_lat(st, &st->recs[a], &st->recs[b]);
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
            if (exceeds(head + lat_u, tail, cost))
                continue;
            int64_t used = union_bytes(st, &st->recs[a], &st->recs[b]);
            scan_union(st, i, j);
            uint32_t dev_u = try_map(st, i, j, used);
            if (dev_u == PARTD_NONE)
                continue;
            double c = d->fail_at == d->P ? try_cost_lazy(st, i, j, dev_u, lat_u, tail, cost, next)
                                          : try_cost(st, i, j, dev_u, lat_u);
            if (c <= cost) {
                cost = c;
                best_a = a;
                best_b = b;
                best_used = used;
            }
        }
    }
    if (best_a != PARTD_NONE) {
        if ((rc = merge(st, best_a, best_b, best_used)) != PARTD_OK)
            return rc;
        *merged = 1;
    }
    if ((rc = analyse(st)) != PARTD_OK)
        return rc;
    /* reset_partition_device, get_device_to_partitions_mapping on the list */
    if ((rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 1, &cost, &ok)) != PARTD_OK)
        return rc;
    int found = ok;
    if (!found) {
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

static int finish(state *st, const partd_cancel *cancel, partd_plan **out, partd_problem *pb)
{
    for (uint32_t i = 0; i < st->n_order; i++)
        if (st->dev[st->order[i]] == PARTD_NONE)
            return size_based_instead(st->req, cancel, out, pb);
    double sec;
    int ok;
    int rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &sec, &ok);
    if (rc == PARTD_OK && !ok)
        rc = PARTD_EINTERNAL;
    if (rc == PARTD_OK)
        rc = partd__fx_plan(st->req, PARTD_MODE_COST_AWARE,
                            &(partd__fx_layout){st->n_order, st->c_part_of, st->c_dev_off,
                                                st->c_dev_idx},
                            st->c_used, sec, out);
    return rc;
}

int partd_cost_aware(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                     partd_problem *problem)
{
    const partd_graph *g = &req->graph;
    int rc = partd__fx_whole(req, PARTD_MODE_COST_AWARE, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    state st = {0};
    st.req = req;
    st.g = g;
    size_t R = 2 * (size_t)g->n_ops + 2, N = (size_t)g->n_nodes + 1;
    st.recs = calloc(R, sizeof *st.recs);
    st.part_of = malloc(N * sizeof *st.part_of);
    st.order = malloc(R * sizeof *st.order);
    st.level = calloc(R, sizeof *st.level);
    st.dev = malloc(R * sizeof *st.dev);
    st.stamp = calloc(N, sizeof *st.stamp);
    st.pos = malloc(R * sizeof *st.pos);
    st.c_part_of = malloc(N * sizeof *st.c_part_of);
    st.c_used = malloc(R * sizeof *st.c_used);
    st.c_dev = malloc(R * sizeof *st.c_dev);
    st.c_dev_off = malloc((R + 1) * sizeof *st.c_dev_off);
    st.c_dev_idx = malloc(R * sizeof *st.c_dev_idx);
    rc = PARTD_ENOMEM;
    if (!st.recs || !st.part_of || !st.order || !st.level || !st.dev || !st.stamp || !st.pos ||
        !st.c_part_of || !st.c_used || !st.c_dev || !st.c_dev_off || !st.c_dev_idx ||
        alloc_round(&st) != PARTD_OK)
        goto out;
    /* create_single_node_partition for every operation, in node order */
    rc = PARTD_OK;
    for (uint32_t v = 0; v < g->n_nodes && rc == PARTD_OK; v++) {
        st.part_of[v] = PARTD_NONE;
        if (!partd_op_is_operation(g->op[v]))
            continue;
        rec *r = &st.recs[st.n_recs];
        r->ops = malloc(sizeof *r->ops);
        if (!r->ops) {
            rc = PARTD_ENOMEM;
            break;
        }
        r->ops[0] = v;
        r->n = 1;
        r->used = union_bytes(&st, r, &(rec){0});
        r->lat = partd__fx_node_sec(g, v);
        st.part_of[v] = st.n_recs;
        st.dev[st.n_recs] = PARTD_NONE;
        st.order[st.n_order++] = st.n_recs++;
    }
    if (rc == PARTD_OK)
        rc = analyse(&st);
    int merged = 1;
    while (rc == PARTD_OK && merged)
        rc = round_(&st, cancel, &merged);
    if (rc == PARTD_OK)
        rc = finish(&st, cancel, out, problem);
out:
    for (uint32_t r = 0; st.recs && r < st.n_recs; r++)
        free(st.recs[r].ops);
    free(st.recs);
    free(st.part_of);
    free(st.order);
    free(st.level);
    free(st.dev);
    free(st.stamp);
    free(st.pos);
    free(st.c_part_of);
    free(st.c_used);
    free(st.c_dev);
    free(st.c_dev_off);
    free(st.c_dev_idx);
    free_round(&st.rd);
    return rc;
}
