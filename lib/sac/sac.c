/*
 * sac.c - the SAC planner: options.sac on graph.modules; see sac.h and
 * api/sac.md for the formulation.
 *
 * Flow: resolve ac_units/fsdp_units against the modules (422 on unknown
 * names), derive the model constants (sac_model.c), score the plan without
 * checkpointing (the baseline), solve the min-recompute MILP under the budget
 * (sac_milp.c), round the discard ratios to 4 decimals and re-score the
 * rounded plan exactly; when the budget cannot be met, solve the min-peak
 * MILP instead to say how far it is; then op-level policies and the frontier
 * when asked.
 *
 * Every figure in the result comes from the exact scoring of the rounded
 * plan, never from solver variables. A rounded plan is never reported above
 * its budget: rounding to nearest is tried first (PyTorch), then rounding up
 * (more discard, less memory), then full discard for the chosen modules.
 *
 * Time: time_limit_ms bounds the whole planner (every solve gets what is left
 * of it), capped by the job's deadline. Every solve runs in a child process
 * (milp.h) that a cancel kills at once; a solver crash fails the plan with
 * PARTD_EINTERNAL and a problem document, never the process.
 *
 * A budget below the least peak any plan reaches fails the plan with
 * PARTD_EINFEASIBLE and a problem carrying min_peak_memory_bytes.
 */
#include "sac.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/modules.h"
#include "partd/clock.h"
#include "partd/enums.h"
#include "partd/partd.h"
#include "sac_milp.h"
#include "sac_model.h"
#include "sac_oplevel.h"
#include "sac_result.h"

/* When no rounding of the solver's answer at the budget fits it exactly (the
 * answer used CBC's feasibility tolerance, ~1e-7 GiB, about 100 bytes), the
 * solver is run again with the budget minus this margin, whose answers do. */
#define SOLVER_MARGIN_BYTES 4096.0

typedef struct planner {
    const partd_sac_tree *t;
    const partd_cancel *cancel;
    partd_solver_env env;    /* cancel, problem, solver memory limit */
    int64_t deadline_ns;
    double relative_gap;
    int64_t baseline;
    int has_min_peak;
    int64_t min_peak;
    partd_sac_status min_peak_status;
    partd_sac_plan_vec min_plan;
} planner;

/* ---- time --------------------------------------------------------------- */

/* Seconds left for a solve; PARTD_ETIMEOUT/ECANCELLED when none. */
static int time_left(const planner *pl, double *seconds)
{
    int rc = partd_cancel_check(pl->cancel);
    if (rc != PARTD_OK)
        return rc;
    int64_t now = partd_clock_ns();
    *seconds = (double)(pl->deadline_ns - now) / 1e9;
    return PARTD_OK;
}

/* ---- rounding ----------------------------------------------------------- */

typedef enum rounding { ROUND_NEAREST, ROUND_UP, ROUND_FULL } rounding;

static void round_plan(const partd_sac_tree *t, const uint8_t *y, const double *r,
                       rounding how, partd_sac_plan_vec *p)
{
    for (uint32_t i = 0; i < t->n; i++) {
        p->y[i] = y[i];
        if (!y[i]) {
            p->ratio_e4[i] = 0;
            continue;
        }
        double scaled = r[i] * PARTD_SAC_RATIO_SCALE;
        int32_t k = how == ROUND_NEAREST ? (int32_t)floor(scaled + 0.5)
                  : how == ROUND_UP      ? (int32_t)ceil(scaled - 1e-9)
                                         : PARTD_SAC_RATIO_SCALE;
        if (k < t->min_ratio_e4[i])
            k = t->min_ratio_e4[i];
        if (k > PARTD_SAC_RATIO_SCALE)
            k = PARTD_SAC_RATIO_SCALE;
        p->ratio_e4[i] = k;
    }
}

/* The first rounding of the solver's (y, r) that fits cap; 0 when none. */
static int round_to_fit(const partd_sac_tree *t, const uint8_t *y, const double *r,
                        int64_t cap, partd_sac_plan_vec *p)
{
    for (int how = ROUND_NEAREST; how <= ROUND_FULL; how++) {
        round_plan(t, y, r, (rounding)how, p);
        if (partd__sac_fits(t, p, cap))
            return 1;
    }
    return 0;
}

static void score_answer(const partd_sac_tree *t, partd_sac_answer *a)
{
    partd_sac_score s;
    partd__sac_evaluate(t, &a->plan, &s);
    a->peak_bytes = s.peak_bytes;
    a->recompute_ms = s.recompute_ms;
}

static void copy_plan(uint32_t n, const partd_sac_plan_vec *from,
                      partd_sac_plan_vec *to)
{
    memcpy(to->y, from->y, n * sizeof *to->y);
    memcpy(to->ratio_e4, from->ratio_e4, n * sizeof *to->ratio_e4);
}

/* ---- solves ------------------------------------------------------------- */

typedef struct raw {
    uint8_t *y;
    double *r;
} raw;

static int milp(planner *pl, partd_sac_goal goal, double cap, raw *x,
                partd_sac_milp_out *out)
{
    double left;
    int rc = time_left(pl, &left);
    if (rc != PARTD_OK)
        return rc;
    memset(out, 0, sizeof *out);
    out->y = x->y;
    out->r = x->r;
    if (left <= 0) {
        out->status = PARTD_SAC_SOLVED_NONE;
        return PARTD_OK;
    }
    partd_sac_milp_params params = { goal, cap, left, pl->relative_gap, &pl->env };
    rc = partd__sac_milp_solve(pl->t, &params, out);
    if (rc == PARTD_OK)
        rc = partd_cancel_check(pl->cancel);
    return rc;
}

/* The least peak of any plan (full discard in the chosen modules). */
static int ensure_min_peak(planner *pl, raw *x)
{
    if (pl->has_min_peak)
        return PARTD_OK;
    const partd_sac_tree *t = pl->t;
    memset(pl->min_plan.y, 0, t->n);
    memset(pl->min_plan.ratio_e4, 0, t->n * sizeof *pl->min_plan.ratio_e4);
    pl->min_peak_status = PARTD_SAC_OPTIMAL;
    if (t->n_eligible > 0) {
        partd_sac_milp_out out;
        int rc = milp(pl, PARTD_SAC_MIN_PEAK, 0, x, &out);
        if (rc != PARTD_OK)
            return rc;
        if (out.status == PARTD_SAC_SOLVED_NONE ||
            out.status == PARTD_SAC_SOLVED_INFEASIBLE)
            return PARTD_ETIMEOUT; /* the min-peak problem is always feasible */
        pl->min_peak_status = out.status == PARTD_SAC_SOLVED_OPTIMAL ? PARTD_SAC_OPTIMAL
                                                                     : PARTD_SAC_FEASIBLE;
        round_plan(t, x->y, x->r, ROUND_FULL, &pl->min_plan);
    }
    partd_sac_score s;
    partd__sac_evaluate(t, &pl->min_plan, &s);
    pl->min_peak = s.peak_bytes < pl->baseline ? s.peak_bytes : pl->baseline;
    if (s.peak_bytes >= pl->baseline) /* no checkpointing is as good */
        memset(pl->min_plan.y, 0, t->n);
    pl->has_min_peak = 1;
    return PARTD_OK;
}

static void set_status(partd_sac_answer *a, const partd_sac_milp_out *out)
{
    a->status = out->status == PARTD_SAC_SOLVED_OPTIMAL ? PARTD_SAC_OPTIMAL : PARTD_SAC_FEASIBLE;
    a->gap = out->status == PARTD_SAC_SOLVED_OPTIMAL ? 0 : out->gap;
}

/* One min-recompute solve at `solver_cap`; *fitted when a rounding of its
 * solution fits `cap` exactly (then a->plan and the status are set). */
static int try_solve(planner *pl, int64_t cap, double solver_cap, raw *x,
                     partd_sac_answer *a, partd_sac_solve_status *status, int *fitted)
{
    partd_sac_milp_out out;
    int rc = milp(pl, PARTD_SAC_MIN_RECOMPUTE, solver_cap, x, &out);
    *fitted = 0;
    *status = out.status;
    if (rc != PARTD_OK)
        return rc;
    if ((out.status == PARTD_SAC_SOLVED_OPTIMAL ||
         out.status == PARTD_SAC_SOLVED_FEASIBLE) &&
        round_to_fit(pl->t, x->y, x->r, cap, &a->plan)) {
        set_status(a, &out);
        *fitted = 1;
    }
    return PARTD_OK;
}

/* When no rounding of the solver's answers fits: the budget sits within the
 * solver's tolerance of the least peak. The min-peak plan fits whenever
 * anything does. */
static int fall_back_to_min_peak(planner *pl, int64_t cap, raw *x, partd_sac_answer *a)
{
    int rc = ensure_min_peak(pl, x);
    if (rc != PARTD_OK)
        return rc;
    if (pl->min_peak > cap) {
        a->status = PARTD_SAC_INFEASIBLE;
        return PARTD_OK;
    }
    copy_plan(pl->t->n, &pl->min_plan, &a->plan);
    a->status = PARTD_SAC_FEASIBLE;
    a->gap = 0;
    return PARTD_OK;
}

/* Solves at the budget itself (so that an optimum on the 4-decimal grid is
 * reported as is); when rounding cannot make that answer fit, solves again
 * with SOLVER_MARGIN_BYTES of slack. */
static int solve_milps(planner *pl, int64_t cap, raw *x, partd_sac_answer *a)
{
    partd_sac_solve_status st;
    int fitted = 0;
    int rc = try_solve(pl, cap, (double)cap, x, a, &st, &fitted);
    if (rc != PARTD_OK || fitted)
        return rc;
    if (st == PARTD_SAC_SOLVED_NONE) {
        a->status = PARTD_SAC_NO_SOLUTION;
        return PARTD_OK;
    }
    if (st != PARTD_SAC_SOLVED_INFEASIBLE) {
        rc = try_solve(pl, cap, (double)cap - SOLVER_MARGIN_BYTES, x, a, &st, &fitted);
        if (rc != PARTD_OK || fitted)
            return rc;
        if (st == PARTD_SAC_SOLVED_NONE) {
            a->status = PARTD_SAC_NO_SOLUTION;
            return PARTD_OK;
        }
    }
    return fall_back_to_min_peak(pl, cap, x, a);
}

/* The min-recompute plan whose peak is at most cap bytes. */
static int solve_at_cap(planner *pl, int64_t cap, raw *x, partd_sac_answer *a)
{
    const partd_sac_tree *t = pl->t;
    memset(a->plan.y, 0, t->n);
    memset(a->plan.ratio_e4, 0, t->n * sizeof *a->plan.ratio_e4);
    a->budget_bytes = cap + t->reserve_bytes;
    a->gap = 0;
    int rc = PARTD_OK;
    if (pl->baseline <= cap)
        a->status = PARTD_SAC_OPTIMAL; /* no recomputation at all: the optimum */
    else if (t->n_eligible == 0 || (pl->has_min_peak && pl->min_peak > cap))
        a->status = PARTD_SAC_INFEASIBLE;
    else
        rc = solve_milps(pl, cap, x, a);
    if (rc == PARTD_OK && (a->status == PARTD_SAC_OPTIMAL || a->status == PARTD_SAC_FEASIBLE))
        score_answer(t, a);
    return rc;
}

/* ---- unit resolution ---------------------------------------------------- */

static int resolve_units(const partd_request *req, const uint32_t *names,
                         uint32_t n, const char *what, uint32_t *out,
                         partd_problem *problem)
{
    int bad = 0;
    for (uint32_t k = 0; k < n; k++) {
        out[k] = partd_modules_find(req->modules, names[k]);
        if (out[k] == PARTD_NONE) {
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/options/sac/%s/%u", what, k);
            partd_problem_add(problem, ptr, "no module \"%s\" in graph.modules",
                              partd_str(&req->strings, names[k]));
            bad = 1;
        }
    }
    return bad;
}

static int invalid(partd_problem *problem)
{
    partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                      "options.sac does not fit graph.modules");
    return PARTD_EINVALID;
}

/* Builds the tree from the options; PARTD_EINVALID with the problem filled
 * when a unit is unknown or the FSDP units leave out the root. */
static int build_tree(const partd_request *req, partd_sac_tree *t,
                      partd_problem *problem)
{
    const partd_sac_options *o = &req->options.sac;
    /* Empty lists mean "not given", as PyTorch's `if ac_units:`. */
    uint32_t n_ac = o->has_ac_units ? o->n_ac_units : 0;
    uint32_t n_fsdp = o->has_fsdp_units ? o->n_fsdp_units : 0;
    uint32_t *ac = malloc((n_ac + 1) * sizeof *ac);
    uint32_t *fsdp = malloc((n_fsdp + 1) * sizeof *fsdp);
    int rc = PARTD_ENOMEM;
    if (!ac || !fsdp)
        goto done;
    int bad = resolve_units(req, o->ac_units, n_ac, "ac_units", ac, problem);
    bad |= resolve_units(req, o->fsdp_units, n_fsdp, "fsdp_units", fsdp, problem);
    int root_unit = n_fsdp == 0;
    for (uint32_t k = 0; k < n_fsdp; k++)
        root_unit |= fsdp[k] == 0;
    if (!bad && !root_unit) {
        partd_problem_add(problem, "/options/sac/fsdp_units",
                          "the root module \"%s\" must be an FSDP unit",
                          partd_str(&req->strings, req->modules->mods[0].fqn));
        bad = 1;
    }
    if (bad) {
        rc = invalid(problem);
        goto done;
    }
    rc = partd__sac_tree_build(req->modules, o->world_size, n_ac ? ac : NULL, n_ac,
                              fsdp, n_fsdp, t);
done:
    free(ac);
    free(fsdp);
    return rc;
}

/* ---- op level ----------------------------------------------------------- */

static int op_policies(planner *pl, struct partd_sac_result *res)
{
    const partd_modules *m = pl->t->m;
    res->policies = calloc(m->n, sizeof *res->policies);
    if (!res->policies)
        return PARTD_ENOMEM;
    for (uint32_t i = 0; i < m->n; i++) {
        const partd_sac_stats *s = m->mods[i].sac_stats;
        if (!res->main.plan.y[i] || !s)
            continue;
        partd_sac_module_policy *op = &res->policies[i];
        op->ops = calloc(s->n_ops ? s->n_ops : 1, 1);
        if (!op->ops)
            return PARTD_ENOMEM;
        double left;
        int rc = time_left(pl, &left);
        if (rc != PARTD_OK)
            return rc;
        if (left <= 0)
            return PARTD_ETIMEOUT;
        double r = (double)res->main.plan.ratio_e4[i] / PARTD_SAC_RATIO_SCALE;
        rc = partd__sac_op_policy(s, 1.0 - r, left, &pl->env, op->ops, &op->feasible);
        if (rc == PARTD_ETIMEOUT && partd_cancel_check(pl->cancel) != PARTD_OK)
            rc = partd_cancel_check(pl->cancel); /* cancelled, not out of time */
        if (rc != PARTD_OK)
            return rc;
        op->computed = 1;
    }
    return PARTD_OK;
}

/* ---- frontier ----------------------------------------------------------- */

static int frontier(planner *pl, uint32_t points, struct partd_sac_result *res,
                    raw *x)
{
    res->frontier = calloc(points, sizeof *res->frontier);
    if (!res->frontier)
        return PARTD_ENOMEM;
    res->n_frontier = points;
    for (uint32_t k = 0; k < points; k++)
        if (partd__sac_plan_vec_alloc(&res->frontier[k].plan, pl->t->n) != PARTD_OK)
            return PARTD_ENOMEM;
    __int128 span = (__int128)(pl->baseline - pl->min_peak);
    for (uint32_t k = 0; k < points; k++) {
        int64_t cap = pl->min_peak + (int64_t)(span * k / (points - 1));
        int rc = solve_at_cap(pl, cap, x, &res->frontier[k]);
        if (rc == PARTD_ETIMEOUT && partd_cancel_check(pl->cancel) == PARTD_OK)
            rc = PARTD_OK, res->frontier[k].status = PARTD_SAC_NO_SOLUTION;
        if (rc != PARTD_OK)
            return rc;
    }
    return PARTD_OK;
}

/* ---- entry -------------------------------------------------------------- */

static int no_plan(const partd_request *req, partd_problem *problem)
{
    partd_problem_set(problem, 422, "sac-time-limit", "No SAC plan in time",
                      "the solver found no checkpointing plan within "
                      "options.sac.time_limit_ms (%.0f ms)",
                      req->options.sac.time_limit_ms);
    return PARTD_ETIMEOUT;
}

/* The budget is below the least peak: the plan fails, and says how far. */
static int infeasible_budget(const partd_request *req, const planner *pl,
                             const struct partd_sac_result *res, partd_problem *problem)
{
    int64_t least = pl->min_peak + pl->t->reserve_bytes; /* as a budget */
    char budget[PARTD_PROBLEM_BYTES_CAP], peak[PARTD_PROBLEM_BYTES_CAP],
        need[PARTD_PROBLEM_BYTES_CAP];
    partd_problem_bytes(need, (double)least);
    partd_problem_set(problem, 422, "infeasible", "No feasible SAC plan",
                      "no checkpointing plan fits options.sac.memory_budget_bytes (%s): the "
                      "least peak any plan reaches is %s, so the budget must be at least %s "
                      "(%lld bytes)",
                      partd_problem_bytes(budget, (double)req->options.sac.memory_budget_bytes),
                      partd_problem_bytes(peak, (double)pl->min_peak), need, (long long)least);
    partd_problem_add(problem, "/options/sac/memory_budget_bytes",
                      "below %s (%lld bytes), the least budget any plan fits", need,
                      (long long)least);
    partd_problem_set_int(problem, "min_peak_memory_bytes", pl->min_peak);
    partd_problem_set_int(problem, "baseline_peak_memory_bytes", pl->baseline);
    partd_problem_set_int(problem, "budget_bytes", req->options.sac.memory_budget_bytes);
    if (res->has_fsdp)
        partd_problem_set_int(problem, "fsdp_reserved_bytes", pl->t->reserve_bytes);
    return PARTD_EINFEASIBLE;
}

static int run(const partd_request *req, planner *pl, struct partd_sac_result *res,
               raw *x, partd_problem *problem)
{
    const partd_sac_tree *t = pl->t;
    int64_t cap = req->options.sac.memory_budget_bytes - t->reserve_bytes;
    int rc = solve_at_cap(pl, cap, x, &res->main);
    if (rc != PARTD_OK)
        return rc;
    res->main.budget_bytes = req->options.sac.memory_budget_bytes;
    if (res->main.status == PARTD_SAC_NO_SOLUTION)
        return no_plan(req, problem);
    int infeasible = res->main.status == PARTD_SAC_INFEASIBLE;
    int want_frontier = req->options.sac.frontier_points >= 2;
    if (infeasible || want_frontier) {
        rc = ensure_min_peak(pl, x);
        if (rc == PARTD_ETIMEOUT && partd_cancel_check(pl->cancel) == PARTD_OK) {
            /* The diagnosis needs the least peak; a frontier without its
             * first point is left out, the plan itself stands. */
            if (infeasible)
                return no_plan(req, problem);
            want_frontier = 0;
            rc = PARTD_OK;
        }
        if (rc != PARTD_OK)
            return rc;
    }
    if (infeasible)
        return infeasible_budget(req, pl, res, problem);
    if (req->options.sac.op_level) {
        rc = op_policies(pl, res);
        if (rc != PARTD_OK)
            return rc;
    }
    if (want_frontier)
        rc = frontier(pl, req->options.sac.frontier_points, res, x);
    return rc;
}

static int plan_with_tree(const partd_request *req, const partd_cancel *cancel,
                          const partd_sac_tree *t, struct partd_sac_result *res,
                          partd_problem *problem)
{
    int64_t start = partd_clock_ns();
    planner pl;
    memset(&pl, 0, sizeof pl);
    pl.t = t;
    pl.cancel = cancel;
    pl.env = (partd_solver_env){ cancel, problem, req->options.sac.solver_memory_bytes };
    pl.relative_gap = req->options.sac.relative_gap;
    pl.deadline_ns = start + (int64_t)(req->options.sac.time_limit_ms * 1e6);
    if (cancel && cancel->deadline_ns && cancel->deadline_ns < pl.deadline_ns)
        pl.deadline_ns = cancel->deadline_ns;
    raw x = { calloc(t->n, 1), calloc(t->n, sizeof(double)) };
    int rc = PARTD_ENOMEM;
    if (x.y && x.r && partd__sac_plan_vec_alloc(&pl.min_plan, t->n) == PARTD_OK &&
        partd__sac_plan_vec_alloc(&res->main.plan, t->n) == PARTD_OK) {
        partd_sac_score s;
        partd__sac_evaluate(t, &res->main.plan, &s); /* all zero: no checkpointing */
        pl.baseline = s.peak_bytes;
        res->baseline_peak_bytes = s.peak_bytes;
        rc = run(req, &pl, res, &x, problem);
    }
    res->has_min_peak = pl.has_min_peak;
    res->min_peak_bytes = pl.min_peak;
    res->solve_ms = (double)(partd_clock_ns() - start) / 1e6;
    free(x.y);
    free(x.r);
    partd__sac_plan_vec_free(&pl.min_plan);
    return rc;
}

int partd_sac_plan(const partd_request *req, const partd_cancel *cancel,
                   struct partd_sac_result **out, partd_problem *problem)
{
    *out = NULL;
    if (!req->modules) {
        partd_problem_add(problem, "/graph/modules",
                          "options.sac needs graph.modules (PyTorch's module_info)");
        return invalid(problem);
    }
    struct partd_sac_result *res = calloc(1, sizeof *res);
    if (!res)
        return PARTD_ENOMEM;
    res->n_modules = req->modules->n;
    partd_sac_tree t;
    int rc = build_tree(req, &t, problem);
    if (rc == PARTD_OK) {
        res->has_fsdp = req->options.sac.has_fsdp_units &&
                        req->options.sac.n_fsdp_units > 0;
        res->reserve_bytes = t.reserve_bytes;
        rc = plan_with_tree(req, cancel, &t, res, problem);
        partd__sac_tree_free(&t);
    }
    if (rc != PARTD_OK) {
        partd_sac_result_free(res);
        return rc;
    }
    *out = res;
    return PARTD_OK;
}
