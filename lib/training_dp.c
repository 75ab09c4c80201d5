/*
 * training_dp.c - the DP of the training search at one bound; see
 * training_dp.h and, for the search around it, training_search.c.
 *
 * A stage must know how many stages follow it (1f1b's k = min(M, stages
 * from the end)):
 *   - device_order auto: the DP runs from the last unit backwards over
 *     states (first unit a, stages used per device kind); the stage starting
 *     at a takes one device of a kind, so the order is free and only counts
 *     per kind matter. Row a is computed when the DP reaches a.
 *   - device_order given: stage p on devices[p]; a front DP for the stages
 *     with k = M, shared by every stage count (pushed forward from row a,
 *     once every row before a is done), and for the last M - 1 stages a
 *     tail DP per distinct class sequence (pulled backward from row a).
 * Each choice is the first best in a fixed order (units, classes, stage
 * ends ascending), as the search's determinism needs.
 */
#include "training_dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"

/* DP states (units + 1) x (count vectors) beyond this are a search limit. */
#define TR_MAX_STATES (UINT64_C(1) << 23)

/* Polled every 64 units of a DP: a DP can take long on large inputs. */
static int stopped(tr_dp *d, uint32_t a)
{
    if (d->rc == PARTD_OK && (a & 63) == 0)
        d->rc = partd_cancel_check(d->cancel);
    return d->rc != PARTD_OK;
}

static inline double combine(const tr_dp *d, double t, double g)
{
    return d->max_mode ? (t > g ? t : g) : t + g;
}

/* Stage times only grow at least as fast as forward + backward: once that
 * alone passes the bound, longer stages from a cannot fit it either (the
 * margin covers the rounding of this sum against the stage time's own). */
static inline int past_bound(const tr_dp *d, uint32_t a, uint32_t b, double speed_m)
{
    const tr_model *md = d->md;
    return !d->max_mode &&
           (md->fb_prefix[b] - md->fb_prefix[a]) / speed_m * (1 - 1e-12) > d->bound;
}

/* How much of row a a pass needs: the stages that fit the bound on some
 * class, and while it looks for the least value above its bound, those
 * that may be less than the least seen so far. A stage's value is at
 * least its forward + backward time on the fastest class, with the margin
 * of past_bound. */
static uint32_t row_extent(const tr_dp *d, uint32_t a)
{
    const tr_model *md = d->md;
    double limit = d->want_succ && d->succ > d->bound ? d->succ : d->bound;
    if (d->max_mode || isinf(limit))
        return md->len[a];
    uint32_t n = 0;
    while (n < md->len[a] &&
           (md->fb_prefix[a + n + 1] - md->fb_prefix[a]) / d->fastest_m * (1 - 1e-12) <= limit)
        n++;
    return n;
}

/* Row a's values (the part row_extent says) into *row (0 and d->rc set on
 * error), and the least value above succ_of among them into d->succ. */
static int row_at(tr_dp *d, uint32_t a, const double **row)
{
    const tr_model *md = d->md;
    uint32_t n = row_extent(d, a);
    int rc = tr_row(d->rows, a, n, row);
    if (rc != PARTD_OK) {
        d->rc = rc;
        d->frontier_limit = rc == PARTD_ETOOBIG;
        return 0;
    }
    if (d->want_succ) {
        size_t cells = (size_t)n * md->n_classes * md->n_k;
        for (size_t i = 0; i < cells; i++)
            if ((*row)[i] > d->succ_of && (*row)[i] < d->succ)
                d->succ = (*row)[i];
    }
    return 1;
}

/* ---- device_order auto ------------------------------------------------------ */

/* One stage [a, b) on class j before every state s that uses class j:
 * f[a][s] = min(f[a][s], t(k(s)) + f[b][s - e_j]). The states of class j
 * come in a list sorted by stage count, so the states with more stages than
 * units left are a cut-off tail, and the loop reads contiguous arrays. */
static void relax_row(const tr_dp *d, uint32_t a, uint32_t b, uint32_t j, const double *t)
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
            d->pick_b[(size_t)a * Q + s] = b;
            d->pick_j[(size_t)a * Q + s] = j;
        }
    }
}

static void run_auto(tr_dp *d)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, Q = d->Q;
    for (uint32_t s = 0; s < Q; s++)
        d->f[(size_t)n * Q + s] = s == 0 ? 0.0 : INFINITY;
    for (uint32_t a = n; a-- > 0 && !stopped(d, a);) {
        const double *row;
        for (uint32_t s = 0; s < Q; s++)
            d->f[(size_t)a * Q + s] = INFINITY;
        if (!row_at(d, a, &row))
            break;
        for (uint32_t j = 0; j < md->n_classes; j++) {
            double speed_m = md->cls_speed[j] * md->M;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++)
                relax_row(d, a, b, j, row + tr_row_index(md, a, b, j, 0));
        }
    }
}

/* ---- device_order given ----------------------------------------------------- */

/* Stage p runs on devices[p]; under 1f1b k = min(M, S - p) is M for every
 * stage but the last min(S, M - 1). So the DP has two parts: from the front,
 * G[p][a], the best p stages on devices 0..p-1 covering units [0, a) with
 * k = M, one pass for every stage count; and for each stage count S, from
 * the end, the last L stages (k = q for the q-th from the end). A plan of S
 * stages is G[S - L][a] + (its tail)[a] at the best a; gpipe has L = 0. */

static uint32_t tail_len(const tr_model *md, uint32_t S)
{
    if (md->opt->schedule == PARTD_SCHEDULE_GPIPE)
        return 0;
    return S < md->M - 1 ? S : md->M - 1;
}

/* G[p][b] = min over a of t(a, b on devices[p - 1]) + G[p - 1][a]: row a
 * pushes into every layer once every row before a has (G[p - 1][a] is then
 * final), each (p, b) seeing the a's in ascending order. */
static void run_front(tr_dp *d)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1, ki = tr_kidx(md, md->M);
    double *G = d->f;
    for (size_t i = 0; i < (size_t)(d->P + 1) * N1; i++)
        G[i] = i == 0 ? 0.0 : INFINITY;
    for (uint32_t a = 0; a < n && !stopped(d, a); a++) {
        const double *row;
        if (!row_at(d, a, &row))
            break;
        for (uint32_t p = 1; p <= d->P; p++) {
            double g = G[(size_t)(p - 1) * N1 + a];
            if (isinf(g))
                continue;
            double *Gp = G + (size_t)p * N1;
            uint32_t cls = md->dev_class[p - 1];
            double speed_m = md->cls_speed[cls] * md->M;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++) {
                double t = row[tr_row_index(md, a, b, cls, ki)];
                double v = combine(d, t, g);
                if (t <= d->bound && v < Gp[b]) {
                    Gp[b] = v;
                    d->pick_b[(size_t)p * N1 + b] = a;
                }
            }
        }
    }
}

/* h[i][a] = min over b of t(a, b on class cls[i], k = depth[i]) +
 * h[parent[i]][b], every tail node at once, a descending. */
static void run_tails(tr_dp *d)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1;
    for (uint32_t a = 0; a <= n; a++)
        d->h[a] = a == n ? 0.0 : INFINITY;
    for (uint32_t i = 1; i < d->n_nodes; i++)
        d->h[(size_t)i * N1 + n] = INFINITY;
    if (d->n_nodes == 1)
        return;
    for (uint32_t a = n; a-- > 0 && !stopped(d, a);) {
        const double *row;
        if (!row_at(d, a, &row))
            break;
        for (uint32_t i = 1; i < d->n_nodes; i++) {
            uint32_t cls = d->node_cls[i], ki = tr_kidx(md, d->node_depth[i]);
            const double *Hp = d->h + (size_t)d->node_parent[i] * N1;
            double speed_m = md->cls_speed[cls] * md->M, best = INFINITY;
            for (uint32_t b = a + 1; b <= a + md->len[a] && !past_bound(d, a, b, speed_m); b++) {
                double t = row[tr_row_index(md, a, b, cls, ki)];
                double v = combine(d, t, Hp[b]);
                if (t <= d->bound && v < best) {
                    best = v;
                    d->h_pick[(size_t)i * N1 + a] = b;
                }
            }
            d->h[(size_t)i * N1 + a] = best;
        }
    }
}

/* Adds to the tail nodes the tails of the stage counts from *S on, as many
 * as fit tail_cap nodes (at least one), sharing equal class sequences;
 * *S becomes the first stage count left out. */
static void build_batch(tr_dp *d, uint32_t *S, uint32_t hi)
{
    const tr_model *md = d->md;
    d->n_nodes = 1;
    for (uint32_t first = *S; *S <= hi; (*S)++) {
        uint32_t L = tail_len(md, *S), cur = 0, q = 1;
        /* The part of the tail already there, then what it needs. */
        for (; q <= L; q++) {
            uint32_t cls = md->dev_class[*S - q], i = 1;
            while (i < d->n_nodes && !(d->node_parent[i] == cur && d->node_cls[i] == cls))
                i++;
            if (i == d->n_nodes)
                break;
            cur = i;
        }
        if (*S > first && d->n_nodes + (L - q + 1) > d->tail_cap)
            return;
        for (; q <= L; q++) {
            uint32_t i = d->n_nodes++;
            d->node_parent[i] = cur;
            d->node_cls[i] = md->dev_class[*S - q];
            d->node_depth[i] = q;
            cur = i;
        }
        d->tail_node[*S] = cur;
    }
}

/* The stage counts from `first` to before `end` of the tails computed:
 * the best plan into *best (stage counts ascending, the first best kept). */
static int best_of_batch(tr_dp *d, uint32_t first, uint32_t end, tr_final *best)
{
    const tr_model *md = d->md;
    uint32_t n = md->n_units, N1 = n + 1;
    int improved = 0;
    for (uint32_t S = first; S < end; S++) {
        uint32_t L = tail_len(md, S);
        const double *G = d->f + (size_t)(S - L) * N1, *H = d->h + (size_t)d->tail_node[S] * N1;
        for (uint32_t a = 0; a <= n; a++) {
            if (isinf(G[a]) || isinf(H[a]))
                continue;
            double v = combine(d, G[a], H[a]);
            if (v < best->value) {
                *best = (tr_final){v, a, S};
                improved = 1;
            }
        }
    }
    return improved;
}

/* The best stage count and the unit where the tail starts (in `state`);
 * the tails' picks left are those of the best's batch. */
static tr_final solve_given(tr_dp *d)
{
    const tr_model *md = d->md;
    uint32_t fixed = md->opt->stages;
    uint32_t lo = fixed ? fixed : 1, hi = fixed ? fixed : md->max_stages;
    uint32_t S = lo, best_first = lo, last_first = lo;
    tr_final best = {INFINITY, 0, 0};
    run_front(d);
    while (S <= hi && d->rc == PARTD_OK) {
        last_first = S;
        build_batch(d, &S, hi);
        run_tails(d);
        if (d->rc == PARTD_OK && best_of_batch(d, last_first, S, &best))
            best_first = last_first;
    }
    if (d->rc == PARTD_OK && best.S && best_first != last_first) {
        S = best_first;
        build_batch(d, &S, hi);
        run_tails(d);
    }
    return best;
}

/* ---- set-up ----------------------------------------------------------------- */

static int build_lists(tr_dp *d)
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
    d->counted += (int64_t)((size_t)C * Q * 10 + (size_t)C * (n + 1) * 4 + (size_t)Q * 4);
    return PARTD_OK;
}

static int init_auto(tr_dp *d)
{
    const tr_model *md = d->md;
    uint64_t Q = 1;
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
    d->Q = (uint32_t)Q;
    size_t cells = (size_t)(md->n_units + 1) * Q;
    d->f = malloc(cells * sizeof *d->f);
    d->qsum = calloc(Q, sizeof *d->qsum);
    d->pick_b = calloc(cells, sizeof *d->pick_b);
    d->pick_j = calloc(cells, sizeof *d->pick_j);
    if (!d->f || !d->qsum || !d->pick_b || !d->pick_j)
        return PARTD_ENOMEM;
    d->counted += (int64_t)(cells * (sizeof *d->f + 2 * sizeof *d->pick_b));
    return build_lists(d);
}

/* The front's depth P and room for the tails: every stage count's at once
 * when TR_MAX_STATES allows (or md->tail_cap, for tests), else in batches. */
static int init_given(tr_dp *d)
{
    const tr_model *md = d->md;
    uint32_t fixed = md->opt->stages, N1 = md->n_units + 1;
    uint32_t lo = fixed ? fixed : 1, hi = fixed ? fixed : md->max_stages, most = 1, longest = 0;
    for (uint32_t S = lo; S <= hi; S++) {
        uint32_t L = tail_len(md, S);
        most += L;
        longest = L > longest ? L : longest;
        if (S - L > d->P)
            d->P = S - L;
    }
    d->node_parent = calloc(most, sizeof *d->node_parent);
    d->node_cls = calloc(most, sizeof *d->node_cls);
    d->node_depth = calloc(most, sizeof *d->node_depth);
    d->tail_node = calloc(hi + 1, sizeof *d->tail_node);
    if (!d->node_parent || !d->node_cls || !d->node_depth || !d->tail_node)
        return PARTD_ENOMEM;
    /* The nodes all the tails need, shared: the room to hold. */
    uint32_t S = lo;
    d->tail_cap = most;
    build_batch(d, &S, hi);
    uint64_t room = md->tail_cap ? md->tail_cap : TR_MAX_STATES / N1;
    d->tail_cap = (uint32_t)(d->n_nodes < room ? d->n_nodes : room);
    size_t front = (size_t)(d->P + 1) * N1, tails = (size_t)d->tail_cap * N1;
    if (front > TR_MAX_STATES || d->tail_cap < longest + 1)
        return PARTD_ETOOBIG;
    d->f = malloc(front * sizeof *d->f);
    d->pick_b = calloc(front, sizeof *d->pick_b);
    d->h = malloc(tails * sizeof *d->h);
    d->h_pick = calloc(tails, sizeof *d->h_pick);
    if (!d->f || !d->pick_b || !d->h || !d->h_pick)
        return PARTD_ENOMEM;
    d->counted += (int64_t)((front + tails) * (sizeof(double) + sizeof(uint32_t)) +
                            (size_t)most * 12 + (size_t)(hi + 1) * 4);
    return PARTD_OK;
}

int tr_dp_init(tr_dp *d, const tr_model *md, const partd_cancel *cancel)
{
    memset(d, 0, sizeof *d);
    d->md = md;
    d->cancel = cancel;
    for (uint32_t j = 0; j < md->n_classes; j++)
        if (md->cls_speed[j] * md->M > d->fastest_m)
            d->fastest_m = md->cls_speed[j] * md->M;
    int rc = md->opt->device_order_auto ? init_auto(d) : init_given(d);
    if (rc == PARTD_OK)
        rc = tr_rows_init(md, &d->rows);
    tr_mem(md, d->counted);
    return rc;
}

void tr_dp_free(tr_dp *d)
{
    if (d->md)
        tr_mem(d->md, -d->counted);
    tr_rows_free(d->rows);
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
    free(d->node_parent);
    free(d->node_cls);
    free(d->node_depth);
    free(d->tail_node);
    free(d->h);
    free(d->h_pick);
    memset(d, 0, sizeof *d);
}

tr_final tr_dp_solve(tr_dp *d)
{
    const tr_model *md = d->md;
    tr_final best = {INFINITY, 0, 0};
    uint32_t fixed = md->opt->stages;
    md->stats->passes++;
    if (!md->opt->device_order_auto)
        return solve_given(d);
    run_auto(d);
    for (uint32_t s = 1; s < d->Q && d->rc == PARTD_OK; s++) {
        double v = d->f[s];
        if ((fixed && d->qsum[s] != fixed) || !(v < best.value))
            continue;
        best = (tr_final){v, s, d->qsum[s]};
    }
    return best;
}

/* ---- the recorded plan ------------------------------------------------------ */

/* The front's stages back from the tail's start, then the tail's. */
static int extract_given(const tr_dp *d, tr_final f, tr_solution *sol)
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
    uint32_t node = d->tail_node[f.S];
    for (uint32_t q = L; q >= 1; q--) {
        uint32_t p = f.S - q, b = d->h_pick[(size_t)node * N1 + a];
        sol->stages[p] = (tr_pick){a, b, md->dev_class[p], p, tr_k(md, q)};
        a = b;
        node = d->node_parent[node];
    }
    return a == md->n_units ? PARTD_OK : PARTD_EINTERNAL;
}

int tr_dp_extract(const tr_dp *d, tr_final f, tr_solution *sol)
{
    const tr_model *md = d->md;
    memset(sol, 0, sizeof *sol);
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
