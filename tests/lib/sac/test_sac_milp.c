/*
 * test_sac_milp.c - the module-level SAC model on CBC (lib/sac_milp.c).
 *
 * Random hand-built module trees of 2 to 4 modules whose recompute curves are
 * single segments that never rise with the discard ratio (slope <= 0): for
 * any set of checkpointed modules the best ratios are then all 1, so the
 * optimum of both goals is found by enumerating every checkpoint choice (every
 * set of eligible modules with no two nested) at ratio 1:
 *   MIN_PEAK       the least peak over all choices,
 *   MIN_RECOMPUTE  the least recomputation among the choices within the cap.
 * Peaks are scored with partd__sac_evaluate (tested in test_sac_model.c);
 * recomputation is summed here. Also: a cap below every peak is infeasible,
 * and a raised cancel fails the solve with PARTD_ECANCELLED.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/cancel.h"
#include "partd/partd.h"
#include "sac/sac_milp.h"
#include "sac/sac_model.h"

#define MAXM 4

typedef struct fixture {
    partd_module mods[MAXM];
    uint32_t post[MAXM];
    double slope[MAXM], icpt[MAXM];
    partd_modules m;
    partd_sac_tree t;
} fixture;

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t irand(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static uint32_t post_k;

static void post_visit(fixture *f, uint32_t i)
{
    for (uint32_t c = i + 1; c < f->m.n; c++)
        if (f->mods[c].parent == i)
            post_visit(f, c);
    f->mods[i].post_pos = post_k;
    f->post[post_k++] = i;
}

/* A random tree of n modules in forward pre-order: each module's parent is
 * on the path from the root to the previous module. */
static void random_tree(fixture *f, uint32_t n)
{
    memset(f, 0, sizeof *f);
    for (uint32_t i = 0; i < n; i++) {
        partd_module *md = &f->mods[i];
        if (i == 0) {
            md->parent = PARTD_NONE;
        } else {
            uint32_t path[MAXM], len = 0;
            for (uint32_t a = i - 1; a != PARTD_NONE; a = f->mods[a].parent)
                path[len++] = a;
            md->parent = path[rnd() % len];
        }
        md->param_per_module = irand(0, 1000);
        md->grad_total = irand(0, 1000);
        md->act_fw_per_module = irand(1, 1000);
        md->sac_memory = irand(0, 1500);
        md->act_total = irand(md->act_fw_per_module, 3000);
        md->act_grad_per_module = irand(0, 200);
        md->sac_runtime = (double)irand(1, 40);
        md->is_leaf = rnd() % 5 == 0;
        f->slope[i] = -(double)irand(0, 4) / 4;
        f->icpt[i] = (double)irand(0, 8) / 4;
        md->n_segments = 1;
        md->slopes = &f->slope[i];
        md->intercepts = &f->icpt[i];
    }
    f->m = (partd_modules){.n = n, .mods = f->mods, .post_order = f->post};
    post_k = 0;
    post_visit(f, 0);
    assert_int_equal(post_k, n);
    assert_int_equal(partd__sac_tree_build(&f->m, 1, NULL, 0, NULL, 0, &f->t), PARTD_OK);
}

static int nested(const fixture *f, uint32_t set)
{
    for (uint32_t i = 0; i < f->m.n; i++)
        if (set >> i & 1)
            for (uint32_t a = f->mods[i].parent; a != PARTD_NONE; a = f->mods[a].parent)
                if (set >> a & 1)
                    return 1;
    return 0;
}

typedef struct choice {
    int64_t peak;
    double recompute;
} choice;

/* Scores the choice `set` at ratio 1; 0 when it is not a valid choice. */
static int score(const fixture *f, uint32_t set, choice *c)
{
    if (nested(f, set))
        return 0;
    for (uint32_t i = 0; i < f->m.n; i++)
        if ((set >> i & 1) && !f->t.eligible[i])
            return 0;
    partd_sac_plan_vec p;
    assert_int_equal(partd__sac_plan_vec_alloc(&p, f->m.n), PARTD_OK);
    c->recompute = 0;
    for (uint32_t i = 0; i < f->m.n; i++) {
        p.y[i] = set >> i & 1;
        p.ratio_e4[i] = p.y[i] ? PARTD_SAC_RATIO_SCALE : 0;
        if (p.y[i])
            c->recompute += f->mods[i].sac_runtime * fmax(0, f->slope[i] + f->icpt[i]);
    }
    partd_sac_score s;
    partd__sac_evaluate(&f->t, &p, &s);
    partd__sac_plan_vec_free(&p);
    c->peak = s.peak_bytes;
    return 1;
}

static int solve(const fixture *f, partd_sac_goal goal, double cap,
                 const partd_solver_env *env, partd_sac_milp_out *out)
{
    partd_sac_milp_params p = {goal, cap, 20.0, 0, env};
    return partd__sac_milp_solve(&f->t, &p, out);
}

/* The solver's y is a valid choice and, at ratio 1, within the cap. */
static void check_solution(const fixture *f, const partd_sac_milp_out *out, double cap,
                           int64_t best_peak)
{
    uint32_t set = 0;
    for (uint32_t i = 0; i < f->m.n; i++) {
        assert_true(out->y[i] <= 1);
        set |= (uint32_t)out->y[i] << i;
        if (!out->y[i])
            assert_true(fabs(out->r[i]) < 1e-6);
    }
    choice c;
    assert_true(score(f, set, &c));
    if (cap > 0)
        assert_true(c.peak <= best_peak || (double)c.peak <= cap);
}

static void test_against_enumeration(void **state)
{
    (void)state;
    uint8_t y[MAXM];
    double r[MAXM];
    int infeasible_seen = 0, trials = 0;
    for (int trial = 0; trial < 60; trial++) {
        fixture f;
        uint32_t n = 2 + (uint32_t)(trial % 3);
        random_tree(&f, n);
        choice all[1u << MAXM];
        int valid[1u << MAXM];
        int64_t min_peak = INT64_MAX, max_peak = 0;
        for (uint32_t set = 0; set < 1u << n; set++) {
            valid[set] = score(&f, set, &all[set]);
            if (valid[set]) {
                min_peak = all[set].peak < min_peak ? all[set].peak : min_peak;
                max_peak = all[set].peak > max_peak ? all[set].peak : max_peak;
            }
        }
        /* the least peak */
        partd_sac_milp_out out = {.y = y, .r = r};
        assert_int_equal(solve(&f, PARTD_SAC_MIN_PEAK, 0, NULL, &out), PARTD_OK);
        assert_int_equal(out.status, PARTD_SAC_SOLVED_OPTIMAL);
        if (fabs(out.objective - (double)min_peak) > 1.0)
            fprintf(stderr, "trial %d: min peak %g, enumeration %lld\n", trial, out.objective,
                    (long long)min_peak);
        assert_true(fabs(out.objective - (double)min_peak) <= 1.0);
        check_solution(&f, &out, 0, min_peak);

        /* the least recomputation under caps between the peaks */
        for (uint32_t cset = 0; cset < 1u << n; cset++) {
            if (!valid[cset])
                continue;
            double cap = (double)all[cset].peak + 0.5;
            double best = INFINITY;
            for (uint32_t set = 0; set < 1u << n; set++)
                if (valid[set] && (double)all[set].peak <= cap)
                    best = fmin(best, all[set].recompute);
            assert_int_equal(solve(&f, PARTD_SAC_MIN_RECOMPUTE, cap, NULL, &out), PARTD_OK);
            assert_int_equal(out.status, PARTD_SAC_SOLVED_OPTIMAL);
            if (fabs(out.objective - best) > 1e-6)
                fprintf(stderr, "trial %d cap %g: recompute %g, enumeration %g\n", trial, cap,
                        out.objective, best);
            assert_true(fabs(out.objective - best) <= 1e-6);
            check_solution(&f, &out, cap, min_peak);
            trials++;
        }
        /* below every peak: no plan */
        if (min_peak > 1) {
            assert_int_equal(solve(&f, PARTD_SAC_MIN_RECOMPUTE, (double)min_peak - 1, NULL,
                                   &out),
                             PARTD_OK);
            assert_int_equal(out.status, PARTD_SAC_SOLVED_INFEASIBLE);
            infeasible_seen++;
        }
        partd__sac_tree_free(&f.t);
    }
    assert_true(trials >= 60);
    assert_true(infeasible_seen > 0);
}

/* A chain root -> a -> b with hand-computed figures: checkpointing is free
 * (intercept 0) for b only, so under a cap that needs a discard the
 * optimum checkpoints b alone and recomputes nothing. */
static void test_nested_choice_excluded(void **state)
{
    (void)state;
    fixture f;
    random_tree(&f, 3);
    partd__sac_tree_free(&f.t);
    f.mods[1].parent = 0;
    f.mods[2].parent = 1;
    for (uint32_t i = 0; i < 3; i++) {
        f.mods[i].is_leaf = 0;
        f.slope[i] = 0;
        f.icpt[i] = 1;
    }
    f.icpt[2] = 0;
    post_k = 0;
    post_visit(&f, 0);
    assert_int_equal(partd__sac_tree_build(&f.m, 1, NULL, 0, NULL, 0, &f.t), PARTD_OK);
    choice c;
    int64_t with_b = score(&f, 4, &c) ? c.peak : -1;
    uint8_t y[3];
    double r[3];
    partd_sac_milp_out out = {.y = y, .r = r};
    assert_int_equal(solve(&f, PARTD_SAC_MIN_RECOMPUTE, (double)with_b + 0.5, NULL, &out),
                     PARTD_OK);
    assert_int_equal(out.status, PARTD_SAC_SOLVED_OPTIMAL);
    assert_true(out.objective <= 1e-9);
    assert_int_equal(y[0] + y[1] + y[2] <= 1, 1); /* never two on one path */
    partd__sac_tree_free(&f.t);
}

static void test_cancelled(void **state)
{
    (void)state;
    fixture f;
    random_tree(&f, 3);
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    atomic_store(&cancel.cancelled, 1);
    partd_solver_env env = {&cancel, NULL, 0};
    uint8_t y[3];
    double r[3];
    partd_sac_milp_out out = {.y = y, .r = r};
    assert_int_equal(solve(&f, PARTD_SAC_MIN_PEAK, 0, &env, &out), PARTD_ECANCELLED);
    assert_int_equal(solve(&f, PARTD_SAC_MIN_RECOMPUTE, 1e9, &env, &out), PARTD_ECANCELLED);
    partd__sac_tree_free(&f.t);
}

static void test_out_of_range_numbers(void **state)
{
    (void)state;
    /* A runtime beyond the solver's range is refused with a 422 problem. */
    fixture f;
    random_tree(&f, 2);
    partd__sac_tree_free(&f.t);
    f.mods[0].is_leaf = 0;
    f.mods[0].sac_runtime = 1e300;
    f.icpt[0] = 1;
    assert_int_equal(partd__sac_tree_build(&f.m, 1, NULL, 0, NULL, 0, &f.t), PARTD_OK);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_solver_env env = {NULL, &pb, 0};
    uint8_t y[2];
    double r[2];
    partd_sac_milp_out out = {.y = y, .r = r};
    assert_int_equal(solve(&f, PARTD_SAC_MIN_RECOMPUTE, 1e12, &env, &out), PARTD_EINVALID);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, "/graph/modules", "out of the solver's range");
    partd_problem_free(&pb);
    partd__sac_tree_free(&f.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_enumeration),
        cmocka_unit_test(test_nested_choice_excluded),
        cmocka_unit_test(test_cancelled),
        cmocka_unit_test(test_out_of_range_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
