/*
 * test_sac.c - the SAC planner (lib/sac*.c).
 *
 * - PyTorch's op-level cases (test_sac_ilp.py, TestOptimalCheckpointingPolicy).
 * - An independent evaluator (plain C, no solver, its own ancestry by string
 *   prefix and its own arithmetic) that checks every plan the planner returns:
 *   only allowed modules, no nesting, ratios on the 4-decimal grid within
 *   their bounds, peak within the budget, reported figures equal to its own.
 * - A brute-force reference on random module trees of up to 10 modules:
 *   every antichain y, and for each the exact optimum of the remaining LP in
 *   r by enumerating its vertices (bounds, kinks of the recompute curves, and
 *   binding prefix-sum memory rows); the planner must reach the same optimum.
 * - Budgets infeasible, exactly at the minimum, and above the baseline.
 * - Options errors, the frontier, determinism, cancellation.
 *
 * Inputs are module_info JSON texts parsed with jansson and decoded with
 * partd_modules_decode, plus end-to-end requests through partd_request_decode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "modules/modules.h"
#include "partd/cancel.h"
#include "partd/partd.h"
#include "sac/sac.h"
#include "sac/sac_milp.h"
#include "sac/sac_oplevel.h"
#include "solver/milp.h"
#include "solver/solver_child.h"
#include "testutil.h"

#define MAXM 10
#define MAXSEG 3

/* ---- random numbers (fixed seed: the tests are deterministic) ----------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double unif(double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd() >> 11) / 9007199254740992.0;
}

static int64_t irand(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---- test trees --------------------------------------------------------- */

typedef struct tmod {
    char fqn[96];
    int parent, leaf;
    int64_t param, grad_total, act_fw, sac_mem, act_total, act_grad;
    double sac_runtime;
    int nseg;
    double slopes[MAXSEG], intercepts[MAXSEG];
} tmod;

typedef struct ttree {
    int n;
    tmod m[MAXM];
    int pre[MAXM], post[MAXM];
} ttree;

typedef struct topts {
    int64_t budget;
    uint32_t world_size;
    int n_ac, n_fsdp;
    int ac[MAXM], fsdp[MAXM];
    int op_level;
    uint32_t frontier;
    double relative_gap;
} topts;

static json_t *reals_json(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *stat_json(const tmod *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "fqn", json_string(m->fqn));
    json_object_set_new(o, "param_per_module", json_integer(m->param));
    json_object_set_new(o, "grad_per_module", json_integer(m->param));
    json_object_set_new(o, "grad_total", json_integer(m->grad_total));
    json_object_set_new(o, "act_fw_per_module", json_integer(m->act_fw));
    json_object_set_new(o, "act_bw_per_module", json_integer(0));
    json_object_set_new(o, "act_grad_per_module", json_integer(m->act_grad));
    json_object_set_new(o, "act_total", json_integer(m->act_total));
    json_object_set_new(o, "input_per_module", json_integer(0));
    json_object_set_new(o, "output_per_module", json_integer(0));
    json_object_set_new(o, "fw_runtime_per_module", json_real(1.0));
    json_object_set_new(o, "bw_runtime_per_module", json_real(2.0));
    json_object_set_new(o, "is_leaf", json_boolean(m->leaf));
    json_object_set_new(o, "sac_runtime", json_real(m->sac_runtime));
    json_object_set_new(o, "sac_memory", json_integer(m->sac_mem));
    json_object_set_new(o, "n_segments", json_integer(m->nseg));
    json_object_set_new(o, "slopes", reals_json(m->slopes, m->nseg));
    json_object_set_new(o, "intercepts", reals_json(m->intercepts, m->nseg));
    double bp[MAXSEG + 1];
    for (int k = 0; k <= m->nseg; k++)
        bp[k] = (double)k / (m->nseg ? m->nseg : 1);
    json_object_set_new(o, "breakpoints", reals_json(bp, m->nseg ? m->nseg + 1 : 0));
    json_object_set_new(o, "tradeoff_curve", json_object());
    return o;
}

static json_t *names_json(const ttree *t, const int *order)
{
    json_t *a = json_array();
    for (int k = 0; k < t->n; k++)
        json_array_append_new(a, json_string(t->m[order[k]].fqn));
    return a;
}

/* module_info as JSON text, as a PyTorch user would send it. */
static char *tree_text(const ttree *t)
{
    json_t *order = json_object();
    json_object_set_new(order, "fw_pre_order", names_json(t, t->pre));
    json_object_set_new(order, "fw_post_order", names_json(t, t->post));
    json_object_set_new(order, "bw_pre_order", names_json(t, t->pre));
    json_object_set_new(order, "bw_post_order", names_json(t, t->post));
    json_t *stats = json_array();
    for (int i = t->n - 1; i >= 0; i--)
        json_array_append_new(stats, stat_json(&t->m[i]));
    json_t *doc = json_object();
    json_object_set_new(doc, "mod_order", order);
    json_object_set_new(doc, "mod_stats", stats);
    char *s = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return s;
}

/* ---- requests built from trees ----------------------------------------- */

static partd_request *make_request(const ttree *t, const topts *o)
{
    partd_request *req = calloc(1, sizeof *req);
    assert_non_null(req);
    partd_strtab_init(&req->strings);
    char *text = tree_text(t);
    json_error_t err;
    json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    assert_non_null(doc);
    partd_problem pb;
    partd_problem_init(&pb);
    char *canon = NULL;
    int rc = partd_modules_decode(doc, &req->strings, &pb, &req->modules, &canon);
    if (rc != PARTD_OK)
        for (uint32_t i = 0; i < pb.n_errors; i++)
            fprintf(stderr, "%s: %s\n", pb.errors[i].pointer, pb.errors[i].message);
    assert_int_equal(rc, PARTD_OK);
    partd_problem_free(&pb);
    free(canon);
    free(text);
    json_decref(doc);
    partd_sac_options *so = &req->options.sac;
    so->enabled = 1;
    so->memory_budget_bytes = o->budget;
    so->world_size = o->world_size ? o->world_size : 1;
    so->time_limit_ms = 20000;
    so->relative_gap = o->relative_gap;
    so->op_level = o->op_level;
    so->frontier_points = o->frontier;
    so->has_ac_units = o->n_ac > 0;
    so->n_ac_units = (uint32_t)o->n_ac;
    so->ac_units = calloc(MAXM, sizeof(uint32_t));
    for (int k = 0; k < o->n_ac; k++)
        so->ac_units[k] = partd_strtab_intern(&req->strings, t->m[o->ac[k]].fqn,
                                              strlen(t->m[o->ac[k]].fqn));
    so->has_fsdp_units = o->n_fsdp > 0;
    so->n_fsdp_units = (uint32_t)o->n_fsdp;
    so->fsdp_units = calloc(MAXM, sizeof(uint32_t));
    for (int k = 0; k < o->n_fsdp; k++)
        so->fsdp_units[k] = partd_strtab_intern(&req->strings, t->m[o->fsdp[k]].fqn,
                                                strlen(t->m[o->fsdp[k]].fqn));
    return req;
}

static void free_request(partd_request *req)
{
    partd_modules_free(req->modules);
    free(req->options.sac.ac_units);
    free(req->options.sac.fsdp_units);
    partd_strtab_free(&req->strings);
    free(req);
}

/* Plans and returns the `sac` JSON (caller decrefs); fails on error. */
/* A budget below the least peak fails the plan with a problem document. The
 * tests compare it with the brute force in the shape of a plan: status
 * "infeasible", no decisions, and the problem's members (min_peak_memory_bytes,
 * baseline_peak_memory_bytes, budget_bytes). */
static json_t *infeasible_json(const partd_problem *pb)
{
    assert_int_equal(pb->status, 422);
    assert_string_equal(pb->type, "urn:partd:problem:infeasible");
    tu_assert_error(pb, "/options/sac/memory_budget_bytes", "least budget");
    json_t *j = json_pack("{s:s, s:o}", "status", "infeasible", "ac_decisions",
                          json_object());
    assert_non_null(j);
    for (uint32_t i = 0; i < pb->n_members; i++)
        json_object_set_new(j, pb->members[i].name, json_integer(pb->members[i].value));
    assert_non_null(json_object_get(j, "min_peak_memory_bytes"));
    return j;
}

static json_t *plan_json(const ttree *t, const topts *o)
{
    partd_request *req = make_request(t, o);
    struct partd_sac_result *res = NULL;
    partd_problem pb;
    partd_problem_init(&pb);
    int rc = partd_sac_plan(req, NULL, &res, &pb);
    if (rc == PARTD_EINFEASIBLE) {
        assert_null(res);
        json_t *j = infeasible_json(&pb);
        partd_problem_free(&pb);
        free_request(req);
        return j;
    }
    if (rc != PARTD_OK)
        fprintf(stderr, "sac plan: %s (%s)\n", partd_strerror(rc),
                pb.detail ? pb.detail : "");
    assert_int_equal(rc, PARTD_OK);
    assert_true(partd__sac_result_solve_ms(res) >= 0);
    json_t *j = partd_sac_result_to_json(req, res);
    assert_non_null(j);
    partd_sac_result_free(res);
    partd_problem_free(&pb);
    free_request(req);
    return j;
}

/* ---- the independent evaluator ----------------------------------------- */

static int strict_ancestor(const char *a, const char *d)
{
    size_t la = strlen(a);
    return strlen(d) > la && strncmp(a, d, la) == 0 && d[la] == '.';
}

static int in_list(const int *v, int n, int x)
{
    for (int k = 0; k < n; k++)
        if (v[k] == x)
            return 1;
    return 0;
}

static int allowed(const ttree *t, const topts *o, int i)
{
    if (t->m[i].leaf || (o->n_ac && !in_list(o->ac, o->n_ac, i)))
        return 0;
    for (int k = 0; k < o->n_fsdp; k++)
        if (strict_ancestor(t->m[i].fqn, t->m[o->fsdp[k]].fqn))
            return 0;
    return 1;
}

static int64_t acm_of(const tmod *m)
{
    return m->sac_mem > m->act_fw ? m->sac_mem : m->act_fw;
}

static int64_t reserve_of(const ttree *t, const topts *o)
{
    if (!o->n_fsdp)
        return 0;
    int64_t others = 0, largest = 0;
    for (int i = 1; i < t->n; i++)
        if (in_list(o->fsdp, o->n_fsdp, i)) {
            others += t->m[i].param;
            largest = t->m[i].param > largest ? t->m[i].param : largest;
        }
    int64_t root = t->m[0].param - others;
    return 3 * (root > largest ? root : largest);
}

static double rcp_of(const tmod *m, double r)
{
    double best = 0;
    for (int k = 0; k < m->nseg; k++)
        best = fmax(best, m->slopes[k] * r + m->intercepts[k]);
    return best;
}

static int post_pos(const ttree *t, int i)
{
    for (int k = 0; k < t->n; k++)
        if (t->post[k] == i)
            return k;
    fail();
    return -1;
}

/* Peak (bytes, long double) of a plan given as ratios (r < 0: not chosen). */
static long double peak_of(const ttree *t, const topts *o, const double *r)
{
    long double best = 0;
    for (int i = 0; i < t->n; i++) {
        long double a = (long double)t->m[i].act_total + t->m[i].act_grad;
        for (int j = 0; j < t->n; j++)
            if (r[j] >= 0 && post_pos(t, j) < post_pos(t, i))
                a -= (long double)acm_of(&t->m[j]) * r[j] -
                     (long double)(acm_of(&t->m[j]) - t->m[j].act_fw);
        long double v = a + (long double)(t->m[0].param + t->m[i].grad_total) /
                                (o->world_size ? o->world_size : 1);
        if (i == 0 || v > best)
            best = v;
    }
    return best;
}

static int index_of(const ttree *t, const char *fqn)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->m[i].fqn, fqn) == 0)
            return i;
    fail_msg("unknown module %s in the plan", fqn);
    return -1;
}

/* Checks one answer ({status, ac_decisions, recomputation_time_ms,
 * peak_memory_bytes}) at `budget`; returns its recompute time. */
static double check_answer(const ttree *t, const topts *o, json_t *a, int64_t budget)
{
    const char *status = json_string_value(json_object_get(a, "status"));
    assert_non_null(status);
    json_t *dec = json_object_get(a, "ac_decisions");
    assert_true(json_is_object(dec));
    if (strcmp(status, "infeasible") == 0) {
        assert_int_equal(json_object_size(dec), 0);
        assert_null(json_object_get(a, "peak_memory_bytes"));
        return INFINITY;
    }
    double r[MAXM];
    for (int i = 0; i < t->n; i++)
        r[i] = -1;
    const char *key;
    json_t *v;
    json_object_foreach(dec, key, v) {
        int i = index_of(t, key);
        assert_true(allowed(t, o, i));
        double x = json_real_value(v);
        assert_true(fabs(x * 1e4 - nearbyint(x * 1e4)) < 1e-6); /* 4 decimals */
        assert_true(x <= 1.0);
        int64_t acm = acm_of(&t->m[i]);
        if (acm > 0)
            assert_true(x * (double)acm >= (double)(acm - t->m[i].act_fw) - 1e-3);
        r[i] = x;
    }
    for (int i = 0; i < t->n; i++)
        for (int j = 0; j < t->n; j++)
            if (r[i] >= 0 && r[j] >= 0)
                assert_false(strict_ancestor(t->m[i].fqn, t->m[j].fqn));
    long double peak = peak_of(t, o, r);
    int64_t reserve = reserve_of(t, o);
    assert_true(peak <= (long double)(budget - reserve) + 1e-6L);
    int64_t reported = json_integer_value(json_object_get(a, "peak_memory_bytes"));
    assert_true(llabs(reported - (int64_t)ceill(peak - 1e-6L)) <= 1);
    double rec = 0;
    for (int i = 0; i < t->n; i++)
        if (r[i] >= 0)
            rec += t->m[i].sac_runtime * rcp_of(&t->m[i], r[i]);
    double got = json_number_value(json_object_get(a, "recomputation_time_ms"));
    assert_true(fabs(got - rec) <= 1e-9 * (1 + rec));
    return rec;
}

static int64_t baseline_of(const ttree *t, const topts *o)
{
    double none[MAXM];
    for (int i = 0; i < MAXM; i++)
        none[i] = -1;
    return (int64_t)ceill(peak_of(t, o, none) - 1e-6L);
}

/* Checks the whole `sac` document; returns the main recompute time. */
static double check_result(const ttree *t, const topts *o, json_t *sac)
{
    assert_int_equal(json_integer_value(json_object_get(sac, "budget_bytes")), o->budget);
    assert_int_equal(json_integer_value(json_object_get(sac, "baseline_peak_memory_bytes")),
                     baseline_of(t, o));
    assert_null(json_object_get(sac, "solve_ms")); /* wall clock stays out */
    return check_answer(t, o, sac, o->budget);
}

/* ---- the brute-force reference ----------------------------------------- */

typedef struct lp {
    int m;                        /* chosen modules, in post-order */
    int idx[MAXM];
    double a[MAXM], lo[MAXM];     /* ACM, min ratio */
    double need[MAXM + 1];        /* sum_{s<k} a_s r_s >= need[k] */
    int n_cand[MAXM];
    double cand[MAXM][2 + MAXSEG * (MAXSEG + 1)];
    const ttree *t;
} lp;

static double lp_objective(const lp *p, const double *r)
{
    double s = 0;
    for (int k = 0; k < p->m; k++) {
        const tmod *mod = &p->t->m[p->idx[k]];
        s += mod->sac_runtime * rcp_of(mod, r[k]);
    }
    return s;
}

static int lp_feasible(const lp *p, const double *r)
{
    double sum = 0;
    for (int k = 0; k < p->m; k++) {
        if (r[k] < p->lo[k] - 1e-9 || r[k] > 1 + 1e-9)
            return 0;
        sum += p->a[k] * r[k];
        if (sum < p->need[k + 1] - 1e-3)
            return 0;
    }
    return 1;
}

/* choice[k]: a candidate index or -1 (free, set by a binding row). */
static void lp_vertices(const lp *p, int k, int *choice, double *best)
{
    if (k < p->m) {
        for (int c = -1; c < p->n_cand[k]; c++) {
            choice[k] = c;
            lp_vertices(p, k + 1, choice, best);
        }
        return;
    }
    /* binding rows t_j for the free variables f_j: f_j <= t_j < f_{j+1} */
    int free_idx[MAXM], q = 0;
    for (int s = 0; s < p->m; s++)
        if (choice[s] < 0) {
            if (p->a[s] <= 0)
                return;
            free_idx[q++] = s;
        }
    int tsel[MAXM];
    for (int j = 0; j < q; j++)
        tsel[j] = free_idx[j];
    for (;;) {
        double r[MAXM];
        for (int s = 0; s < p->m; s++)
            r[s] = choice[s] >= 0 ? p->cand[s][choice[s]] : 0;
        for (int j = 0; j < q; j++) {
            double rest = 0;
            for (int s = 0; s <= tsel[j]; s++)
                if (s != free_idx[j])
                    rest += p->a[s] * r[s];
            r[free_idx[j]] = (p->need[tsel[j] + 1] - rest) / p->a[free_idx[j]];
        }
        if (lp_feasible(p, r)) {
            double v = lp_objective(p, r);
            if (v < *best)
                *best = v;
        }
        int j = q - 1; /* next combination of rows */
        while (j >= 0) {
            int limit = j + 1 < q ? free_idx[j + 1] - 1 : p->m - 1;
            if (tsel[j] < limit) {
                tsel[j]++;
                break;
            }
            tsel[j] = free_idx[j];
            j--;
        }
        if (j < 0)
            break;
    }
}

static void add_cand(lp *p, int k, double x)
{
    if (x >= p->lo[k] && x <= 1)
        p->cand[k][p->n_cand[k]++] = x;
}

/* Least recompute over every plan with exactly the modules in `set`
 * checkpointed (INFINITY when none fits cap). */
static double best_for_set(const ttree *t, const topts *o, const int *set, long double cap)
{
    lp p;
    memset(&p, 0, sizeof p);
    p.t = t;
    for (int k = 0; k < t->n; k++)
        if (set[t->post[k]])
            p.idx[p.m++] = t->post[k];
    long double fixed_disc = 0; /* sum (a - ia) over the prefix */
    for (int k = 0; k <= p.m; k++)
        p.need[k] = -INFINITY;
    for (int i = 0; i < t->n; i++) {
        int before = 0;
        for (int s = 0; s < p.m; s++)
            before += post_pos(t, p.idx[s]) < post_pos(t, i);
        fixed_disc = 0;
        for (int s = 0; s < before; s++)
            fixed_disc += acm_of(&t->m[p.idx[s]]) - t->m[p.idx[s]].act_fw;
        long double need = (long double)t->m[i].act_total + t->m[i].act_grad +
                           (long double)(t->m[0].param + t->m[i].grad_total) /
                               (o->world_size ? o->world_size : 1) -
                           cap + fixed_disc;
        if (need > p.need[before])
            p.need[before] = (double)need;
    }
    if (p.need[0] > 1e-3)
        return INFINITY;
    for (int k = 0; k < p.m; k++) {
        const tmod *mod = &t->m[p.idx[k]];
        p.a[k] = (double)acm_of(mod);
        p.lo[k] = p.a[k] > 0 ? (p.a[k] - (double)mod->act_fw) / p.a[k] : 0;
        add_cand(&p, k, p.lo[k]);
        add_cand(&p, k, 1);
        for (int s = 0; s < mod->nseg; s++) {
            if (mod->slopes[s] != 0)
                add_cand(&p, k, -mod->intercepts[s] / mod->slopes[s]);
            for (int u = s + 1; u < mod->nseg; u++)
                if (mod->slopes[s] != mod->slopes[u])
                    add_cand(&p, k, (mod->intercepts[u] - mod->intercepts[s]) /
                                        (mod->slopes[s] - mod->slopes[u]));
        }
    }
    double best = INFINITY;
    int choice[MAXM];
    lp_vertices(&p, 0, choice, &best);
    return best;
}

static int antichain(const ttree *t, const int *set)
{
    for (int i = 0; i < t->n; i++)
        for (int j = 0; j < t->n; j++)
            if (set[i] && set[j] && strict_ancestor(t->m[i].fqn, t->m[j].fqn))
                return 0;
    return 1;
}

typedef struct brute {
    double best;       /* least recompute under the cap */
    int64_t min_peak;  /* least peak of any plan */
} brute;

static brute brute_force(const ttree *t, const topts *o, int64_t cap)
{
    brute b = { INFINITY, INT64_MAX };
    int cand[MAXM], nc = 0;
    for (int i = 0; i < t->n; i++)
        if (allowed(t, o, i))
            cand[nc++] = i;
    for (uint32_t mask = 0; mask < (1u << nc); mask++) {
        int set[MAXM] = { 0 };
        double full[MAXM];
        for (int i = 0; i < MAXM; i++)
            full[i] = -1;
        for (int k = 0; k < nc; k++)
            if (mask & (1u << k)) {
                set[cand[k]] = 1;
                full[cand[k]] = 1;
            }
        if (!antichain(t, set))
            continue;
        int64_t pk = (int64_t)ceill(peak_of(t, o, full) - 1e-6L);
        if (pk < b.min_peak)
            b.min_peak = pk;
        double v = best_for_set(t, o, set, (long double)cap);
        if (v < b.best)
            b.best = v;
    }
    return b;
}

/* Slack the planner may need over the exact LP optimum: ratios on the 1e-4
 * grid, and the solver's 4 KiB safety margin on the budget. */
static double tolerance(const ttree *t)
{
    double tol = 1e-6;
    for (int i = 0; i < t->n; i++) {
        double smax = 0;
        for (int k = 0; k < t->m[i].nseg; k++)
            smax = fmax(smax, fabs(t->m[i].slopes[k]));
        int64_t acm = acm_of(&t->m[i]);
        tol += t->m[i].sac_runtime * smax * 1e-4;
        if (acm > 0)
            tol += t->m[i].sac_runtime * smax * 4096.0 * 4 / (double)acm;
    }
    return tol;
}

/* ---- random trees ------------------------------------------------------- */

/* A random linear extension: parents before children (pre) or after (post). */
static void random_order(ttree *t, int parents_first, int *out)
{
    int placed[MAXM] = { 0 };
    for (int k = 0; k < t->n; k++) {
        int ready[MAXM], nr = 0;
        for (int i = 0; i < t->n; i++) {
            if (placed[i])
                continue;
            int ok = 1;
            for (int j = 0; j < t->n && ok; j++) {
                if (placed[j] || j == i)
                    continue;
                if (parents_first ? strict_ancestor(t->m[j].fqn, t->m[i].fqn)
                                  : strict_ancestor(t->m[i].fqn, t->m[j].fqn))
                    ok = 0;
            }
            if (ok)
                ready[nr++] = i;
        }
        int pick = ready[rnd() % (uint64_t)nr];
        placed[pick] = 1;
        out[k] = pick;
    }
}

static void random_tree(ttree *t, int n)
{
    static const char *names[] = { "x", "xy", "y", "yx", "z", "x0" };
    memset(t, 0, sizeof *t);
    t->n = n;
    int kids[MAXM] = { 0 };
    snprintf(t->m[0].fqn, sizeof t->m[0].fqn, "R");
    t->m[0].parent = -1;
    for (int i = 1; i < n; i++) {
        int p;
        do
            p = (int)irand(0, i - 1);
        while (kids[p] >= 6);
        t->m[i].parent = p;
        /* depth <= 10 and names of <= 2 bytes: always fits */
        size_t len = strlen(t->m[p].fqn);
        memcpy(t->m[i].fqn, t->m[p].fqn, len);
        t->m[i].fqn[len] = '.';
        strcpy(t->m[i].fqn + len + 1, names[kids[p]++]);
    }
    for (int i = 0; i < n; i++) {
        tmod *m = &t->m[i];
        m->leaf = kids[i] == 0;
        m->param = i == 0 ? irand(0, 1000000000) : irand(0, 100000000);
        m->grad_total = irand(0, 500000000);
        m->act_total = irand(100000000, 2000000000);
        m->act_grad = irand(-5000000, 500000000); /* may be < 0, as in PyTorch */
        if (m->leaf) {
            m->act_fw = irand(0, 100000000);
            continue;
        }
        m->act_fw = irand(0, 5) == 0 ? 0 : irand(1000000, 400000000);
        m->sac_mem = (int64_t)((double)m->act_fw * unif(0.7, 1.8));
        m->sac_runtime = irand(0, 4) == 0 ? unif(100, 400) : unif(0.5, 60);
        m->nseg = (int)irand(1, MAXSEG);
        for (int k = 0; k < m->nseg; k++) {
            m->slopes[k] = unif(0, 2);
            m->intercepts[k] = unif(-0.6, 0.3);
        }
    }
    random_order(t, 1, t->pre);
    random_order(t, 0, t->post);
    /* activations accumulate through the forward pass, as in real stats */
    int64_t total = irand(10000000, 200000000);
    for (int k = 0; k < n; k++) {
        tmod *m = &t->m[t->post[k]];
        m->act_total = total + irand(0, 50000000);
        total += m->act_fw + irand(0, 20000000);
    }
    /* the root must come first in pre-order */
    for (int k = 0; k < n; k++)
        if (t->pre[k] == 0) {
            memmove(&t->pre[1], &t->pre[0], (size_t)k * sizeof(int));
            t->pre[0] = 0;
            break;
        }
}

static void random_opts(const ttree *t, topts *o)
{
    memset(o, 0, sizeof *o);
    o->world_size = (uint32_t)irand(1, 4);
    if (irand(0, 3) == 0)
        for (int i = 0; i < t->n; i++)
            if (irand(0, 1))
                o->ac[o->n_ac++] = i;
    if (irand(0, 3) == 0) {
        o->fsdp[o->n_fsdp++] = 0;
        for (int i = 1; i < t->n; i++)
            if (irand(0, 4) == 0)
                o->fsdp[o->n_fsdp++] = i;
    }
}

/* ---- tests -------------------------------------------------------------- */

/* PyTorch's TestOptimalCheckpointingPolicy (from xformers). */
static void test_pytorch_op_level_cases(void **state)
{
    (void)state;
    double runtimes[8] = { 5, 5, 8, 15, 15, 9, 1, 5 };
    int64_t memory[8] = { 0, 100, 100, 120, 0, 100, 0, 0 };
    uint32_t names[8] = { 0 }, view[1] = { 6 }, rand[1] = { 4 };
    uint32_t ip_op[2] = { 0, 7 }, ip_parent[2] = { 0, 5 };
    partd_sac_stats s = { 8, names, runtimes, memory, 1, 1, 0, 2, view, rand, NULL,
                          ip_op, ip_parent, 0 };
    struct { double budget; uint8_t want[8]; } cases[] = {
        { 0, { 1, 0, 0, 0, 1, 0, 0, 0 } },
        { 100.0 / 420, { 1, 0, 0, 0, 1, 1, 0, 1 } },
        { 120.0 / 420, { 1, 0, 0, 1, 1, 0, 0, 0 } },
        { 200.0 / 420, { 1, 0, 1, 0, 1, 1, 0, 1 } },
        { 220.0 / 420, { 1, 0, 0, 1, 1, 1, 0, 1 } },
        { 320.0 / 420, { 1, 0, 1, 1, 1, 1, 0, 1 } },
        { 420.0 / 420, { 1, 1, 1, 1, 1, 1, 0, 1 } },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t got[8];
        int feasible = 0;
        assert_int_equal(partd__sac_op_policy(&s, cases[c].budget, 10, NULL, got, &feasible),
                         PARTD_OK);
        assert_true(feasible);
        assert_memory_equal(got, cases[c].want, 8);
    }
}

static void test_op_level_rules(void **state)
{
    (void)state;
    double runtimes[4] = { 10, 10, 10, 1 };
    int64_t memory[4] = { 10, 10, 10, 10 };
    uint32_t names[4] = { 0 }, rand[3] = { 0, 1, 2 };
    partd_sac_stats s = { 4, names, runtimes, memory, 0, 3, 0, 0, NULL, rand, NULL,
                          NULL, NULL, 0 };
    uint8_t got[4];
    int feasible = 0;
    /* random ops all or nothing: 20 bytes allow two of them, so none */
    assert_int_equal(partd__sac_op_policy(&s, 0.5, 10, NULL, got, &feasible), PARTD_OK);
    assert_true(feasible);
    assert_memory_equal(got, ((uint8_t[]){ 0, 0, 0, 1 }), 4);
    /* force_store_random: all saved, the rest must fit in what is left */
    s.force_store_random = 1;
    assert_int_equal(partd__sac_op_policy(&s, 0.75, 10, NULL, got, &feasible), PARTD_OK);
    assert_true(feasible);
    assert_memory_equal(got, ((uint8_t[]){ 1, 1, 1, 0 }), 4);
    /* forced saves over the budget: infeasible, as PyTorch's empty answer */
    assert_int_equal(partd__sac_op_policy(&s, 0.5, 10, NULL, got, &feasible), PARTD_OK);
    assert_false(feasible);
    /* a view-like op that must also be saved (in-place on itself) */
    uint32_t view[1] = { 3 }, self[1] = { 3 };
    partd_sac_stats c = { 4, names, runtimes, memory, 1, 0, 0, 1, view, NULL, NULL,
                          self, self, 0 };
    assert_int_equal(partd__sac_op_policy(&c, 1, 10, NULL, got, &feasible), PARTD_OK);
    assert_false(feasible);
}

/* Op-level policies against enumeration of every save/recompute vector on
 * random SACStats (up to 12 ops, bytes up to 2^40): same optimum. */
static void test_op_level_brute_force(void **state)
{
    (void)state;
    rng_state = 424242;
    int solved = 0;
    for (int it = 0; it < 300; it++) {
        uint32_t n = (uint32_t)irand(1, 12);
        double rt[12];
        int64_t mem[12];
        uint32_t names[12] = { 0 }, view[12], rnd_ops[12], ip_op[12], ip_par[12];
        uint32_t nv = 0, nr = 0, ni = 0;
        int64_t total = 0;
        for (uint32_t i = 0; i < n; i++) {
            rt[i] = unif(0, 20);
            mem[i] = irand(0, 3) == 0 ? 0 : irand(1, (int64_t)1 << 40);
            total += mem[i];
            int kind = (int)irand(0, 9);
            if (kind == 0)
                view[nv++] = i;
            else if (kind == 1)
                rnd_ops[nr++] = i;
            else if (kind == 2) {
                ip_op[ni] = i;
                ip_par[ni++] = (uint32_t)irand(0, i);
            }
        }
        partd_sac_stats s = { n, names, rt, mem, nv, nr, 0, ni, view, rnd_ops, NULL,
                              ip_op, ip_par, (int)irand(0, 1) };
        double budget = unif(0, 1);
        int64_t room = (int64_t)ceil(budget * (double)total);
        double best = -1;
        for (uint32_t mask = 0; mask < (1u << n); mask++) {
            int ok = 1;
            int64_t used = 0;
            double val = 0;
            for (uint32_t k = 0; k < nv; k++)
                ok &= !(mask >> view[k] & 1);
            for (uint32_t k = 0; k < nr; k++)
                ok &= s.force_store_random ? (mask >> rnd_ops[k] & 1)
                                           : ((mask >> rnd_ops[k] & 1) ==
                                              (mask >> rnd_ops[0] & 1));
            for (uint32_t k = 0; k < ni; k++)
                ok &= ip_op[k] == ip_par[k] ? (mask >> ip_op[k] & 1)
                                            : ((mask >> ip_op[k] & 1) ==
                                               (mask >> ip_par[k] & 1));
            for (uint32_t i = 0; i < n; i++)
                if (mask >> i & 1) {
                    used += mem[i];
                    val += rt[i];
                }
            if (ok && used <= room && val > best)
                best = val;
        }
        uint8_t got[12];
        int feasible = 0;
        assert_int_equal(partd__sac_op_policy(&s, budget, 10, NULL, got, &feasible), PARTD_OK);
        assert_int_equal(feasible, best >= 0);
        if (!feasible)
            continue;
        int64_t used = 0;
        double val = 0;
        for (uint32_t i = 0; i < n; i++)
            if (got[i]) {
                used += mem[i];
                val += rt[i];
            }
        assert_true(used <= room);
        for (uint32_t k = 0; k < nv; k++)
            assert_int_equal(got[view[k]], 0);
        assert_true(fabs(val - best) <= 1e-9 * (1 + best));
        solved++;
    }
    assert_true(solved > 150);
}

/* The planner against the brute force on random trees. */
static void test_brute_force_random(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ULL;
    int feasible = 0, infeasible = 0, nonempty = 0;
    for (int it = 0; it < 160; it++) {
        ttree t;
        random_tree(&t, (int)irand(2, MAXM));
        topts o;
        random_opts(&t, &o);
        int64_t reserve = reserve_of(&t, &o);
        int64_t base = baseline_of(&t, &o);
        brute probe = brute_force(&t, &o, INT64_MAX / 4);
        double u = unif(-0.3, 1.1);
        int64_t cap = probe.min_peak + (int64_t)(u * (double)(base - probe.min_peak));
        o.budget = cap + reserve;
        brute b = brute_force(&t, &o, cap);
        json_t *sac = plan_json(&t, &o);
        double got = check_result(&t, &o, sac);
        const char *status = json_string_value(json_object_get(sac, "status"));
        if (isinf(b.best)) {
            assert_string_equal(status, "infeasible");
            assert_int_equal(json_integer_value(json_object_get(sac, "min_peak_memory_bytes")),
                             b.min_peak);
            infeasible++;
        } else {
            assert_string_equal(status, "optimal");
            double tol = tolerance(&t);
            if (!(got >= b.best - 1e-6 && got <= b.best + tol))
                fail_msg("case %d: planner %.9f, brute force %.9f (tol %.3g)", it, got,
                         b.best, tol);
            feasible++;
            nonempty += json_object_size(json_object_get(sac, "ac_decisions")) > 0;
        }
        json_decref(sac);
    }
    /* the sample exercises both outcomes and real checkpointing */
    assert_true(feasible > 40 && infeasible > 5 && nonempty > 30);
}

/* A fixed tree used by the budget tests: a root with two blocks, each with
 * two leaves; non-contiguous pre-order. */
static void small_tree(ttree *t)
{
    memset(t, 0, sizeof *t);
    t->n = 5;
    const char *names[5] = { "T", "T.b0", "T.b0.l", "T.b1", "T.b1.l" };
    int parent[5] = { -1, 0, 1, 0, 3 };
    for (int i = 0; i < 5; i++) {
        tmod *m = &t->m[i];
        snprintf(m->fqn, sizeof m->fqn, "%s", names[i]);
        m->parent = parent[i];
        m->leaf = i == 2 || i == 4;
        m->param = i == 0 ? 1000000 : 0;
        m->act_total = 100000000 + 50000000 * i;
        m->act_grad = 1000000;
        m->grad_total = 2000000;
        m->act_fw = m->leaf ? 1000 : 60000000;
        if (!m->leaf) {
            m->sac_mem = 80000000;
            m->sac_runtime = 150; /* over PyTorch's 100 ms big-M */
            m->nseg = 2;
            m->slopes[0] = 0.5, m->intercepts[0] = 0;
            m->slopes[1] = 1.5, m->intercepts[1] = -0.5;
        }
    }
    int pre[5] = { 0, 1, 3, 2, 4 }, post[5] = { 2, 1, 4, 3, 0 };
    memcpy(t->pre, pre, sizeof pre);
    memcpy(t->post, post, sizeof post);
}

/* With a relative gap the planner may stop early: the plan is still valid,
 * and within the gap of the optimum. */
static void test_relative_gap(void **state)
{
    (void)state;
    rng_state = 31337;
    for (int it = 0; it < 40; it++) {
        ttree t;
        random_tree(&t, (int)irand(4, MAXM));
        topts o;
        random_opts(&t, &o);
        o.relative_gap = 0.5;
        int64_t reserve = reserve_of(&t, &o);
        brute probe = brute_force(&t, &o, INT64_MAX / 4);
        int64_t base = baseline_of(&t, &o);
        int64_t cap = probe.min_peak + (base - probe.min_peak) / 3;
        o.budget = cap + reserve;
        double best = brute_force(&t, &o, cap).best;
        json_t *sac = plan_json(&t, &o);
        double got = check_result(&t, &o, sac);
        const char *status = json_string_value(json_object_get(sac, "status"));
        double gap = json_number_value(json_object_get(sac, "gap"));
        if (isinf(best)) {
            assert_string_equal(status, "infeasible");
        } else {
            assert_true(strcmp(status, "optimal") == 0 || strcmp(status, "feasible") == 0);
            assert_true(gap >= 0 && gap <= 0.5 + 1e-9);
            assert_true(strcmp(status, "optimal") != 0 || gap == 0);
            assert_true(got >= best - 1e-6 && got <= 2 * best + tolerance(&t));
        }
        json_decref(sac);
    }
}

static void test_budget_above_baseline(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    o.budget = baseline_of(&t, &o) + 1;
    json_t *sac = plan_json(&t, &o);
    check_result(&t, &o, sac);
    assert_string_equal(json_string_value(json_object_get(sac, "status")), "optimal");
    assert_int_equal(json_object_size(json_object_get(sac, "ac_decisions")), 0);
    assert_true(json_number_value(json_object_get(sac, "recomputation_time_ms")) == 0);
    assert_int_equal(json_integer_value(json_object_get(sac, "peak_memory_bytes")),
                     baseline_of(&t, &o));
    json_decref(sac);
    o.budget = baseline_of(&t, &o); /* exactly the baseline: still nothing to do */
    sac = plan_json(&t, &o);
    assert_int_equal(json_object_size(json_object_get(sac, "ac_decisions")), 0);
    json_decref(sac);
}

static void test_budget_infeasible_and_minimum(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    brute b = brute_force(&t, &o, INT64_MAX / 4);
    o.budget = b.min_peak - 1;
    json_t *sac = plan_json(&t, &o);
    check_result(&t, &o, sac);
    assert_string_equal(json_string_value(json_object_get(sac, "status")), "infeasible");
    assert_int_equal(json_integer_value(json_object_get(sac, "min_peak_memory_bytes")),
                     b.min_peak);
    assert_true(json_number_value(json_object_get(sac, "recomputation_time_ms")) == 0);
    json_decref(sac);

    o.budget = b.min_peak; /* exactly at the minimum */
    sac = plan_json(&t, &o);
    check_result(&t, &o, sac);
    assert_string_not_equal(json_string_value(json_object_get(sac, "status")), "infeasible");
    assert_true(json_integer_value(json_object_get(sac, "peak_memory_bytes")) <= b.min_peak);
    double best = brute_force(&t, &o, o.budget).best;
    double got = json_number_value(json_object_get(sac, "recomputation_time_ms"));
    assert_true(got >= best - 1e-6 && got <= best + tolerance(&t));
    /* both blocks cost 150 ms: PyTorch's 100 ms big-M could not pick them */
    assert_true(json_object_size(json_object_get(sac, "ac_decisions")) > 0);
    json_decref(sac);
}

static void test_frontier(void **state)
{
    (void)state;
    rng_state = 12345;
    for (int it = 0; it < 12; it++) {
        ttree t;
        random_tree(&t, (int)irand(4, MAXM));
        topts o;
        random_opts(&t, &o);
        o.frontier = (uint32_t)irand(2, 6);
        int64_t reserve = reserve_of(&t, &o);
        brute probe = brute_force(&t, &o, INT64_MAX / 4);
        int64_t base = baseline_of(&t, &o);
        o.budget = base + reserve;
        json_t *sac = plan_json(&t, &o);
        check_result(&t, &o, sac);
        assert_int_equal(json_integer_value(json_object_get(sac, "min_peak_memory_bytes")),
                         probe.min_peak);
        json_t *f = json_object_get(sac, "frontier");
        assert_int_equal(json_array_size(f), o.frontier);
        double prev = INFINITY;
        for (size_t k = 0; k < json_array_size(f); k++) {
            json_t *p = json_array_get(f, k);
            int64_t budget = json_integer_value(json_object_get(p, "budget_bytes"));
            if (k == 0)
                assert_int_equal(budget, probe.min_peak + reserve);
            if (k + 1 == json_array_size(f))
                assert_int_equal(budget, base + reserve);
            assert_string_not_equal(json_string_value(json_object_get(p, "status")),
                                    "infeasible");
            double got = check_answer(&t, &o, p, budget);
            double best = brute_force(&t, &o, budget - reserve).best;
            assert_true(got >= best - 1e-6 && got <= best + tolerance(&t));
            assert_true(got <= prev + tolerance(&t));
            prev = got;
        }
        assert_true(prev == 0);
        json_decref(sac);
    }
}

static void test_determinism(void **state)
{
    (void)state;
    rng_state = 777;
    for (int it = 0; it < 5; it++) {
        ttree t;
        random_tree(&t, MAXM);
        topts o;
        random_opts(&t, &o);
        o.frontier = 4;
        o.budget = baseline_of(&t, &o) * 3 / 4;
        json_t *a = plan_json(&t, &o), *b = plan_json(&t, &o);
        char *sa = json_dumps(a, JSON_COMPACT | JSON_REAL_PRECISION(17));
        char *sb = json_dumps(b, JSON_COMPACT | JSON_REAL_PRECISION(17));
        assert_string_equal(sa, sb);
        free(sa);
        free(sb);
        json_decref(a);
        json_decref(b);
    }
}

/* The op-level policy of each checkpointed module equals the policy at
 * budget 1 - its discard ratio. */
static void test_op_level_end_to_end(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    o.op_level = 1;
    o.budget = brute_force(&t, &o, INT64_MAX / 4).min_peak + 30000000;
    partd_request *req = make_request(&t, &o);
    /* give T.b0 (and only it) SACStats */
    static double rt[8] = { 5, 5, 8, 15, 15, 9, 1, 5 };
    static int64_t mem[8] = { 0, 100, 100, 120, 0, 100, 0, 0 };
    static uint32_t names[8], view[1] = { 6 }, rnd_ops[1] = { 4 };
    static uint32_t ip_op[2] = { 0, 7 }, ip_parent[2] = { 0, 5 };
    partd_sac_stats *s = calloc(1, sizeof *s);
    *s = (partd_sac_stats){ 8, NULL, NULL, NULL, 1, 1, 0, 2, NULL, NULL, NULL,
                            NULL, NULL, 0 };
    s->func_names = malloc(sizeof names);
    s->runtimes = malloc(sizeof rt);
    s->memory = malloc(sizeof mem);
    s->view_like_ops = malloc(sizeof view);
    s->rand_ops = malloc(sizeof rnd_ops);
    s->inplace_op = malloc(sizeof ip_op);
    s->inplace_parent = malloc(sizeof ip_parent);
    memcpy(s->func_names, names, sizeof names);
    memcpy(s->runtimes, rt, sizeof rt);
    memcpy(s->memory, mem, sizeof mem);
    memcpy(s->view_like_ops, view, sizeof view);
    memcpy(s->rand_ops, rnd_ops, sizeof rnd_ops);
    memcpy(s->inplace_op, ip_op, sizeof ip_op);
    memcpy(s->inplace_parent, ip_parent, sizeof ip_parent);
    req->modules->mods[1].sac_stats = s; /* mods[1] is T.b0 in pre-order */
    struct partd_sac_result *res = NULL;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_OK);
    json_t *sac = partd_sac_result_to_json(req, res);
    json_t *ratio = json_object_get(json_object_get(sac, "ac_decisions"), "T.b0");
    json_t *pol = json_object_get(json_object_get(sac, "op_policies"), "T.b0");
    assert_non_null(ratio);
    assert_non_null(pol);
    uint8_t want[8];
    int feasible = 0;
    assert_int_equal(partd__sac_op_policy(s, 1 - json_real_value(ratio), 10, NULL, want,
                                         &feasible), PARTD_OK);
    assert_true(feasible);
    assert_int_equal(json_array_size(pol), 8);
    for (int k = 0; k < 8; k++)
        assert_int_equal(json_integer_value(json_array_get(pol, k)), want[k]);
    assert_null(json_object_get(json_object_get(sac, "op_policies"), "T.b1"));
    json_decref(sac);
    partd_sac_result_free(res);
    partd_problem_free(&pb);
    free_request(req);
}

static void expect_invalid(partd_request *req, const char *pointer, const char *needle)
{
    struct partd_sac_result *res = (void *)1;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_EINVALID);
    assert_null(res);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, pointer, needle);
    partd_problem_free(&pb);
}

static void test_option_errors(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    o.budget = 1;
    partd_request *req = make_request(&t, &o);
    /* unknown ac unit, unknown FSDP unit */
    req->options.sac.has_ac_units = 1;
    req->options.sac.n_ac_units = 2;
    req->options.sac.ac_units[0] = partd_strtab_intern(&req->strings, "T.b0", 4);
    req->options.sac.ac_units[1] = partd_strtab_intern(&req->strings, "T.b", 3);
    expect_invalid(req, "/options/sac/ac_units/1", "T.b");
    req->options.sac.n_ac_units = 1;
    req->options.sac.has_fsdp_units = 1;
    req->options.sac.n_fsdp_units = 2;
    req->options.sac.fsdp_units[0] = partd_strtab_intern(&req->strings, "T", 1);
    req->options.sac.fsdp_units[1] = partd_strtab_intern(&req->strings, "nope", 4);
    expect_invalid(req, "/options/sac/fsdp_units/1", "nope");
    /* the root must be an FSDP unit (PyTorch raises ValueError) */
    req->options.sac.n_fsdp_units = 1;
    req->options.sac.fsdp_units[0] = partd_strtab_intern(&req->strings, "T.b1", 4);
    expect_invalid(req, "/options/sac/fsdp_units", "root");
    /* options.sac without graph.modules */
    struct partd_modules *mods = req->modules;
    req->modules = NULL;
    expect_invalid(req, "/graph/modules", "graph.modules");
    req->modules = mods;
    free_request(req);
}

/* The small tree with a budget just under its baseline: a plan needs a solve. */
static partd_request *small_request_under_baseline(void)
{
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    o.budget = baseline_of(&t, &o) - 1000;
    return make_request(&t, &o);
}

static void test_cancel(void **state)
{
    (void)state;
    partd_request *req = small_request_under_baseline();
    partd_cancel c;
    partd_cancel_init(&c, 0);
    atomic_store(&c.cancelled, 1);
    struct partd_sac_result *res = (void *)1;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_sac_plan(req, &c, &res, &pb), PARTD_ECANCELLED);
    assert_null(res);
    partd_problem_free(&pb);
    free_request(req);
}


/* Several plans at once (the daemon's worker pool), each solve in a process
 * of its own: every thread gets the same document as a plan made alone.
 * (Under GCC 12's ASan, children forked here while other threads allocate
 * sometimes hang on an inherited allocator lock; they are recognised and run
 * again, see solver_child.c, so the plans still agree.) */
typedef struct concurrent_job {
    const partd_request *req;
    char *text;
} concurrent_job;

static void *plan_thread(void *arg)
{
    concurrent_job *job = arg;
    for (int k = 0; k < 3; k++) {
        struct partd_sac_result *res = NULL;
        partd_problem pb;
        partd_problem_init(&pb);
        if (partd_sac_plan(job->req, NULL, &res, &pb) == PARTD_OK) {
            json_t *j = partd_sac_result_to_json(job->req, res);
            char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
            if (!job->text)
                job->text = text;
            else if (strcmp(job->text, text) != 0)
                job->text[0] = '!'; /* a run disagreed */
            if (text != job->text)
                free(text);
            json_decref(j);
        }
        partd_sac_result_free(res);
        partd_problem_free(&pb);
    }
    return NULL;
}

static void test_concurrent_plans(void **state)
{
    (void)state;
    rng_state = 99;
    ttree t;
    random_tree(&t, MAXM);
    topts o;
    random_opts(&t, &o);
    o.frontier = 5;
    /* halfway between the least peak and the baseline: a plan needs solves */
    int64_t least = brute_force(&t, &o, INT64_MAX / 4).min_peak;
    o.budget = least + (baseline_of(&t, &o) - least) / 2 + reserve_of(&t, &o);
    json_t *alone = plan_json(&t, &o);
    char *want = json_dumps(alone, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(alone);
    partd_request *req = make_request(&t, &o);
    enum { N = 4 };
    pthread_t th[N];
    concurrent_job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (concurrent_job){ req, NULL };
        assert_int_equal(pthread_create(&th[i], NULL, plan_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_non_null(jobs[i].text);
        assert_string_equal(jobs[i].text, want);
        free(jobs[i].text);
    }
    free(want);
    free_request(req);
}

/* ---- end to end: request JSON -> decode -> plan -> result document ------ */

static char *request_text(const ttree *t, const char *sac_options, int with_modules)
{
    char *mods = tree_text(t);
    size_t cap = strlen(mods) + strlen(sac_options) + 1024;
    char *req = malloc(cap);
    snprintf(req, cap,
             "{\"graph\":{\"nodes\":[{\"name\":\"x\",\"op\":\"placeholder\"},"
             "{\"name\":\"f\",\"op\":\"call_function\",\"inputs\":[\"x\"],"
             "\"output_bytes\":8},{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"f\"]}]"
             "%s%s},\"devices\":[{\"name\":\"gpu0\",\"memory_bytes\":4000000000},"
             "{\"name\":\"gpu1\",\"memory_bytes\":3000000000}],"
             "\"options\":{\"mode\":\"size_based\",\"sac\":%s}}",
             with_modules ? ",\"modules\":" : "", with_modules ? mods : "", sac_options);
    free(mods);
    return req;
}

static void test_budget_defaults_to_smallest_device(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    char *text = request_text(&t, "{}", 1);
    partd_request *r = tu_decode_ok(text);
    assert_int_equal(r->options.sac.enabled, 1);
    assert_int_equal(r->options.sac.memory_budget_bytes, 3000000000);
    assert_int_equal(r->options.sac.world_size, 1);
    assert_true(r->options.sac.time_limit_ms == 10000);
    partd_request_free(r);
    free(text);
}

/* Unknown units are refused when the request is decoded (a 422 on POST),
 * not by a failed job. */
static void test_unknown_units_fail_decoding(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    char *text = request_text(&t, "{\"ac_units\":[\"T.b0\",\"T.b\"],"
                                  "\"fsdp_units\":[\"T\",\"nope\"]}", 1);
    partd_problem pb;
    tu_decode_fail(text, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/sac/ac_units/1", "no module \"T.b\"");
    tu_assert_error(&pb, "/options/sac/fsdp_units/1", "no module \"nope\"");
    partd_problem_free(&pb);
    free(text);
    text = request_text(&t, "{\"fsdp_units\":[\"T.b1\"]}", 1);
    tu_decode_fail(text, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/sac/fsdp_units", "must be an FSDP unit");
    partd_problem_free(&pb);
    free(text);
}

/* Module figures whose peak would pass 2^53 are refused, naming the
 * module; at 2^53 they are fine. */
static void test_module_bytes_are_bounded_by_2_53(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    /* T.b1: act_total + act_grad + grad_total + the root's params */
    t.m[3].act_total = (INT64_C(1) << 53) - 1000000 - 2000000 - 1000000;
    char *text = request_text(&t, "{}", 1);
    partd_request *r = tu_decode_ok(text);
    partd_request_free(r);
    free(text);
    t.m[3].act_total += 1;
    text = request_text(&t, "{}", 1);
    partd_problem pb;
    tu_decode_fail(text, PARTD_EINVALID, &pb);
    char ptr[64];
    json_t *doc = json_loads(text, 0, NULL);
    json_t *stats = json_object_get(json_object_get(json_object_get(doc, "graph"), "modules"),
                                    "mod_stats");
    for (size_t k = 0; k < json_array_size(stats); k++)
        if (strcmp(json_string_value(json_object_get(json_array_get(stats, k), "fqn")),
                   "T.b1") == 0)
            snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%zu", k);
    tu_assert_error(&pb, ptr, "add up to more than 2^53");
    json_decref(doc);
    partd_problem_free(&pb);
    free(text);
}

static void test_end_to_end(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    o.budget = brute_force(&t, &o, INT64_MAX / 4).min_peak + 20000000;
    char opts[256];
    snprintf(opts, sizeof opts,
             "{\"memory_budget_bytes\":%lld,\"op_level\":true,\"frontier_points\":3}",
             (long long)o.budget);
    char *text = request_text(&t, opts, 1);
    int rc = 0;
    partd_problem pb;
    char *a = tu_plan_json(text, &rc, &pb);
    assert_int_equal(rc, PARTD_OK);
    partd_problem_free(&pb);
    char *b = tu_plan_json(text, &rc, &pb);
    partd_problem_free(&pb);
    assert_string_equal(a, b); /* byte-identical */
    json_t *doc = json_loads(a, 0, NULL);
    assert_non_null(doc);
    /* "sac" is the last member of the result document */
    const char *last = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
        last = key;
    assert_string_equal(last, "sac");
    json_t *sac = json_object_get(doc, "sac");
    check_result(&t, &o, sac);
    assert_string_equal(json_string_value(json_object_get(sac, "status")), "optimal");
    assert_int_equal(json_array_size(json_object_get(sac, "frontier")), 3);
    assert_true(json_is_object(json_object_get(sac, "op_policies")));
    json_decref(doc);
    free(a);
    free(b);
    free(text);

    /* the default budget is the smallest device's memory */
    text = request_text(&t, "{}", 1);
    a = tu_plan_json(text, &rc, &pb);
    assert_int_equal(rc, PARTD_OK);
    partd_problem_free(&pb);
    doc = json_loads(a, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "sac"),
                                                        "budget_bytes")),
                     3000000000LL);
    json_decref(doc);
    free(a);
    free(text);
}

static void test_end_to_end_errors(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    char *text = request_text(&t, "{\"ac_units\":[\"T.b0\",\"T.b\"]}", 1);
    int rc = 0;
    partd_problem pb;
    char *out = tu_plan_json(text, &rc, &pb);
    assert_null(out);
    assert_int_equal(rc, PARTD_EINVALID);
    tu_assert_error(&pb, "/options/sac/ac_units/1", "T.b");
    partd_problem_free(&pb);
    free(text);

    text = request_text(&t, "{\"memory_budget_bytes\":1000}", 0);
    out = tu_plan_json(text, &rc, &pb);
    assert_null(out);
    assert_int_equal(rc, PARTD_EINVALID);
    tu_assert_error(&pb, "/graph/modules", "graph.modules");
    partd_problem_free(&pb);
    free(text);
}

/* A solver that dies fails only its plan. Here CBC's allocations fail for
 * real under a memory limit of one byte above what the process has: the
 * std::bad_alloc that escapes CBC's C interface aborts the solver process
 * (or the model cannot be loaded at all). The plan fails with
 * PARTD_EINTERNAL and a 500 problem; this process plans on as before. */
static void test_solver_crash_fails_only_the_plan(void **state)
{
    (void)state;
    if (!partd__child_can_limit_memory())
        skip(); /* ASan: RLIMIT_AS cannot apply */
    partd_request *req = small_request_under_baseline();
    req->options.sac.solver_memory_bytes = 1;
    struct partd_sac_result *res = (void *)1;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_EINTERNAL);
    assert_null(res);
    assert_int_equal(pb.status, 500);
    assert_string_equal(pb.type, "urn:partd:problem:solver-failed");
    assert_non_null(strstr(pb.detail, "the MILP solver"));
    fprintf(stderr, "solver failure: %s\n", pb.detail);
    partd_problem_free(&pb);

    req->options.sac.solver_memory_bytes = 0; /* the default: plans again */
    partd_problem_init(&pb);
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_OK);
    assert_non_null(res);
    partd_sac_result_free(res);
    partd_problem_free(&pb);
    free_request(req);
}

/* Through partd_plan_run and the problem document's text: an infeasible
 * budget is a failure (exit 3, a failed job) whose problem says the least
 * peak, never a succeeded plan. */
static void test_infeasible_end_to_end(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    brute b = brute_force(&t, &o, INT64_MAX / 4);
    char opts[128];
    snprintf(opts, sizeof opts, "{\"memory_budget_bytes\":%lld,\"frontier_points\":3}",
             (long long)(b.min_peak - 1));
    char *text = request_text(&t, opts, 1);
    int rc = 0;
    partd_problem pb;
    char *out = tu_plan_json(text, &rc, &pb);
    assert_null(out);
    assert_int_equal(rc, PARTD_EINFEASIBLE);
    char *doc = partd_problem_to_json(&pb, NULL);
    assert_non_null(doc);
    json_t *j = json_loads(doc, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "type")),
                        "urn:partd:problem:infeasible");
    assert_int_equal(json_integer_value(json_object_get(j, "status")), 422);
    assert_int_equal(json_integer_value(json_object_get(j, "min_peak_memory_bytes")),
                     b.min_peak);
    assert_int_equal(json_integer_value(json_object_get(j, "budget_bytes")),
                     b.min_peak - 1);
    json_decref(j);
    free(doc);
    partd_problem_free(&pb);
    free(text);
}

/* Numbers CBC cannot take (a recompute time of 1e300 ms made ClpSimplex
 * assert and abort the process) are a 422 naming the member, before any
 * solve; the request schema's bound (10^12 ms). */
static void test_numbers_out_of_the_solvers_range(void **state)
{
    (void)state;
    ttree t;
    small_tree(&t);
    topts o = { 0 };
    o.world_size = 1;
    int64_t budget = baseline_of(&t, &o) - 1000;
    t.m[1].sac_runtime = 1e300;
    char opts[96];
    snprintf(opts, sizeof opts, "{\"memory_budget_bytes\":%lld}", (long long)budget);
    char *text = request_text(&t, opts, 1);
    int rc = 0;
    partd_problem pb;
    char *out = tu_plan_json(text, &rc, &pb);
    assert_null(out);
    assert_int_equal(rc, PARTD_EINVALID);
    assert_int_equal(pb.status, 422);
    assert_int_equal(pb.n_errors, 1);
    const char *ptr = pb.errors[0].pointer;
    assert_int_equal(strncmp(ptr, "/graph/modules/mod_stats/", 25), 0);
    assert_string_equal(ptr + strlen(ptr) - 12, "/sac_runtime");
    assert_non_null(strstr(pb.errors[0].message, "at most 1e+12"));
    partd_problem_free(&pb);
    free(text);
}

/* The MILP layer's own guard: a model with a number the solver cannot take
 * never reaches it (CBC asserts on an objective coefficient of 1e25 or more);
 * a sound one is solved in a child and comes back exactly. */
static void test_milp_precheck_and_solve(void **state)
{
    (void)state;
    double bad[3] = { NAN, INFINITY, 1e300 };
    for (int k = 0; k < 3; k++) {
        partd_milp b = { 0 };
        int c = partd_milp_add_col(&b, 0, 1, bad[k], 1);
        double one = 1;
        partd_milp_add_row(&b, -PARTD_MILP_INF, 1, 1, &c, &one);
        double x[1];
        partd_problem pb;
        partd_problem_init(&pb);
        partd_solver_env env = { NULL, &pb, 0 };
        partd_milp_params p = { 10, 0, 0, &env };
        partd_milp_result r = { PARTD_MILP_NONE, 0, 0, x };
        assert_int_equal(partd_milp_solve(&b, &p, &r), PARTD_EINVALID);
        assert_int_equal(pb.status, 422);
        partd_problem_free(&pb);
        partd_milp_free(&b);
    }
    /* max 3a + 2b subject to a + b <= 1.5, a, b binary: a = 1, b = 0 */
    partd_milp b = { 0 };
    int cols[2] = { partd_milp_add_col(&b, 0, 1, -3, 1), partd_milp_add_col(&b, 0, 1, -2, 1) };
    double vals[2] = { 1, 1 };
    partd_milp_add_row(&b, -PARTD_MILP_INF, 1.5, 2, cols, vals);
    double x[2] = { -1, -1 };
    partd_milp_params p = { 10, 0, 0, NULL };
    partd_milp_result r = { PARTD_MILP_NONE, 0, 0, x };
    assert_int_equal(partd_milp_solve(&b, &p, &r), PARTD_OK);
    assert_int_equal(r.status, PARTD_MILP_OPTIMAL);
    assert_true(r.objective == -3 && r.gap == 0);
    assert_true(x[0] > 0.5 && x[1] < 0.5);
    partd_milp_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch_op_level_cases),
        cmocka_unit_test(test_op_level_rules),
        cmocka_unit_test(test_op_level_brute_force),
        cmocka_unit_test(test_brute_force_random),
        cmocka_unit_test(test_relative_gap),
        cmocka_unit_test(test_budget_above_baseline),
        cmocka_unit_test(test_budget_infeasible_and_minimum),
        cmocka_unit_test(test_frontier),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_op_level_end_to_end),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_solver_crash_fails_only_the_plan),
        cmocka_unit_test(test_infeasible_end_to_end),
        cmocka_unit_test(test_numbers_out_of_the_solvers_range),
        cmocka_unit_test(test_milp_precheck_and_solve),
        cmocka_unit_test(test_concurrent_plans),
        cmocka_unit_test(test_budget_defaults_to_smallest_device),
        cmocka_unit_test(test_unknown_units_fail_decoding),
        cmocka_unit_test(test_module_bytes_are_bounded_by_2_53),
        cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_end_to_end_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
