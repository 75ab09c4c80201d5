/*
 * sac_milp.c - PyTorch's sac_milp model on COIN-OR CBC; see sac_milp.h.
 *
 * Variables per module j that may be checkpointed (the others have y_j = 0,
 * hence r_j = d_j = rcp_j = 0, and need no columns):
 *   y_j in {0,1}, r_j in [0,1], rcp_j >= 0 (recompute fraction),
 *   s_j in [0,1]  number of checkpointed modules on the path from the root to
 *                 j: s_j = s_e + y_j for the nearest eligible ancestor e, so
 *                 s_j <= 1 forbids nested checkpointing with O(n) rows (and is
 *                 the stronger clique form of PyTorch's pairwise rows),
 *   E_j           running sum of discards d over eligible modules up to j in
 *                 forward post-order: E_j = E_prev + ACM_j r_j - (ACM_j - IA_j) y_j,
 *                 so that "sum of d over modules earlier in post-order" is one
 *                 variable instead of an O(n) expression per module.
 * and one variable `peak`. Rows:
 *   r_j <= y_j,  r_j >= (1 - IA_j / ACM_j) y_j,
 *   rcp_j >= slope_k r_j + intercept_k y_j   (per segment k: exact, no big-M;
 *                                             at y_j = 0 it reads rcp_j >= 0),
 *   peak + E_last(i) >= act_i + fixed_i / world_size  for every module i, where
 *        E_last(i) is the running sum just before i; modules sharing E_last(i)
 *        share one row with the largest right-hand side,
 *   objective sum_j sac_runtime_j rcp_j (or `peak` for the min-peak problem).
 * Memory is scaled from bytes to GiB (an exact power-of-two scaling) so that
 * CBC's absolute tolerances act on numbers near 1; times stay in ms.
 */
#include "sac_milp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "solver/milp.h"

#define GIB 1073741824.0
#define INF PARTD_MILP_INF

/* ---- the module-level model --------------------------------------------- */

typedef struct cols {
    int *y, *r, *rcp, *s, *e; /* per module, -1 when absent */
    int peak;
} cols;

static int cols_alloc(cols *c, uint32_t n)
{
    int **arrs[5] = { &c->y, &c->r, &c->rcp, &c->s, &c->e };
    for (int k = 0; k < 5; k++) {
        *arrs[k] = malloc((n ? n : 1) * sizeof(int));
        if (!*arrs[k])
            return -1;
        for (uint32_t i = 0; i < n; i++)
            (*arrs[k])[i] = -1;
    }
    return 0;
}

static void cols_free(cols *c)
{
    free(c->y);
    free(c->r);
    free(c->rcp);
    free(c->s);
    free(c->e);
}

/* y, r, rcp, s columns and their rows for eligible module j. */
static void add_module(partd_milp *b, const partd_sac_tree *t, partd_sac_goal goal,
                       cols *c, uint32_t j)
{
    const partd_module *mod = &t->m->mods[j];
    c->y[j] = partd_milp_add_col(b, 0, 1, 0, 1);
    if (t->eligible_parent[j] == PARTD_NONE) {
        c->s[j] = c->y[j];
    } else { /* s_j - s_e - y_j = 0, s_j <= 1 */
        c->s[j] = partd_milp_add_col(b, 0, 1, 0, 0);
        int cs[3] = { c->s[j], c->s[t->eligible_parent[j]], c->y[j] };
        double vs[3] = { 1, -1, -1 };
        partd_milp_add_row(b, 0, 0, 3, cs, vs);
    }
    if (goal == PARTD_SAC_MIN_PEAK)
        return; /* r_j = y_j: full discard, the least memory */
    c->r[j] = partd_milp_add_col(b, 0, 1, 0, 0);
    int cr[2] = { c->r[j], c->y[j] };
    double vr[2] = { 1, -1 };
    partd_milp_add_row(b, -INF, 0, 2, cr, vr);
    if (t->acm[j] > 0 && t->acm[j] > t->ia[j]) {
        double lo = (double)(t->acm[j] - t->ia[j]) / (double)t->acm[j];
        double vl[2] = { 1, -lo };
        partd_milp_add_row(b, 0, INF, 2, cr, vl);
    }
    if (mod->sac_runtime > 0 && mod->n_segments > 0) {
        c->rcp[j] = partd_milp_add_col(b, 0, INF, mod->sac_runtime, 0);
        for (uint32_t k = 0; k < mod->n_segments; k++) {
            int cc[3] = { c->rcp[j], c->r[j], c->y[j] };
            double vc[3] = { 1, -mod->slopes[k], -mod->intercepts[k] };
            partd_milp_add_row(b, 0, INF, 3, cc, vc);
        }
    }
}

/* Running sums of discards in forward post-order and the peak rows. */
static void add_memory_rows(partd_milp *b, const partd_sac_tree *t,
                            partd_sac_goal goal, cols *c, double *peak_floor)
{
    int last = -1;       /* E column of the latest eligible module */
    double rhs = -INF;   /* largest right-hand side sharing `last` */
    *peak_floor = 0;
    for (uint32_t k = 0; k < t->n; k++) {
        uint32_t i = t->m->post_order[k];
        double need = ((double)t->act[i] +
                       (double)t->fixed[i] / (double)t->world_size) / GIB;
        if (last < 0 && need > *peak_floor)
            *peak_floor = need;
        if (last >= 0 && need > rhs)
            rhs = need;
        if (!t->eligible[i])
            continue;
        if (last >= 0 && rhs > -INF) { /* close the group of `last` */
            int cp[2] = { c->peak, last };
            double vp[2] = { 1, 1 };
            partd_milp_add_row(b, rhs, INF, 2, cp, vp);
        }
        c->e[i] = partd_milp_add_col(b, -INF, INF, 0, 0);
        double acm = (double)t->acm[i] / GIB, ia = (double)t->ia[i] / GIB;
        int ce[4], n = 0;
        double ve[4];
        ce[n] = c->e[i], ve[n++] = 1;
        if (last >= 0)
            ce[n] = last, ve[n++] = -1;
        if (goal == PARTD_SAC_MIN_PEAK) {
            ce[n] = c->y[i], ve[n++] = -ia;
        } else {
            ce[n] = c->y[i], ve[n++] = acm - ia;
            ce[n] = c->r[i], ve[n++] = -acm;
        }
        partd_milp_add_row(b, 0, 0, n, ce, ve);
        last = c->e[i];
        rhs = -INF;
    }
    if (last >= 0 && rhs > -INF) {
        int cp[2] = { c->peak, last };
        double vp[2] = { 1, 1 };
        partd_milp_add_row(b, rhs, INF, 2, cp, vp);
    }
}

static void extract(const partd_sac_tree *t, const cols *c, const double *x,
                    partd_sac_goal goal, partd_sac_milp_out *out)
{
    for (uint32_t i = 0; i < t->n; i++) {
        out->y[i] = c->y[i] >= 0 && x[c->y[i]] > 0.5;
        if (!out->y[i])
            out->r[i] = 0;
        else if (goal == PARTD_SAC_MIN_PEAK)
            out->r[i] = 1;
        else
            out->r[i] = fmin(1.0, fmax(0.0, x[c->r[i]]));
    }
}

int partd__sac_milp_solve(const partd_sac_tree *t, const partd_sac_milp_params *p,
                         partd_sac_milp_out *out)
{
    partd_milp b;
    memset(&b, 0, sizeof b);
    cols c;
    memset(&c, 0, sizeof c);
    int rc = PARTD_ENOMEM;
    if (cols_alloc(&c, t->n) < 0)
        goto done;
    int min_peak = p->goal == PARTD_SAC_MIN_PEAK;
    /* The peak column first: its bounds are set once the floor is known. */
    c.peak = partd_milp_add_col(&b, 0, min_peak ? INF : p->cap_bytes / GIB,
                                min_peak ? 1 : 0, 0);
    for (uint32_t j = 0; j < t->n; j++)
        if (t->eligible[j])
            add_module(&b, t, p->goal, &c, j);
    double floor_gib = 0;
    add_memory_rows(&b, t, p->goal, &c, &floor_gib);
    if (b.oom)
        goto done;
    b.col_lb[c.peak] = floor_gib;
    if (!min_peak && floor_gib > b.col_ub[c.peak]) {
        out->status = PARTD_SAC_SOLVED_INFEASIBLE;
        rc = PARTD_OK;
        goto done;
    }
    double *x = malloc((size_t)b.n_cols * sizeof *x);
    if (!x)
        goto done;
    partd_milp_params mp = { p->time_limit_s, min_peak ? 0 : p->relative_gap, 0, p->env };
    partd_milp_result r = { PARTD_MILP_NONE, 0, 0, x };
    rc = partd_milp_solve(&b, &mp, &r);
    out->status = (partd_sac_solve_status)r.status;
    out->objective = r.objective * (min_peak ? GIB : 1);
    out->gap = r.gap;
    if (rc == PARTD_OK && (r.status == PARTD_MILP_OPTIMAL || r.status == PARTD_MILP_FEASIBLE))
        extract(t, &c, x, p->goal, out);
    free(x);
done:
    cols_free(&c);
    partd_milp_free(&b);
    return rc;
}

/* ---- the op-level knapsack ---------------------------------------------- */

int partd__sac_knapsack_solve(uint32_t n, const double *value,
                             const double *weight, double cap,
                             double time_limit_s, const partd_solver_env *env, uint8_t *x,
                             partd_sac_solve_status *status)
{
    *status = PARTD_SAC_SOLVED_NONE;
    partd_milp b;
    memset(&b, 0, sizeof b);
    int rc = PARTD_ENOMEM;
    int *cols_idx = malloc((n ? n : 1) * sizeof *cols_idx);
    if (!cols_idx)
        goto done;
    /* Weights scaled by the largest so CBC's tolerances act near 1. */
    double scale = 1;
    for (uint32_t i = 0; i < n; i++)
        if (weight[i] > scale)
            scale = weight[i];
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w)
        goto done;
    for (uint32_t i = 0; i < n; i++) {
        cols_idx[i] = partd_milp_add_col(&b, 0, 1, -value[i], 1); /* CBC minimises */
        w[i] = weight[i] / scale;
    }
    partd_milp_add_row(&b, -INF, cap / scale, (int)n, cols_idx, w);
    free(w);
    if (b.oom)
        goto done;
    double *sol = malloc((size_t)b.n_cols * sizeof *sol);
    if (!sol)
        goto done;
    partd_milp_params mp = { time_limit_s, 0, 1, env };
    partd_milp_result r = { PARTD_MILP_NONE, 0, 0, sol };
    rc = partd_milp_solve(&b, &mp, &r);
    *status = (partd_sac_solve_status)r.status;
    for (uint32_t i = 0; rc == PARTD_OK && i < n; i++)
        if (r.status == PARTD_MILP_OPTIMAL || r.status == PARTD_MILP_FEASIBLE)
            x[i] = sol[cols_idx[i]] > 0.5;
    free(sol);
done:
    free(cols_idx);
    partd_milp_free(&b);
    return rc;
}
