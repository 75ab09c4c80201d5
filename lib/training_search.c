/*
 * training_search.c - the exact search over stage counts, device orders and
 * splits of the training planner; see training_search.h. The DP at one
 * bound is training_dp.c.
 *
 * step = sum of stage times + (M - 1) * largest stage time. For a bound B on
 * the largest time, the DP gives the least sum DP(B) over plans whose every
 * stage takes at most B, and a plan reaching it, whose own largest time m
 * is a stage value (a candidate) with DP(m) = DP(B). DP never rises with B
 * and changes only at candidates; the optimum is, over the candidates where
 * DP drops (each level's least bound), the least DP(B) + (M - 1) * B, as in
 * Alpa's inter-operator DP. The candidates are not stored: the search
 * bisects the values between two bounds (lo, hi) whose DPs differ, and the
 * DP at x also says the least candidate above x (its rows see every stage
 * value), so:
 *   - the plan found at x covers the candidates [m, x] (DP constant there);
 *     (lo, m) and (x, hi) remain, each with fewer candidates;
 *   - an interval whose DPs at the ends agree holds no drop, and one whose
 *     least possible step (DP(hi) + (M - 1) * least candidate above lo)
 *     cannot beat the best found is skipped.
 * It starts from the least achievable bottleneck (the same DP with max for
 * sum) and the unbounded DP. Memory: one DP and one row of stage values at
 * a time.
 *
 * Ties: among plans of equal step, the one with the least bottleneck; at
 * one bound, the DP's first best in its fixed order.
 */
#include "training_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "training_dp.h"

typedef struct bound_search {
    tr_dp *d;
    double Mm1;
    double best_step, best_bound;
    tr_solution best;          /* the plan of best_step */
} bound_search;

/* The largest stage value of sol (its bottleneck), computed again from the
 * rows: the values the DP compared. */
static int bottleneck(const tr_dp *d, const tr_solution *sol, double *out)
{
    const tr_model *md = d->md;
    *out = -INFINITY;
    for (uint32_t p = 0; p < sol->S; p++) {
        const tr_pick *pk = &sol->stages[p];
        const double *row;
        int rc = tr_row(d->rows, pk->a, pk->b - pk->a, &row);
        if (rc != PARTD_OK)
            return rc;
        double t = row[tr_row_index(md, pk->a, pk->b, pk->cls, tr_kidx(md, pk->k))];
        if (t > *out)
            *out = t;
    }
    return PARTD_OK;
}

/* The DP at bound x: *v its sum (INFINITY when no plan), *m the bottleneck
 * of its plan, *succ the least stage value above x. The plan becomes the
 * best when its step is less, or equal with a lesser bottleneck. */
static int eval_at(bound_search *bs, double x, double *v, double *m, double *succ)
{
    tr_dp *d = bs->d;
    int rc = partd_cancel_check(d->cancel);
    if (rc != PARTD_OK)
        return rc;
    d->bound = x;
    d->want_succ = 1;
    d->succ_of = x;
    d->succ = INFINITY;
    tr_final f = tr_dp_solve(d);
    d->want_succ = 0;
    if (d->rc != PARTD_OK)
        return d->rc;
    *v = f.value;
    *succ = d->succ;
    *m = INFINITY;
    if (isinf(f.value))
        return PARTD_OK;
    tr_solution sol;
    rc = tr_dp_extract(d, f, &sol);
    if (rc == PARTD_OK)
        rc = bottleneck(d, &sol, m);
    if (rc != PARTD_OK) {
        tr_solution_free(&sol);
        return rc;
    }
    double step = f.value + bs->Mm1 * *m;
    if (step < bs->best_step || (step == bs->best_step && *m < bs->best_bound)) {
        tr_solution_free(&bs->best);
        bs->best = sol;
        bs->best_step = step;
        bs->best_bound = *m;
    } else {
        tr_solution_free(&sol);
    }
    return PARTD_OK;
}

/* The candidates strictly between lo (DP vlo, least candidate above it slo)
 * and the candidate hi (DP vhi <= vlo). */
static int search_between(bound_search *bs, double lo, double vlo, double slo, double hi,
                          double vhi)
{
    if (vlo == vhi || !(slo < hi))
        return PARTD_OK;
    double least = vhi + bs->Mm1 * slo;
    if (least > bs->best_step || (least == bs->best_step && bs->best_bound <= slo))
        return PARTD_OK;
    double x = lo + (hi - lo) / 2, v, m, succ;
    if (!(x >= slo && x < hi))
        x = slo;
    int rc = eval_at(bs, x, &v, &m, &succ);
    if (rc != PARTD_OK)
        return rc;
    if (isinf(v))
        return PARTD_EINTERNAL; /* DP(x) <= DP(lo), which has a plan */
    if (m > lo && (rc = search_between(bs, lo, vlo, slo, m, v)) != PARTD_OK)
        return rc;
    return search_between(bs, x, v, succ, hi, vhi);
}

/* One DP without a bound (sum, or max in shortfall mode): its plan. */
static int unbounded(tr_dp *d, tr_solution *sol)
{
    d->bound = INFINITY;
    tr_final f = tr_dp_solve(d);
    if (d->rc != PARTD_OK)
        return d->rc;
    if (isinf(f.value))
        return PARTD_OK; /* sol->found = 0 */
    int rc = tr_dp_extract(d, f, sol);
    sol->found = rc == PARTD_OK;
    return rc;
}

static int bounded(tr_dp *d, tr_solution *sol)
{
    const tr_model *md = d->md;
    bound_search bs = {d, (double)md->M - 1, INFINITY, INFINITY, {0}};
    double v_top, m_top, s_top, v_lo, m_lo, s_lo;
    int rc = eval_at(&bs, INFINITY, &v_top, &m_top, &s_top);
    if (rc != PARTD_OK || isinf(v_top))
        goto out; /* sol->found = 0 */
    /* No bound below the least achievable bottleneck has a plan: find it
     * with the same DP taking the max instead of the sum. */
    d->max_mode = 1;
    d->bound = INFINITY;
    double least_max = tr_dp_solve(d).value;
    d->max_mode = 0;
    if ((rc = d->rc) != PARTD_OK)
        goto out;
    if ((rc = eval_at(&bs, least_max, &v_lo, &m_lo, &s_lo)) != PARTD_OK)
        goto out;
    if (isinf(v_lo)) {
        rc = PARTD_EINTERNAL; /* the least bottleneck has a plan */
        goto out;
    }
    rc = search_between(&bs, least_max, v_lo, s_lo, m_top, v_top);
out:
    if (rc == PARTD_OK && bs.best.stages) {
        *sol = bs.best;
        sol->found = 1;
    } else {
        tr_solution_free(&bs.best);
    }
    return rc;
}

int tr_search(const tr_model *md, const partd_cancel *cancel, tr_solution *sol)
{
    tr_dp d;
    memset(sol, 0, sizeof *sol);
    int rc = tr_dp_init(&d, md, cancel);
    if (rc == PARTD_OK) {
        d.max_mode = md->shortfall;
        rc = !md->shortfall && md->M > 1 ? bounded(&d, sol) : unbounded(&d, sol);
    }
    sol->frontier_limit = rc == PARTD_ETOOBIG && d.frontier_limit;
    if (rc != PARTD_OK)
        tr_solution_free(sol);
    tr_dp_free(&d);
    return rc;
}

void tr_solution_free(tr_solution *sol)
{
    int frontier_limit = sol->frontier_limit;
    free(sol->stages);
    memset(sol, 0, sizeof *sol);
    sol->frontier_limit = frontier_limit;
}
