/*
 * training_stage.c - one stage's figures and its checkpoint candidates;
 * see training_stage.h.
 */
#include "training_stage.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/timeline.h"

uint32_t partd__training_checkpointed(const partd_training_model *md)
{
    return partd_timeline_checkpointed(md->opt->checkpoint, md->M);
}

void partd__training_fig(const partd_training_model *md, partd_pipeline_window *w, uint32_t a,
                         uint32_t b, partd_training_fig *out)
{
    const partd_pipeline_model *pl = &md->pl;
    int32_t lo = md->units[a].lo, hi = md->units[b - 1].hi;
    partd_pipeline_window_move(pl, w, lo, hi);
    out->a = a;
    out->b = b;
    out->f = md->pf[b] - md->pf[a];
    out->bw = md->pb[b] - md->pb[a];
    out->w = md->pw[b] - md->pw[a];
    out->in = w->r;
    out->params = w->p + pl->own_param[hi] - pl->own_param[lo];
    out->act = pl->act[hi] - pl->act[lo];
    out->live_out = md->live[b];
}

int64_t partd__training_params_union(const partd_training_model *md, const uint32_t *a,
                                     const uint32_t *b, uint32_t k, uint32_t *mark,
                                     uint32_t gen)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < k; i++) {
        sum += md->anon[b[i]] - md->anon[a[i]];
        for (uint32_t q = md->res_off[a[i]]; q < md->res_off[b[i]]; q++) {
            uint32_t x = md->res_idx[q];
            if (mark[x] != gen) {
                mark[x] = gen;
                sum += md->res_bytes[x];
            }
        }
    }
    return sum;
}

/* ---- candidates -------------------------------------------------------------- */

int partd__training_ckpts_init(partd_training_ckpts *cs, const partd_training_model *md)
{
    memset(cs, 0, sizeof *cs);
    cs->md = md;
    uint32_t n = md->n_units ? md->n_units : 1;
    cs->d = malloc(n * sizeof *cs->d);
    cs->order = malloc(n * sizeof *cs->order);
    int rc = partd__training_frontier_init(&cs->fr, n, 0);
    if (rc == PARTD_OK)
        rc = partd__training_frontier_init(&cs->frr, n, 1);
    return cs->d && cs->order && rc == PARTD_OK ? PARTD_OK : PARTD_ENOMEM;
}

void partd__training_ckpts_free(partd_training_ckpts *cs)
{
    free(cs->c);
    free(cs->d);
    free(cs->order);
    partd__training_frontier_free(&cs->fr);
    partd__training_frontier_free(&cs->frr);
    memset(cs, 0, sizeof *cs);
}

static int push(partd_training_ckpts *cs, partd_training_ckpt x)
{
    if (partd__training_grow(&cs->c, sizeof *cs->c, &cs->cap, (size_t)cs->n + 1) != PARTD_OK)
        return PARTD_ENOMEM;
    cs->c[cs->n++] = x;
    return PARTD_OK;
}

/* d[i]: the bytes unit a + i discards when checkpointed, the outputs that
 * no operation of the stage outside the unit reads. */
static void discarded(partd_training_ckpts *cs, uint32_t a, uint32_t b)
{
    const partd_training_model *md = cs->md;
    const int64_t *bytes = md->req->graph.output_bytes;
    int32_t hi = md->units[b - 1].hi;
    for (uint32_t u = a; u < b; u++) {
        int64_t d = 0;
        for (int32_t r = md->units[u].lo; r < md->units[u].hi; r++)
            if (md->next_outside[r] >= hi)
                d += bytes[md->pl.op_node[r]];
        cs->d[u - a] = d;
    }
}

/* Sorts idx[0..n) (unit offsets in the stage starting at a) by (d, f,
 * offset), the order the frontier takes items in. */
static void sort_items(const partd_training_ckpts *cs, uint32_t a, uint32_t *idx, uint32_t n)
{
    const partd_training_model *md = cs->md;
    /* insertion sort: stages are short, and this keeps the order total
     * without a global comparison context */
    for (uint32_t i = 1; i < n; i++) {
        uint32_t x = idx[i], k = i;
        while (k > 0) {
            uint32_t y = idx[k - 1];
            int before = cs->d[x] != cs->d[y]                         ? cs->d[x] < cs->d[y]
                         : md->units[a + x].f != md->units[a + y].f ? md->units[a + x].f < md->units[a + y].f
                                                                      : x < y;
            if (!before)
                break;
            idx[k] = y;
            k--;
        }
        idx[k] = x;
    }
}

/* Keeps the candidates that no other beats in R, D and T at once (ties:
 * the first), R ascending. Among equal R the smaller T comes first, so the
 * empty set (T = 0) stays first even beside a set that costs nothing to
 * recompute. */
static void pareto(partd_training_ckpts *cs)
{
    partd_training_ckpt *c = cs->c;
    uint32_t n = cs->n;
    for (uint32_t i = 1; i < n; i++) { /* by R, then T, then D descending */
        partd_training_ckpt x = c[i];
        uint32_t k = i;
        while (k > 0 && (c[k - 1].R > x.R ||
                         (c[k - 1].R == x.R &&
                          (c[k - 1].T > x.T || (c[k - 1].T == x.T && c[k - 1].D < x.D))))) {
            c[k] = c[k - 1];
            k--;
        }
        c[k] = x;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        int dominated = 0;
        for (uint32_t k = 0; k < m && !dominated; k++)
            dominated = c[k].D >= c[i].D && c[k].T <= c[i].T;
        if (!dominated)
            c[m++] = c[i];
    }
    cs->n = m;
}

/* Under auto: the empty set, then every frontier point at every threshold. */
static int frontier_candidates(partd_training_ckpts *cs, uint32_t a, uint32_t b)
{
    const partd_training_model *md = cs->md;
    uint32_t n = b - a;
    for (uint32_t i = 0; i < n; i++)
        cs->order[i] = i;
    sort_items(cs, a, cs->order, n);
    int rc = push(cs, (partd_training_ckpt){0, 0, 0, 0});
    partd__training_frontier_reset(&cs->fr);
    for (uint32_t i = 0; i < n && rc == PARTD_OK; i++) {
        uint32_t x = cs->order[i];
        if (cs->d[x] <= 0)
            continue; /* discards nothing: never worth recomputing */
        rc = partd__training_frontier_add(&cs->fr, md->units[a + x].f, cs->d[x], x);
        if (rc != PARTD_OK || (i + 1 < n && cs->d[cs->order[i + 1]] == cs->d[x]))
            continue;
        /* every point but the empty set: the first point is (0, 0) only
         * while no unit that costs nothing to recompute has joined */
        for (uint32_t p = 0; p < cs->fr.n && rc == PARTD_OK; p++)
            if (cs->fr.D[p] > 0)
                rc = push(cs, (partd_training_ckpt){cs->fr.R[p], cs->fr.D[p], cs->d[x], 0});
    }
    if (rc == PARTD_OK)
        pareto(cs);
    return rc;
}

/* Every subset of the stage's units, with its mask (the exhaustive search). */
static int subset_candidates(partd_training_ckpts *cs, uint32_t a, uint32_t b)
{
    const partd_training_model *md = cs->md;
    uint32_t n = b - a;
    int rc = PARTD_OK;
    for (uint64_t mask = 0; mask < (UINT64_C(1) << n) && rc == PARTD_OK; mask++) {
        partd_training_ckpt x = {0, 0, 0, mask};
        for (uint32_t i = 0; i < n; i++)
            if (mask >> i & 1) {
                x.R += md->units[a + i].f;
                x.D += cs->d[i];
                x.T = cs->d[i] > x.T ? cs->d[i] : x.T;
            }
        rc = push(cs, x);
    }
    return rc;
}

int partd__training_ckpts_of(partd_training_ckpts *cs, uint32_t a, uint32_t b, int masks)
{
    const partd_training_model *md = cs->md;
    cs->n = 0;
    switch (md->opt->checkpoint) {
    case PARTD_CHECKPOINT_NEVER: return push(cs, (partd_training_ckpt){0, 0, 0, 0});
    case PARTD_CHECKPOINT_ALWAYS:
    case PARTD_CHECKPOINT_EXCEPT_LAST: {
        int64_t act = md->pl.act[md->units[b - 1].hi] - md->pl.act[md->units[a].lo];
        uint64_t all = b - a >= 64 ? UINT64_MAX : (UINT64_C(1) << (b - a)) - 1;
        return push(cs, (partd_training_ckpt){md->pf[b] - md->pf[a], act, act, all});
    }
    default: break;
    }
    discarded(cs, a, b);
    if (masks && b - a <= PARTD_TRAINING_MASK_UNITS)
        return subset_candidates(cs, a, b);
    return frontier_candidates(cs, a, b);
}

int partd__training_ckpt_units(partd_training_ckpts *cs, uint32_t a, uint32_t b,
                               const partd_training_ckpt *x, uint32_t *units,
                               uint32_t *n_units)
{
    const partd_training_model *md = cs->md;
    uint32_t n = b - a;
    *n_units = 0;
    if (md->opt->checkpoint == PARTD_CHECKPOINT_NEVER ||
        (md->opt->checkpoint == PARTD_CHECKPOINT_EXCEPT_LAST && md->M < 2) ||
        (x->R == 0 && x->D == 0 && x->mask == 0))
        return PARTD_OK;
    if (md->opt->checkpoint != PARTD_CHECKPOINT_AUTO || x->mask) {
        for (uint32_t i = 0; i < n; i++)
            if (md->opt->checkpoint != PARTD_CHECKPOINT_AUTO || (i < 64 && (x->mask >> i & 1)))
                units[(*n_units)++] = a + i;
        return PARTD_OK;
    }
    /* The frontier again, up to the candidate's threshold, and its point. */
    discarded(cs, a, b);
    for (uint32_t i = 0; i < n; i++)
        cs->order[i] = i;
    sort_items(cs, a, cs->order, n);
    partd__training_frontier_reset(&cs->frr);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t y = cs->order[i];
        if (cs->d[y] <= 0)
            continue;
        if (cs->d[y] > x->T)
            break;
        int rc = partd__training_frontier_add(&cs->frr, md->units[a + y].f, cs->d[y], y);
        if (rc != PARTD_OK)
            return rc;
    }
    for (uint32_t p = 0; p < cs->frr.n; p++)
        if (cs->frr.R[p] == x->R && cs->frr.D[p] == x->D) {
            uint8_t *in = calloc(n ? n : 1, 1);
            if (!in)
                return PARTD_ENOMEM;
            partd__training_frontier_items(&cs->frr, p, cs->frr.n_steps, in);
            for (uint32_t i = 0; i < n; i++)
                if (in[i])
                    units[(*n_units)++] = a + i;
            free(in);
            return PARTD_OK;
        }
    return PARTD_EINTERNAL;
}
