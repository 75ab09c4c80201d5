/*
 * training_stage.c - the figures of every candidate stage and its best
 * checkpoint set; see training_model.h.
 *
 * Ranges [a, b) are visited with a fixed and b growing, so every figure
 * moves incrementally: received bytes and parameters through the pipeline
 * window, sent bytes and each unit's kept bytes through the operations whose
 * last reader / first reader outside their unit the new unit holds.
 *
 * Checkpoint sets (`auto`). A unit u of the stage checkpointed discards d_u
 * bytes and costs its forward time F_u again. With transient term T = the
 * largest d_u in X, memory is decreasing in D = sum of d_u over X and the
 * time increasing in R = sum of F_u. For each threshold T (the distinct
 * d_u, ascending), the exact Pareto frontier of (R, D) over subsets of the
 * units with d_u <= T answers "least R such that the memory with transient
 * T fits": counting T for a set whose largest d_u is smaller only
 * overestimates its memory, and that set is counted exactly at its own
 * threshold, so the minimum over thresholds is the exact optimum. Units
 * are added in (d_u, F_u) order (training_frontier.c): c identical blocks
 * keep the frontier at c + 1 points. The frontier is built only for ranges
 * where the empty set does not fit some (class, k); the least-memory set
 * (shortfall) at threshold T is simply every unit with 0 < d_u <= T.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "training_frontier.h"
#include "training_model.h"

typedef struct item {
    int64_t d;
    double F;
    uint32_t unit;
} item;

/* Per fixed a: everything that moves with b. */
typedef struct iter {
    const tr_model *md;
    uint32_t a, b;
    pl_window w;
    tr_range rg;
    int64_t *kept;             /* per unit (index u - a) */
    item *items;
    tr_frontier fr;
} iter;

uint32_t tr_checkpointed_microbatches(const tr_model *md)
{
    switch (md->opt->checkpoint) {
    case PARTD_CHECKPOINT_NEVER: return 0;
    case PARTD_CHECKPOINT_EXCEPT_LAST: return md->M - 1;
    default: return md->M;
    }
}

/* The activation part of N: kept outputs of the microbatches in flight and
 * the transient term (N = k * in + this). */
static int64_t held_activations(const tr_model *md, const tr_range *rg, const tr_ckpt *x,
                                uint32_t k)
{
    int64_t M = md->M, c = tr_checkpointed_microbatches(md);
    int64_t kk = k, kc = kk - (kk < M - c ? kk : M - c);
    int64_t kept = x->any ? rg->act - x->discarded : rg->act;
    return kc * kept + (kk - kc) * rg->act + (kc > 0 && x->any ? x->transient : 0);
}

int64_t tr_stage_memory(const tr_model *md, const tr_range *rg, const tr_ckpt *x, uint32_t k)
{
    int64_t M = md->M;
    int64_t N = (int64_t)k * rg->in + held_activations(md, rg, x, k);
    double P = md->opt->param_factor * (double)rg->params;
    return N / M + (int64_t)ceil(P + (double)(N % M) / (double)M);
}

void tr_stage_memory_parts(const tr_model *md, const tr_range *rg, const tr_ckpt *x,
                           uint32_t k, int64_t *inputs, int64_t *activations)
{
    *inputs = (int64_t)k * rg->in / md->M;
    *activations = held_activations(md, rg, x, k) / md->M;
}

double tr_stage_time(const tr_model *md, const tr_range *rg, const tr_ckpt *x, double speed)
{
    double M = md->M, c = tr_checkpointed_microbatches(md);
    double rec = x->any ? c / M * (x->recompute / speed) / M : 0.0;
    return rg->fwd / speed / M + rg->bwd / speed / M + rec + rg->comm_ms / M;
}

/* ---- the per-a iteration ---------------------------------------------------- */

static void iter_start(iter *it, uint32_t a)
{
    const tr_model *md = it->md;
    it->a = it->b = a;
    it->w = (pl_window){0, 0, 0, 0};
    pl_window_move(&md->pl, &it->w, md->units[a].lo, md->units[a].lo);
    memset(&it->rg, 0, sizeof it->rg);
    it->rg.a = it->rg.b = a;
}

/* [a, b) -> [a, b + 1). */
static void iter_next(iter *it)
{
    const tr_model *md = it->md;
    const int64_t *bytes = md->req->graph.output_bytes;
    const uint32_t *node = md->pl.op_node;
    const tr_unit *nu = &md->units[it->b];
    int32_t lo = md->units[it->a].lo, e0 = nu->lo, e1 = nu->hi;
    tr_range *rg = &it->rg;
    pl_window_move(&md->pl, &it->w, lo, e1);
    rg->fwd += nu->fwd;
    rg->bwd += nu->bwd;
    rg->act += nu->act;
    it->kept[it->b - it->a] = 0;
    for (int32_t r = e0; r < e1; r++) {
        if (md->last_user[r] >= e1)
            rg->out += bytes[node[r]];
        for (uint32_t k = md->lu_off[r]; k < md->lu_off[r + 1]; k++) {
            int32_t q = (int32_t)md->lu_idx[k];
            if (q >= lo && q < e0)
                rg->out -= bytes[node[q]];
        }
        for (uint32_t k = md->no_off[r]; k < md->no_off[r + 1]; k++) {
            int32_t q = (int32_t)md->no_idx[k];
            if (q >= lo)
                it->kept[md->unit_of[q] - it->a] += bytes[node[q]];
        }
    }
    it->b++;
    rg->b = it->b;
    rg->in = it->w.r;
    rg->params = it->w.p + md->pl.own_param[e1] - md->pl.own_param[lo];
    rg->comm_ms = md->pl.ms_per_byte * (double)(rg->in + rg->out);
}

/* ---- queries ---------------------------------------------------------------- */

static int cmp_item(const void *x, const void *y)
{
    const item *p = x, *q = y;
    if (p->d != q->d)
        return p->d < q->d ? -1 : 1;
    if (p->F != q->F)
        return p->F < q->F ? -1 : 1;
    return p->unit < q->unit ? -1 : p->unit > q->unit;
}

/* The checkpoint set of frontier point i at threshold T. */
static tr_ckpt point_set(const tr_frontier *fr, uint32_t i, int64_t T)
{
    return (tr_ckpt){fr->D[i] > 0 || fr->R[i] > 0, fr->D[i], T, fr->R[i]};
}

/* Least-time point of the frontier at threshold T that fits class cls with
 * k in flight: the first point (ascending D) whose memory fits. Memory falls
 * as D grows from point 1 on; point 0 is the empty set, which fits only when
 * the empty answer (already counted) is best anyway. UINT32_MAX when none. */
static uint32_t first_fit(const tr_model *md, const tr_frontier *fr, const tr_range *rg,
                          int64_t T, uint32_t cls, uint32_t k)
{
    uint32_t lo = 0, hi = fr->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        tr_ckpt x = point_set(fr, mid, T);
        if (tr_stage_memory(md, rg, &x, k) <= md->cls_mem[cls])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < fr->n ? lo : UINT32_MAX;
}

/* One (class, k) answer during a scan over thresholds. */
typedef struct best {
    double value;              /* time, or shortfall */
    int64_t T;
    uint32_t point, steps;     /* frontier point and steps done then */
    int empty;                 /* the empty set */
    int upto;                  /* shortfall: every unit with 0 < d <= T */
} best;

static void consider(const tr_model *md, const tr_frontier *fr, const tr_range *rg, int64_t T,
                     uint32_t cls, uint32_t k, best *bs)
{
    uint32_t i = first_fit(md, fr, rg, T, cls, k);
    if (i == UINT32_MAX)
        return;
    tr_ckpt x = point_set(fr, i, T);
    double t = tr_stage_time(md, rg, &x, md->cls_speed[cls]);
    if (t < bs->value)
        *bs = (best){t, T, i, fr->n_steps, 0, 0};
}

/* The fixed checkpoint sets of never / always / except_last. */
static tr_ckpt fixed_set(const tr_model *md, const tr_range *rg)
{
    if (md->opt->checkpoint == PARTD_CHECKPOINT_NEVER)
        return (tr_ckpt){0, 0, 0, 0};
    return (tr_ckpt){1, rg->act, rg->act, rg->fwd};
}

static double fixed_value(const tr_model *md, const tr_range *rg, uint32_t cls, uint32_t k,
                          int shortfall)
{
    tr_ckpt x = fixed_set(md, rg);
    int64_t mem = tr_stage_memory(md, rg, &x, k);
    if (shortfall)
        return (double)mem - (double)md->cls_mem[cls];
    return mem <= md->cls_mem[cls] ? tr_stage_time(md, rg, &x, md->cls_speed[cls]) : INFINITY;
}

/* Shortfall: at each threshold T the least memory discards every unit with
 * 0 < d <= T; no frontier needed. Items sorted. */
static void scan_least_memory(iter *it, best *bs, uint32_t n_q, const uint32_t *cls_of,
                              const uint32_t *k_of)
{
    const tr_model *md = it->md;
    uint32_t n = it->b - it->a;
    int64_t D = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (it->items[i].d <= 0)
            continue;
        D += it->items[i].d;
        if (i + 1 < n && it->items[i + 1].d == it->items[i].d)
            continue;
        tr_ckpt x = {1, D, it->items[i].d, 0};
        for (uint32_t q = 0; q < n_q; q++) {
            double v = (double)tr_stage_memory(md, &it->rg, &x, k_of[q]) -
                       (double)md->cls_mem[cls_of[q]];
            if (v < bs[q].value)
                bs[q] = (best){v, x.transient, 0, 0, 0, 1};
        }
    }
}

/* Scans the thresholds of the current range: bs[q] gets the best answer
 * for class cls_of[q] with k_of[q] in flight, q < n_q. The frontier is
 * built only when some (class, k) cannot take the empty set. */
static int scan(iter *it, int shortfall, best *bs, uint32_t n_q, const uint32_t *cls_of,
                const uint32_t *k_of)
{
    const tr_model *md = it->md;
    tr_frontier *fr = &it->fr;
    uint32_t n = it->b - it->a, pending = 0;
    for (uint32_t q = 0; q < n_q; q++) {
        tr_ckpt none = {0, 0, 0, 0};
        int64_t mem = tr_stage_memory(md, &it->rg, &none, k_of[q]);
        double v = shortfall ? (double)mem - (double)md->cls_mem[cls_of[q]]
                   : mem <= md->cls_mem[cls_of[q]]
                       ? tr_stage_time(md, &it->rg, &none, md->cls_speed[cls_of[q]])
                       : INFINITY;
        bs[q] = (best){v, 0, 0, 0, 1, 0};
        pending += isinf(v);
    }
    if (!shortfall && !pending)
        return PARTD_OK;
    for (uint32_t u = 0; u < n; u++) {
        const tr_unit *un = &md->units[it->a + u];
        it->items[u] = (item){un->act - it->kept[u], un->fwd, it->a + u};
    }
    qsort(it->items, n, sizeof *it->items, cmp_item);
    if (shortfall) {
        scan_least_memory(it, bs, n_q, cls_of, k_of);
        return PARTD_OK;
    }
    tr_frontier_reset(fr);
    for (uint32_t i = 0; i < n; i++) {
        if (it->items[i].d <= 0)
            continue; /* discards nothing: never worth recomputing */
        int rc = tr_frontier_add(fr, it->items[i].F, it->items[i].d, i);
        if (rc != PARTD_OK)
            return rc;
        if (i + 1 < n && it->items[i + 1].d == it->items[i].d)
            continue;
        for (uint32_t q = 0; q < n_q; q++)
            consider(md, fr, &it->rg, it->items[i].d, cls_of[q], k_of[q], &bs[q]);
    }
    return PARTD_OK;
}

static int iter_init(iter *it, const tr_model *md, int record)
{
    memset(it, 0, sizeof *it);
    it->md = md;
    uint32_t n = md->n_units ? md->n_units : 1;
    it->kept = malloc(n * sizeof *it->kept);
    it->items = malloc(n * sizeof *it->items);
    int rc = tr_frontier_init(&it->fr, n, record);
    return it->kept && it->items && rc == PARTD_OK ? 0 : -1;
}

static void iter_free(iter *it)
{
    free(it->kept);
    free(it->items);
    tr_frontier_free(&it->fr);
}

/* ---- the table -------------------------------------------------------------- */

/* The values of the current range, for every (class, k), into cells (q =
 * cls * n_k + kidx). */
static int fill_row(iter *it, int shortfall, best *bs, const uint32_t *cls_of,
                    const uint32_t *k_of, double *cells)
{
    const tr_model *md = it->md;
    uint32_t nq = md->n_classes * md->n_k;
    if (md->opt->checkpoint == PARTD_CHECKPOINT_AUTO) {
        int rc = scan(it, shortfall, bs, nq, cls_of, k_of);
        if (rc != PARTD_OK)
            return rc;
    } else {
        for (uint32_t q = 0; q < nq; q++)
            bs[q].value = fixed_value(md, &it->rg, cls_of[q], k_of[q], shortfall);
    }
    for (uint32_t q = 0; q < nq; q++)
        cells[q] = bs[q].value;
    return PARTD_OK;
}

/* Longest ranges. A stage needs at least param_factor * params bytes, and
 * parameters only grow with b: past the largest device's memory no longer
 * stage fits. In shortfall mode, past the largest device's memory plus the
 * largest shortfall of one plan (`limit`), no longer stage belongs to the
 * plan minimising the largest shortfall. */
static void measure_ranges(tr_model *md, iter *it, double limit, double fb_limit)
{
    md->max_len = 0;
    for (uint32_t a = 0; a < md->n_units; a++) {
        iter_start(it, a);
        uint32_t len = 0;
        while (it->b < md->n_units) {
            iter_next(it);
            if (ceil(md->opt->param_factor * (double)it->rg.params) > limit ||
                it->rg.fwd + it->rg.bwd > fb_limit)
                break;
            len++;
        }
        md->len[a] = len;
        if (len > md->max_len)
            md->max_len = len;
    }
}

/* The step of the best plan splitting the units evenly over the first S
 * devices in the given order (valid for every order), over the stage
 * counts allowed; INFINITY when none fits. Every stage of an optimal plan
 * takes at most step / M (step >= M * the largest stage time). */
static int even_split_step(const tr_model *md, double *out)
{
    uint32_t lo = md->opt->stages ? md->opt->stages : 1;
    uint32_t hi = md->opt->stages ? md->opt->stages : md->max_stages, n = md->n_units;
    *out = INFINITY;
    for (uint32_t S = lo; S <= hi; S++) {
        double sum = 0, max = 0;
        int fits = 1;
        for (uint32_t p = 0; p < S && fits; p++) {
            uint32_t a = (uint32_t)((uint64_t)n * p / S), b = (uint32_t)((uint64_t)n * (p + 1) / S);
            uint32_t cls = md->dev_class[p], k = tr_k(md, S - p), *units, n_units;
            tr_range rg;
            tr_ckpt x;
            int rc = tr_stage_choose(md, a, b, cls, k, 1, &rg, &x, &units, &n_units);
            if (rc != PARTD_OK)
                return rc;
            free(units);
            fits = tr_stage_memory(md, &rg, &x, k) <= md->cls_mem[cls];
            double t = tr_stage_time(md, &rg, &x, md->cls_speed[cls]);
            sum += t;
            max = t > max ? t : max;
        }
        double step = sum + ((double)md->M - 1) * max;
        if (fits && step < *out)
            *out = step;
    }
    return PARTD_OK;
}

/* The largest shortfall of one plan: the units split evenly over the
 * first stages devices in the given order (valid for every order), each
 * stage with its least-memory checkpoint set. */
static int even_split_shortfall(const tr_model *md, double *out)
{
    uint32_t S = md->opt->stages ? md->opt->stages : md->max_stages, n = md->n_units;
    double worst = -INFINITY;
    for (uint32_t p = 0; p < S; p++) {
        uint32_t a = (uint32_t)((uint64_t)n * p / S), b = (uint32_t)((uint64_t)n * (p + 1) / S);
        uint32_t cls = md->dev_class[p], k = tr_k(md, S - p), *units, n_units;
        tr_range rg;
        tr_ckpt x;
        int rc = tr_stage_choose(md, a, b, cls, k, 0, &rg, &x, &units, &n_units);
        if (rc != PARTD_OK)
            return rc;
        free(units);
        double v = (double)tr_stage_memory(md, &rg, &x, k) - (double)md->cls_mem[cls];
        if (v > worst)
            worst = v;
    }
    *out = worst;
    return PARTD_OK;
}

void tr_frontier_problem(partd_problem *pb)
{
    partd_problem_set(pb, 422, "search-limit", "Search limit",
                      "a stage has too many distinct units for the exact checkpoint "
                      "search (more than %u Pareto points); set "
                      "options.training.unit_depth or options.training.checkpoint",
                      TR_MAX_FRONTIER);
    partd_problem_add(pb, "/options/training/checkpoint", "too many distinct units");
}

int tr_ranges_build(tr_model *md, int shortfall, const partd_cancel *cancel, partd_problem *pb)
{
    iter it = {0};
    if (!md->len)
        md->len = malloc((md->n_units ? md->n_units : 1) * sizeof *md->len);
    int rc = PARTD_ENOMEM;
    if (!md->len || iter_init(&it, md, 0) != 0)
        goto out;
    if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
        goto out;
    md->shortfall = shortfall;
    double limit = (double)md->max_mem, worst = 0, fb_limit = INFINITY, step = INFINITY;
    if (shortfall) {
        if ((rc = even_split_shortfall(md, &worst)) != PARTD_OK)
            goto out;
        limit += worst > 0 ? worst : 0;
    } else {
        /* A stage of (forward + backward) fb at speed 1 takes at least
         * fb / (fastest speed * M); more than step / M cannot be optimal. */
        if ((rc = even_split_step(md, &step)) != PARTD_OK)
            goto out;
        double fastest = 0;
        for (uint32_t c = 0; c < md->n_classes; c++)
            fastest = md->cls_speed[c] > fastest ? md->cls_speed[c] : fastest;
        fb_limit = step * fastest * (1 + 1e-9);
    }
    measure_ranges(md, &it, limit, fb_limit);
out:
    if (rc == PARTD_ETOOBIG)
        tr_frontier_problem(pb);
    if (it.md)
        iter_free(&it);
    return rc;
}

/* ---- rows ------------------------------------------------------------------- */

struct tr_rows {
    iter it;
    best *bs;
    uint32_t *cls_of, *k_of;
    double *cells;             /* max_len * n_classes * n_k */
    int64_t counted;           /* bytes counted in md->stats */
};

/* The bytes the rows hold now (the frontier grows with the stages seen). */
static int64_t rows_bytes(const tr_rows *r)
{
    const tr_model *md = r->it.md;
    size_t nq = (size_t)md->n_classes * md->n_k, n = md->n_units ? md->n_units : 1;
    size_t fr = (size_t)r->it.fr.cap * (2 * sizeof(double) + 2 * sizeof(int64_t) +
                                        sizeof(uint32_t) + 1);
    return (int64_t)(nq * (sizeof(best) + 2 * sizeof(uint32_t)) +
                     (size_t)md->max_len * nq * sizeof(double) +
                     n * (sizeof(int64_t) + sizeof(item)) + fr);
}

static void rows_count(tr_rows *r)
{
    int64_t now = rows_bytes(r);
    tr_mem(r->it.md, now - r->counted);
    r->counted = now;
}

int tr_rows_init(const tr_model *md, tr_rows **out)
{
    size_t nq = (size_t)md->n_classes * md->n_k;
    size_t cells = (size_t)md->max_len * nq;
    tr_rows *r = calloc(1, sizeof *r);
    *out = r;
    if (!r)
        return PARTD_ENOMEM;
    r->bs = malloc(nq * sizeof *r->bs);
    r->cls_of = malloc(nq * sizeof *r->cls_of);
    r->k_of = malloc(nq * sizeof *r->k_of);
    r->cells = malloc((cells ? cells : 1) * sizeof *r->cells);
    if (iter_init(&r->it, md, 0) != 0 || !r->bs || !r->cls_of || !r->k_of || !r->cells)
        return PARTD_ENOMEM;
    uint32_t q = 0;
    for (uint32_t c = 0; c < md->n_classes; c++)
        for (uint32_t ki = 0; ki < md->n_k; ki++) {
            r->cls_of[q] = c;
            r->k_of[q++] = md->opt->schedule == PARTD_SCHEDULE_GPIPE ? md->M : ki + 1;
        }
    if (cells > md->stats->row_cells)
        md->stats->row_cells = cells;
    rows_count(r);
    return PARTD_OK;
}

void tr_rows_free(tr_rows *r)
{
    if (!r)
        return;
    if (r->it.md) {
        tr_mem(r->it.md, -r->counted);
        iter_free(&r->it);
    }
    free(r->bs);
    free(r->cls_of);
    free(r->k_of);
    free(r->cells);
    free(r);
}

int tr_row(tr_rows *r, uint32_t a, uint32_t n, const double **cells)
{
    const tr_model *md = r->it.md;
    size_t nq = (size_t)md->n_classes * md->n_k;
    int rc = PARTD_OK;
    iter_start(&r->it, a);
    for (uint32_t l = 0; l < n && l < md->len[a] && rc == PARTD_OK; l++) {
        iter_next(&r->it);
        rc = fill_row(&r->it, md->shortfall, r->bs, r->cls_of, r->k_of, r->cells + l * nq);
    }
    md->stats->rows++;
    rows_count(r);
    *cells = r->cells;
    return rc;
}

/* ---- one stage, with its set ------------------------------------------------ */

/* The units of the answer bs: a frontier point (its items), or every unit
 * with 0 < d <= T. */
static int answer_units(const iter *it, const best *bs, uint32_t **units, uint32_t *n_units)
{
    uint32_t n = it->b - it->a, count = 0;
    uint8_t *in_item = calloc(n ? n : 1, 1);
    if (!in_item)
        return PARTD_ENOMEM;
    if (bs->upto) {
        for (uint32_t i = 0; i < n; i++)
            in_item[i] = it->items[i].d > 0 && it->items[i].d <= bs->T;
    } else {
        tr_frontier_items(&it->fr, bs->point, bs->steps, in_item);
    }
    uint8_t *in_unit = calloc(n ? n : 1, 1);
    if (!in_unit) {
        free(in_item);
        return PARTD_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if (in_item[i]) {
            in_unit[it->items[i].unit - it->a] = 1;
            count++;
        }
    free(in_item);
    *units = malloc((count ? count : 1) * sizeof **units);
    if (!*units) {
        free(in_unit);
        return PARTD_ENOMEM;
    }
    *n_units = 0;
    for (uint32_t u = 0; u < n; u++)
        if (in_unit[u])
            (*units)[(*n_units)++] = it->a + u;
    free(in_unit);
    return PARTD_OK;
}

int tr_stage_choose(const tr_model *md, uint32_t a, uint32_t b, uint32_t cls, uint32_t k,
                    int fit, tr_range *rg, tr_ckpt *x, uint32_t **units_out,
                    uint32_t *n_units_out)
{
    iter it = {0};
    int rc = PARTD_ENOMEM;
    *units_out = NULL;
    *n_units_out = 0;
    if (iter_init(&it, md, 1) != 0)
        goto out;
    iter_start(&it, a);
    while (it.b < b)
        iter_next(&it);
    *rg = it.rg;
    if (md->opt->checkpoint != PARTD_CHECKPOINT_AUTO) {
        *x = fixed_set(md, rg);
        rc = PARTD_OK;
        if (x->any && (md->opt->checkpoint == PARTD_CHECKPOINT_ALWAYS || md->M >= 2)) {
            if (!(*units_out = malloc((b - a) * sizeof **units_out)))
                rc = PARTD_ENOMEM;
            for (uint32_t u = a; u < b && rc == PARTD_OK; u++)
                (*units_out)[(*n_units_out)++] = u;
        }
        goto out;
    }
    /* The frontier again, recording, for this one (class, k). */
    best bs;
    *x = (tr_ckpt){0, 0, 0, 0};
    rc = scan(&it, !fit, &bs, 1, &cls, &k);
    if (rc != PARTD_OK || bs.empty || isinf(bs.value))
        goto out;
    rc = answer_units(&it, &bs, units_out, n_units_out);
    x->any = *n_units_out > 0;
    for (uint32_t i = 0; rc == PARTD_OK && i < *n_units_out; i++) {
        uint32_t u = (*units_out)[i];
        int64_t d = md->units[u].act - it.kept[u - a];
        x->discarded += d;
        x->recompute += md->units[u].fwd;
        if (d > x->transient)
            x->transient = d;
    }
out:
    if (it.md)
        iter_free(&it);
    return rc;
}
