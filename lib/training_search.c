/*
 * training_search.c - the exact search over stage counts, device orders and
 * splits of the training planner; see training_search.h.
 *
 * step = sum of stage times + (M - 1) * largest stage time. For a bound B on
 * the largest time, a DP gives the least sum over plans whose every stage
 * takes at most B; the optimum is the least DP(B) + (M - 1) * B over the
 * distinct stage times B (at the optimal plan's own bottleneck the DP finds
 * a plan at least as good), as in Alpa's inter-operator DP. B starts at the
 * least achievable bottleneck (the same DP with max for sum); DP(B) never
 * rises with B, so the candidates are bisected: an interval whose ends have
 * the same DP, or whose least possible step reaches the best found, holds
 * no better bound.
 *
 * A stage must know how many stages follow it (1f1b's k = min(M, stages
 * from the end)):
 *   - device_order auto: the DP runs from the last unit backwards over
 *     states (first unit a, stages used per device kind); the stage starting
 *     at a takes one device of a kind, so the order is free and only counts
 *     per kind matter;
 *   - device_order given: stage p on devices[p]; a front DP for the stages
 *     with k = M, shared by every stage count, and per stage count a tail DP
 *     for the last M - 1 stages (see below).
 * In shortfall mode (no plan fits) the same DPs minimise the largest memory
 * shortfall instead, with no bound.
 */
#include "training_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"

/* DP states (units + 1) x (count vectors) beyond this are a search limit. */
#define TR_MAX_STATES (UINT64_C(1) << 23)

typedef struct dp {
    const tr_model *md;
    int max_mode;              /* shortfall: combine with max, no bound */
    double bound;
    uint32_t Q;                /* count vectors (auto) or stages + 1 (given) */
    uint32_t *radix, *cap;     /* per class (auto) */
    uint32_t *qsum;            /* stages in a count vector */
    /* Per class j: the states using it, by stage count ascending (s, s
     * without one stage of j, kidx), and list_end[j * (n + 1) + r]: how many
     * have at most r stages. */
    uint32_t *list_s, *list_prev, *list_end;
    uint16_t *list_k;
    double *f;                 /* (n_units + 1) * Q */
    uint32_t *pick_b, *pick_j; /* recorded choices, or NULL */
    /* device_order given: f holds the front part G[p][a], pick_b its picks;
     * h the tail H[q][a] (q < tail_cap) and h_pick its picks; the classes
     * of the last tail computed, to reuse it. */
    double *h;
    uint32_t *h_pick, *h_cls, h_len, tail_cap;
    int h_valid;
    const partd_cancel *cancel;
    int rc;                    /* the cancel flag's code once raised */
} dp;

/* Polled every 64 units of a DP: a DP can take long on large inputs. */
static int stopped(dp *d, uint32_t a)
{
    if (d->rc == PARTD_OK && (a & 63) == 0)
        d->rc = partd_cancel_check(d->cancel);
    return d->rc != PARTD_OK;
}

static inline double combine(const dp *d, double t, double g)
{
    return d->max_mode ? (t > g ? t : g) : t + g;
}

/* Stage times only grow at least as fast as forward + backward: once that
 * alone passes the bound, longer stages from a cannot fit it either (the
 * margin covers the rounding of this sum against the stage time's own). */
static inline int past_bound(const dp *d, uint32_t a, uint32_t b, double speed_m)
{
    const tr_model *md = d->md;
    return !d->max_mode &&
           (md->fb_prefix[b] - md->fb_prefix[a]) / speed_m * (1 - 1e-12) > d->bound;
}

/* ---- device_order auto ------------------------------------------------------ */

/* One stage [a, b) on class j before every state s that uses class j:
 * f[a][s] = min(f[a][s], t(k(s)) + f[b][s - e_j]). The states of class j
 * come in a list sorted by stage count, so the states with more stages than
 * units left are a cut-off tail, and the loop reads contiguous arrays. */
static void relax_row(const dp *d, uint32_t a, uint32_t b, uint32_t j, const double *t)
{
    uint32_t Q = d->Q, n = d->md->n_units;
    double *fa = &d->f[(size_t)a * Q];
    const double *fb = &d->f[(size_t)b * Q];
    const uint32_t *st = d->list_s + (size_t)j * Q, *prev = d->list_prev + (size_t)j * Q;
    const uint16_t *kid = d->list_k + (size_t)j * Q;
    uint32_t end = d->list_end[(size_t)j * (n + 1) + (n - a)];
    double bound = d->bound;
    for (uint32_t i = 0; i < end; i++) {
        double g = fb[prev[i]], tk = t[kid[i]];
        if (!(tk <= bound) || isinf(g))
            continue;
        double v = combine(d, tk, g);
        uint32_t s = st[i];
        if (v < fa[s]) {
            fa[s] = v;
            if (d->pick_b) {
                d->pick_b[(size_t)a * Q + s] = b;
                d->pick_j[(size_t)a * Q + s] = j;
            }
        }
    }
}

static void run_auto(dp *d)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, Q = d->Q;
    for (uint32_t s = 0; s < Q; s++)
        d->f[(size_t)n * Q + s] = s == 0 ? 0.0 : INFINITY;
    for (uint32_t a = n; a-- > 0 && !stopped(d, a);) {
        for (uint32_t s = 0; s < Q; s++)
            d->f[(size_t)a * Q + s] = INFINITY;
        for (uint32_t j = 0; j < md->n_classes; j++) {
            double speed_m = md->cls_speed[j] * md->M;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++)
                relax_row(d, a, b, j, tr_cell(md, a, b, j, 0));
        }
    }
}

/* One DP at the current bound: the best final value (sum, or max), with its
 * final state (auto: the count vector; given: the unit where the tail
 * starts) and stage count; INFINITY when no plan. */
typedef struct final {
    double value;
    uint32_t state, S;
} final;

/* ---- device_order given ----------------------------------------------------- */

/* Stage p runs on devices[p]; under 1f1b k = min(M, S - p) is M for every
 * stage but the last min(S, M - 1). So the DP has two parts: from the front,
 * G[p][a], the best p stages on devices 0..p-1 covering units [0, a) with
 * k = M, one pass for every stage count; and for each stage count S, from
 * the end, the last L stages (k = q for the q-th from the end), H[q][a]. A
 * plan of S stages is G[S - L][a] + H[L][a] at the best a; gpipe has L = 0.
 * Stage counts whose tails run on the same classes share one H. */

static uint32_t tail_len(const tr_model *md, uint32_t S)
{
    if (md->opt->schedule == PARTD_SCHEDULE_GPIPE)
        return 0;
    return S < md->M - 1 ? S : md->M - 1;
}

static void run_front(dp *d, uint32_t P)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1, ki = tr_kidx(md, md->M);
    double *G = d->f;
    for (uint32_t a = 0; a <= n; a++)
        G[a] = a == 0 ? 0.0 : INFINITY;
    for (uint32_t p = 1; p <= P && d->rc == PARTD_OK; p++) {
        double *Gp = G + (size_t)p * N1;
        const double *Gq = Gp - N1;
        uint32_t cls = md->dev_class[p - 1];
        double speed_m = md->cls_speed[cls] * md->M;
        for (uint32_t a = 0; a <= n; a++)
            Gp[a] = INFINITY;
        for (uint32_t a = 0; a < n && !stopped(d, a); a++) {
            if (isinf(Gq[a]))
                continue;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++) {
                double t = *tr_cell(md, a, b, cls, ki);
                double v = combine(d, t, Gq[a]);
                if (t <= d->bound && v < Gp[b]) {
                    Gp[b] = v;
                    if (d->pick_b)
                        d->pick_b[(size_t)p * N1 + b] = a;
                }
            }
        }
    }
}

/* H[q] depends only on the classes of the last q devices (S - 1 down to
 * S - q), so the layers a previous stage count computed on the same
 * classes stay. */
static void run_tail(dp *d, uint32_t S, uint32_t L)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1, keep = 0, old_len = d->h_valid ? d->h_len : 0;
    if (d->h_valid)
        while (keep < L && keep < d->h_len && d->h_cls[keep + 1] == md->dev_class[S - keep - 1])
            keep++;
    else
        for (uint32_t a = 0; a <= n; a++)
            d->h[a] = a == n ? 0.0 : INFINITY;
    d->h_valid = 0;
    for (uint32_t q = keep + 1; q <= L && d->rc == PARTD_OK; q++) {
        double *Hq = d->h + (size_t)q * N1;
        const double *Hp = Hq - N1;
        uint32_t cls = md->dev_class[S - q], ki = tr_kidx(md, q);
        double speed_m = md->cls_speed[cls] * md->M;
        d->h_cls[q] = cls;
        for (uint32_t a = 0; a < n && !stopped(d, a); a++) {
            double best = INFINITY;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++) {
                double t = *tr_cell(md, a, b, cls, ki);
                double v = combine(d, t, Hp[b]);
                if (t <= d->bound && v < best) {
                    best = v;
                    if (d->h_pick)
                        d->h_pick[(size_t)q * N1 + a] = b;
                }
            }
            Hq[a] = best;
        }
        Hq[n] = INFINITY;
    }
    /* Layers above L stay valid only when none below was rewritten. */
    d->h_len = keep == L && old_len > L ? old_len : L;
    d->h_valid = d->rc == PARTD_OK;
}

/* The best stage count and the unit where the tail starts (in `state`). */
static final solve_given(dp *d)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1, fixed = md->opt->stages;
    uint32_t lo = fixed ? fixed : 1, hi = fixed ? fixed : md->max_stages, P = 0;
    final best = {INFINITY, 0, 0};
    for (uint32_t S = lo; S <= hi; S++)
        if (S - tail_len(md, S) > P)
            P = S - tail_len(md, S);
    d->h_valid = 0;
    run_front(d, P);
    for (uint32_t S = lo; S <= hi && d->rc == PARTD_OK; S++) {
        uint32_t L = tail_len(md, S);
        run_tail(d, S, L);
        const double *G = d->f + (size_t)(S - L) * N1, *H = d->h + (size_t)L * N1;
        for (uint32_t a = 0; a <= n; a++) {
            if (isinf(G[a]) || isinf(H[a]))
                continue;
            double v = combine(d, G[a], H[a]);
            if (v < best.value)
                best = (final){v, a, S};
        }
    }
    if (d->pick_b && best.S) /* the picks of the best S's tail */
        run_tail(d, best.S, tail_len(md, best.S));
    return best;
}

/* ---- driving ---------------------------------------------------------------- */

static int build_lists(dp *d)
{
    const tr_model *md = d->md;
    uint32_t Q = d->Q, n = md->n_units, C = md->n_classes;
    for (uint32_t s = 0; s < Q; s++)
        for (uint32_t j = 0; j < C; j++)
            d->qsum[s] += (s / d->radix[j]) % (d->cap[j] + 1);
    d->list_s = malloc((size_t)C * Q * sizeof *d->list_s);
    d->list_prev = malloc((size_t)C * Q * sizeof *d->list_prev);
    d->list_k = malloc((size_t)C * Q * sizeof *d->list_k);
    d->list_end = malloc((size_t)C * (n + 1) * sizeof *d->list_end);
    if (!d->list_s || !d->list_prev || !d->list_k || !d->list_end)
        return PARTD_ENOMEM;
    for (uint32_t j = 0; j < C; j++) {
        uint32_t m = 0, *ls = d->list_s + (size_t)j * Q;
        for (uint32_t q = 1; q <= md->max_stages; q++) {
            for (uint32_t s = 0; s < Q; s++)
                if (d->qsum[s] == q && (s / d->radix[j]) % (d->cap[j] + 1) > 0) {
                    ls[m] = s;
                    d->list_prev[(size_t)j * Q + m] = s - d->radix[j];
                    d->list_k[(size_t)j * Q + m] = (uint16_t)tr_kidx(md, tr_k(md, q));
                    m++;
                }
            if (q <= n)
                d->list_end[(size_t)j * (n + 1) + q] = m;
        }
        /* r stages left room for: every state with at most r stages. */
        uint32_t *end = d->list_end + (size_t)j * (n + 1);
        end[0] = 0;
        uint32_t last = 0;
        for (uint32_t r = 1; r <= n; r++) {
            if (r <= md->max_stages)
                last = end[r];
            end[r] = last;
        }
    }
    return PARTD_OK;
}

static int dp_init(dp *d, const tr_model *md, const partd_cancel *cancel, int record)
{
    memset(d, 0, sizeof *d);
    d->md = md;
    d->cancel = cancel;
    uint64_t Q = 1;
    if (md->opt->device_order_auto) {
        d->radix = malloc(md->n_classes * sizeof *d->radix);
        d->cap = malloc(md->n_classes * sizeof *d->cap);
        if (!d->radix || !d->cap)
            return PARTD_ENOMEM;
        for (uint32_t j = 0; j < md->n_classes; j++) {
            d->cap[j] = md->cls_count[j] < md->max_stages ? md->cls_count[j] : md->max_stages;
            d->radix[j] = (uint32_t)Q;
            Q *= d->cap[j] + 1;
            if (Q * (md->n_units + 1) > TR_MAX_STATES)
                return PARTD_ETOOBIG;
        }
    } else {
        Q = md->max_stages + 1;
        d->tail_cap = (md->M - 1 < md->max_stages ? md->M - 1 : md->max_stages) + 1;
        size_t hc = (size_t)d->tail_cap * (md->n_units + 1);
        if (hc > TR_MAX_STATES)
            return PARTD_ETOOBIG;
        d->h = malloc(hc * sizeof *d->h);
        d->h_cls = calloc(d->tail_cap, sizeof *d->h_cls);
        if (!d->h || !d->h_cls || (record && !(d->h_pick = calloc(hc, sizeof *d->h_pick))))
            return PARTD_ENOMEM;
    }
    d->Q = (uint32_t)Q;
    size_t cells = (size_t)(md->n_units + 1) * Q;
    if (cells > TR_MAX_STATES)
        return PARTD_ETOOBIG;
    d->f = malloc(cells * sizeof *d->f);
    d->qsum = calloc(Q, sizeof *d->qsum);
    if (!d->f || !d->qsum)
        return PARTD_ENOMEM;
    if (md->opt->device_order_auto && build_lists(d) != PARTD_OK)
        return PARTD_ENOMEM;
    if (record) {
        d->pick_b = calloc(cells, sizeof *d->pick_b);
        d->pick_j = calloc(cells, sizeof *d->pick_j);
        if (!d->pick_b || !d->pick_j)
            return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

static void dp_free(dp *d)
{
    free(d->radix);
    free(d->cap);
    free(d->qsum);
    free(d->list_s);
    free(d->list_prev);
    free(d->list_end);
    free(d->list_k);
    free(d->f);
    free(d->pick_b);
    free(d->pick_j);
    free(d->h);
    free(d->h_pick);
    free(d->h_cls);
}

static final solve(dp *d)
{
    const tr_model *md = d->md;
    final best = {INFINITY, 0, 0};
    uint32_t fixed = md->opt->stages;
    if (md->opt->device_order_auto) {
        run_auto(d);
        for (uint32_t s = 1; s < d->Q; s++) {
            double v = d->f[s];
            if ((fixed && d->qsum[s] != fixed) || !(v < best.value))
                continue;
            best = (final){v, s, d->qsum[s]};
        }
        return best;
    }
    return solve_given(d);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* The distinct finite stage times, ascending. */
static int candidate_bounds(const tr_model *md, double **out, size_t *n_out)
{
    size_t cells = (size_t)md->n_ranges * md->n_classes * md->n_k, n = 0;
    double *v = malloc((cells ? cells : 1) * sizeof *v);
    if (!v)
        return PARTD_ENOMEM;
    for (size_t i = 0; i < cells; i++)
        if (isfinite(md->table[i]))
            v[n++] = md->table[i];
    qsort(v, n, sizeof *v, cmp_double);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[i] != v[u - 1])
            v[u++] = v[i];
    *out = v;
    *n_out = u;
    return PARTD_OK;
}

/* The recorded plan of a given-order DP: the front's stages back from the
 * tail's start, then the tail's. */
static int extract_given(const dp *d, final f, tr_solution *sol)
{
    const tr_model *md = d->md;
    uint32_t N1 = md->n_units + 1, L = tail_len(md, f.S), head = f.S - L, a = f.state;
    for (uint32_t p = head; p-- > 0;) {
        uint32_t from = d->pick_b[(size_t)(p + 1) * N1 + a];
        sol->stages[p] = (tr_pick){from, a, md->dev_class[p], p, tr_k(md, f.S - p)};
        a = from;
    }
    if (a != 0)
        return PARTD_EINTERNAL;
    a = f.state;
    for (uint32_t q = L; q >= 1; q--) {
        uint32_t p = f.S - q, b = d->h_pick[(size_t)q * N1 + a];
        sol->stages[p] = (tr_pick){a, b, md->dev_class[p], p, tr_k(md, q)};
        a = b;
    }
    return a == md->n_units ? PARTD_OK : PARTD_EINTERNAL;
}

/* Reads the recorded plan of final state f into sol. */
static int extract(const dp *d, final f, tr_solution *sol)
{
    const tr_model *md = d->md;
    sol->stages = malloc(f.S * sizeof *sol->stages);
    uint32_t *next_dev = calloc(md->n_classes, sizeof *next_dev);
    if (!sol->stages || !next_dev) {
        free(next_dev);
        return PARTD_ENOMEM;
    }
    sol->S = f.S;
    if (!md->opt->device_order_auto) {
        free(next_dev);
        return extract_given(d, f, sol);
    }
    uint32_t a = 0, s = f.state;
    for (uint32_t p = 0; p < f.S; p++) {
        uint32_t q = f.S - p, b = d->pick_b[(size_t)a * d->Q + s];
        uint32_t cls = d->pick_j[(size_t)a * d->Q + s], dev, seen = 0;
        /* The class's devices in list order, by pipeline position. */
        for (dev = 0; dev < md->req->n_devices; dev++)
            if (md->dev_class[dev] == cls && seen++ == next_dev[cls])
                break;
        next_dev[cls]++;
        s -= d->radix[cls];
        sol->stages[p] = (tr_pick){a, b, cls, dev, tr_k(md, q)};
        a = b;
    }
    free(next_dev);
    return a == md->n_units ? PARTD_OK : PARTD_EINTERNAL;
}

/* ---- the bound ---------------------------------------------------------------- */

/* DP(B) never rises with B, so between two bounds with the same DP no bound
 * does better than the smaller (step = DP(B) + (M - 1) B); bisecting the
 * candidates evaluates O(distinct DP values x log candidates) bounds, and an
 * interval whose least possible step reaches the best is skipped. */
typedef struct bound_search {
    dp *d;
    const double *B;
    double Mm1;
    double best_step, best_bound;
} bound_search;

static void consider_step(bound_search *bs, size_t i, double sum)
{
    if (!isinf(sum) && sum + bs->Mm1 * bs->B[i] < bs->best_step) {
        bs->best_step = sum + bs->Mm1 * bs->B[i];
        bs->best_bound = bs->B[i];
    }
}

static int eval_bound(bound_search *bs, size_t i, double *sum)
{
    int rc = partd_cancel_check(bs->d->cancel);
    if (rc != PARTD_OK)
        return rc;
    bs->d->bound = bs->B[i];
    final f = solve(bs->d);
    if (bs->d->rc != PARTD_OK)
        return bs->d->rc;
    *sum = f.value;
    consider_step(bs, i, f.value);
    return PARTD_OK;
}

/* The bounds strictly between i and k, whose DPs vi >= vk are known. */
static int search_between(bound_search *bs, size_t i, double vi, size_t k, double vk)
{
    if (k - i <= 1 || vi == vk || vk + bs->Mm1 * bs->B[i + 1] >= bs->best_step)
        return PARTD_OK;
    size_t mid = i + (k - i) / 2;
    double vm;
    int rc = eval_bound(bs, mid, &vm);
    if (rc == PARTD_OK)
        rc = search_between(bs, i, vi, mid, vm);
    if (rc == PARTD_OK)
        rc = search_between(bs, mid, vm, k, vk);
    return rc;
}

int tr_search(const tr_model *md, const partd_cancel *cancel, tr_solution *sol)
{
    dp d;
    double *cands = NULL;
    size_t n_cands = 0;
    memset(sol, 0, sizeof *sol);
    int rc = dp_init(&d, md, cancel, 0);
    if (rc != PARTD_OK)
        goto out;
    d.max_mode = md->shortfall;
    d.bound = INFINITY;
    final free_best = solve(&d);
    if ((rc = d.rc) != PARTD_OK || isinf(free_best.value))
        goto out; /* sol->found = 0 */
    double best_bound = INFINITY;
    double Mm1 = (double)md->M - 1;
    if (!md->shortfall && md->M > 1) {
        /* No bound below the least achievable bottleneck has a plan: find
         * it with the same DP taking the max instead of the sum. */
        d.max_mode = 1;
        double least_max = solve(&d).value;
        d.max_mode = 0;
        if ((rc = d.rc) != PARTD_OK)
            goto out;
        if ((rc = candidate_bounds(md, &cands, &n_cands)) != PARTD_OK)
            goto out;
        size_t first = 0;
        while (first < n_cands && cands[first] < least_max)
            first++;
        if (first == n_cands) {
            rc = PARTD_EINTERNAL; /* the least bottleneck is a stage time */
            goto out;
        }
        bound_search bsr = {&d, cands, Mm1, INFINITY, INFINITY};
        /* The largest bound allows every stage: its DP is the unbounded one. */
        size_t last = n_cands - 1;
        double v_first;
        consider_step(&bsr, last, free_best.value);
        if ((rc = eval_bound(&bsr, first, &v_first)) == PARTD_OK && first < last)
            rc = search_between(&bsr, first, v_first, last, free_best.value);
        if (rc != PARTD_OK)
            goto out;
        best_bound = bsr.best_bound;
    }
    /* Record the chosen DP once more. */
    dp rec;
    rc = dp_init(&rec, md, cancel, 1);
    if (rc == PARTD_OK) {
        rec.max_mode = md->shortfall;
        rec.bound = best_bound;
        final f = solve(&rec);
        rc = rec.rc != PARTD_OK ? rec.rc
             : isinf(f.value) ? PARTD_EINTERNAL : extract(&rec, f, sol);
        sol->found = rc == PARTD_OK;
    }
    dp_free(&rec);
out:
    free(cands);
    dp_free(&d);
    return rc;
}

void tr_solution_free(tr_solution *sol)
{
    free(sol->stages);
    memset(sol, 0, sizeof *sol);
}
