/*
 * test_sac_result.c - rendering a SAC result as the result's `sac` member,
 * and releasing it (lib/sac_result.c).
 *
 * Results are built by hand on a hand-built module tree (m, m.a, m.b, m.c)
 * so that every field's name and value is known: an optimal and a feasible
 * main answer, the optional members (min_peak_memory_bytes,
 * fsdp_reserved_bytes), op policies (computed, infeasible, not asked for),
 * a frontier with optimal, feasible and no_solution points; free(NULL) and
 * the solve time. One result comes from partd_sac_plan on a tiny request, to
 * check the planner's result renders through the same code.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "partd/partd.h"
#include "partd/strtab.h"
#include "sac/sac.h"
#include "sac/sac_result.h"

#define N_MODS 4

typedef struct fixture {
    partd_request req;
    partd_module mods[N_MODS];
    uint32_t post[N_MODS];
    partd_modules m;
    partd_sac_stats stats[N_MODS];
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    partd_strtab_init(&f.req.strings);
    static const char *const names[N_MODS] = {"m", "m.a", "m.b", "m.c"};
    for (uint32_t i = 0; i < N_MODS; i++) {
        f.mods[i].fqn = partd_strtab_intern(&f.req.strings, names[i], strlen(names[i]));
        f.mods[i].parent = i ? 0 : PARTD_NONE;
        f.stats[i].n_ops = i + 1; /* m.a: 2 ops, m.b: 3, m.c: 4 */
        f.mods[i].sac_stats = &f.stats[i];
        f.post[i] = (i + 1) % N_MODS;
    }
    f.m = (partd_modules){.n = N_MODS, .mods = f.mods, .post_order = f.post};
    f.req.modules = &f.m;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    partd_strtab_free(&f->req.strings);
    return 0;
}

static struct partd_sac_result *new_result(void)
{
    struct partd_sac_result *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->n_modules = N_MODS;
    return r;
}

/* An answer checkpointing m.a at 0.5 and m.c at 1. */
static void answer(partd_sac_answer *a, partd_sac_status status, int64_t budget)
{
    a->status = status;
    a->budget_bytes = budget;
    if (status != PARTD_SAC_OPTIMAL && status != PARTD_SAC_FEASIBLE)
        return;
    assert_int_equal(partd__sac_plan_vec_alloc(&a->plan, N_MODS), PARTD_OK);
    memset(a->plan.y, 0, N_MODS);
    memset(a->plan.ratio_e4, 0, N_MODS * sizeof *a->plan.ratio_e4);
    a->plan.y[1] = 1;
    a->plan.ratio_e4[1] = 5000;
    a->plan.y[3] = 1;
    a->plan.ratio_e4[3] = 10000;
    a->peak_bytes = budget - 100;
    a->recompute_ms = 12.25;
    a->gap = status == PARTD_SAC_OPTIMAL ? 0 : 0.03;
}

static json_t *render(const fixture *f, const struct partd_sac_result *r)
{
    json_t *j = partd_sac_result_to_json(&f->req, r);
    assert_non_null(j);
    assert_true(json_is_object(j));
    return j;
}

/* j's keys are exactly `keys` (NULL-terminated). */
static void assert_keys(json_t *j, const char *const *keys)
{
    size_t n = 0;
    for (; keys[n]; n++) {
        if (!json_object_get(j, keys[n]))
            fprintf(stderr, "missing member %s\n", keys[n]);
        assert_non_null(json_object_get(j, keys[n]));
    }
    if (json_object_size(j) != n) {
        char *s = json_dumps(j, JSON_SORT_KEYS);
        fprintf(stderr, "members: %s\n", s);
        free(s);
    }
    assert_int_equal(json_object_size(j), n);
}

static double real_of(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

static json_int_t int_of(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static void assert_decisions(json_t *d)
{
    assert_true(json_is_object(d));
    assert_int_equal(json_object_size(d), 2);
    assert_true(real_of(d, "m.a") == 0.5);
    assert_true(real_of(d, "m.c") == 1.0);
}

static void test_optimal_answer(void **state)
{
    fixture *f = *state;
    struct partd_sac_result *r = new_result();
    answer(&r->main, PARTD_SAC_OPTIMAL, 5000);
    r->baseline_peak_bytes = 9000;
    r->solve_ms = 3.5;
    json_t *j = render(f, r);
    static const char *const keys[] = {"status", "ac_decisions", "recomputation_time_ms",
                                       "peak_memory_bytes", "baseline_peak_memory_bytes",
                                       "budget_bytes", "gap", NULL};
    assert_keys(j, keys);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "optimal");
    assert_decisions(json_object_get(j, "ac_decisions"));
    assert_true(real_of(j, "recomputation_time_ms") == 12.25);
    assert_int_equal(int_of(j, "peak_memory_bytes"), 4900);
    assert_int_equal(int_of(j, "baseline_peak_memory_bytes"), 9000);
    assert_int_equal(int_of(j, "budget_bytes"), 5000);
    assert_true(real_of(j, "gap") == 0);
    /* the solve time is no part of the document (determinism) */
    assert_true(partd__sac_result_solve_ms(r) == 3.5);
    json_decref(j);
    partd_sac_result_free(r);
}

static void test_feasible_with_optional_members(void **state)
{
    fixture *f = *state;
    struct partd_sac_result *r = new_result();
    answer(&r->main, PARTD_SAC_FEASIBLE, 7000);
    r->baseline_peak_bytes = 9000;
    r->has_min_peak = 1;
    r->min_peak_bytes = 2000;
    r->has_fsdp = 1;
    r->reserve_bytes = 600;
    json_t *j = render(f, r);
    static const char *const keys[] = {"status", "ac_decisions", "recomputation_time_ms",
                                       "peak_memory_bytes", "baseline_peak_memory_bytes",
                                       "min_peak_memory_bytes", "budget_bytes",
                                       "fsdp_reserved_bytes", "gap", NULL};
    assert_keys(j, keys);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "feasible");
    assert_true(real_of(j, "gap") == 0.03);
    assert_int_equal(int_of(j, "min_peak_memory_bytes"), 2000);
    assert_int_equal(int_of(j, "fsdp_reserved_bytes"), 600);
    assert_int_equal(int_of(j, "peak_memory_bytes"), 6900);
    json_decref(j);
    partd_sac_result_free(r);
}

static void test_empty_plan(void **state)
{
    fixture *f = *state;
    struct partd_sac_result *r = new_result();
    answer(&r->main, PARTD_SAC_OPTIMAL, 9000);
    memset(r->main.plan.y, 0, N_MODS);
    r->main.recompute_ms = 0;
    json_t *j = render(f, r);
    json_t *d = json_object_get(j, "ac_decisions");
    assert_true(json_is_object(d));
    assert_int_equal(json_object_size(d), 0);
    assert_true(real_of(j, "recomputation_time_ms") == 0);
    json_decref(j);
    partd_sac_result_free(r);
}

static void test_op_policies(void **state)
{
    fixture *f = *state;
    struct partd_sac_result *r = new_result();
    answer(&r->main, PARTD_SAC_OPTIMAL, 5000);
    r->policies = calloc(N_MODS, sizeof *r->policies);
    assert_non_null(r->policies);
    /* m.a: saved, recomputed */
    r->policies[1].computed = 1;
    r->policies[1].feasible = 1;
    r->policies[1].ops = malloc(2);
    r->policies[1].ops[0] = 1;
    r->policies[1].ops[1] = 0;
    /* m.b: no policy fits */
    r->policies[2].computed = 1;
    r->policies[2].feasible = 0;
    r->policies[2].ops = calloc(3, 1);
    /* m.c: checkpointed, but the policy was not asked for: absent */
    json_t *j = render(f, r);
    json_t *p = json_object_get(j, "op_policies");
    assert_true(json_is_object(p));
    assert_int_equal(json_object_size(p), 2);
    json_t *a = json_object_get(p, "m.a");
    assert_true(json_is_array(a));
    assert_int_equal(json_array_size(a), 2);
    assert_int_equal(json_integer_value(json_array_get(a, 0)), 1);
    assert_int_equal(json_integer_value(json_array_get(a, 1)), 0);
    json_t *b = json_object_get(p, "m.b");
    assert_true(json_is_array(b));
    assert_int_equal(json_array_size(b), 0);
    assert_null(json_object_get(p, "m.c"));
    json_decref(j);
    partd_sac_result_free(r); /* frees the ops too (ASan) */
}

static void test_frontier(void **state)
{
    fixture *f = *state;
    struct partd_sac_result *r = new_result();
    answer(&r->main, PARTD_SAC_OPTIMAL, 5000);
    r->n_frontier = 3;
    r->frontier = calloc(3, sizeof *r->frontier);
    assert_non_null(r->frontier);
    answer(&r->frontier[0], PARTD_SAC_OPTIMAL, 2000);
    answer(&r->frontier[1], PARTD_SAC_NO_SOLUTION, 5500);
    answer(&r->frontier[2], PARTD_SAC_FEASIBLE, 9000);
    json_t *j = render(f, r);
    json_t *fr = json_object_get(j, "frontier");
    assert_true(json_is_array(fr));
    assert_int_equal(json_array_size(fr), 3);

    static const char *const full[] = {"budget_bytes", "status", "ac_decisions",
                                       "recomputation_time_ms", "peak_memory_bytes", "gap",
                                       NULL};
    json_t *p0 = json_array_get(fr, 0);
    assert_keys(p0, full);
    assert_int_equal(int_of(p0, "budget_bytes"), 2000);
    assert_string_equal(json_string_value(json_object_get(p0, "status")), "optimal");
    assert_decisions(json_object_get(p0, "ac_decisions"));
    assert_int_equal(int_of(p0, "peak_memory_bytes"), 1900);
    assert_true(real_of(p0, "gap") == 0);

    static const char *const cut[] = {"budget_bytes", "status", NULL};
    json_t *p1 = json_array_get(fr, 1);
    assert_keys(p1, cut);
    assert_int_equal(int_of(p1, "budget_bytes"), 5500);
    assert_string_equal(json_string_value(json_object_get(p1, "status")), "no_solution");

    json_t *p2 = json_array_get(fr, 2);
    assert_keys(p2, full);
    assert_string_equal(json_string_value(json_object_get(p2, "status")), "feasible");
    assert_true(real_of(p2, "gap") == 0.03);
    assert_int_equal(int_of(p2, "budget_bytes"), 9000);
    json_decref(j);
    partd_sac_result_free(r);
}

static void test_free_null_and_solve_ms(void **state)
{
    (void)state;
    partd_sac_result_free(NULL);
    assert_true(partd__sac_result_solve_ms(NULL) == 0);
    struct partd_sac_result *r = new_result(); /* nothing allocated inside */
    partd_sac_result_free(r);
}

/* A real planner result: two blocks under a root, a budget between the least
 * peak and the baseline. */
static void test_planner_result_renders(void **state)
{
    (void)state;
    const char *mods =
        "{\"mod_order\":{\"fw_pre_order\":[\"m\",\"m.a\",\"m.b\"],"
        "\"fw_post_order\":[\"m.a\",\"m.b\",\"m\"],"
        "\"bw_pre_order\":[\"m\",\"m.a\",\"m.b\"],\"bw_post_order\":[\"m.a\",\"m.b\",\"m\"]},"
        "\"mod_stats\":[%s,%s,%s]}";
    const char *stat =
        "{\"fqn\":\"%s\",\"param_per_module\":%d,\"grad_per_module\":%d,\"grad_total\":%d,"
        "\"act_fw_per_module\":%d,\"act_bw_per_module\":0,\"act_grad_per_module\":0,"
        "\"act_total\":%d,\"input_per_module\":0,\"output_per_module\":0,"
        "\"fw_runtime_per_module\":1.0,\"bw_runtime_per_module\":2.0,\"is_leaf\":false,"
        "\"sac_runtime\":%d,\"sac_memory\":%d,\"n_segments\":1,\"slopes\":[1.0],"
        "\"intercepts\":[0.0],\"breakpoints\":[0.0,1.0],\"tradeoff_curve\":{}}";
    char s0[1024], s1[1024], s2[1024], doc[4096];
    snprintf(s0, sizeof s0, stat, "m", 100, 100, 100, 1000, 3000, 10, 1000);
    snprintf(s1, sizeof s1, stat, "m.a", 0, 0, 0, 1000, 1000, 4, 1000);
    snprintf(s2, sizeof s2, stat, "m.b", 0, 0, 0, 1000, 2000, 6, 1000);
    snprintf(doc, sizeof doc, mods, s0, s1, s2);
    json_error_t err;
    json_t *mj = json_loads(doc, 0, &err);
    assert_non_null(mj);
    partd_request *req = calloc(1, sizeof *req);
    assert_non_null(req);
    partd_strtab_init(&req->strings);
    partd_problem pb;
    partd_problem_init(&pb);
    char *canon = NULL;
    int rc = partd_modules_decode(mj, &req->strings, &pb, &req->modules, &canon);
    if (rc != PARTD_OK)
        for (uint32_t i = 0; i < pb.n_errors; i++)
            fprintf(stderr, "%s: %s\n", pb.errors[i].pointer, pb.errors[i].message);
    assert_int_equal(rc, PARTD_OK);
    free(canon);
    json_decref(mj);
    partd_sac_options *so = &req->options.sac;
    so->enabled = 1;
    so->world_size = 1;
    so->time_limit_ms = 20000;
    so->frontier_points = 2;

    /* first the baseline, from a budget above everything */
    so->memory_budget_bytes = (int64_t)1 << 40;
    struct partd_sac_result *res = NULL;
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_OK);
    json_t *j = partd_sac_result_to_json(req, res);
    assert_non_null(j);
    int64_t base = int_of(j, "baseline_peak_memory_bytes");
    int64_t least = int_of(j, "min_peak_memory_bytes");
    assert_true(least < base);
    assert_string_equal(json_string_value(json_object_get(j, "status")), "optimal");
    assert_int_equal(json_object_size(json_object_get(j, "ac_decisions")), 0);
    assert_true(real_of(j, "recomputation_time_ms") == 0);
    assert_int_equal(int_of(j, "peak_memory_bytes"), base);
    json_t *fr = json_object_get(j, "frontier");
    assert_int_equal(json_array_size(fr), 2);
    assert_int_equal(int_of(json_array_get(fr, 0), "budget_bytes"), least);
    assert_int_equal(int_of(json_array_get(fr, 1), "budget_bytes"), base);
    assert_int_equal(int_of(json_array_get(fr, 0), "peak_memory_bytes"), least);
    json_decref(j);
    partd_sac_result_free(res);

    /* then at the least peak: something is checkpointed */
    so->memory_budget_bytes = least;
    res = NULL;
    assert_int_equal(partd_sac_plan(req, NULL, &res, &pb), PARTD_OK);
    j = partd_sac_result_to_json(req, res);
    assert_non_null(j);
    assert_true(int_of(j, "peak_memory_bytes") <= least);
    assert_true(json_object_size(json_object_get(j, "ac_decisions")) >= 1);
    assert_true(real_of(j, "recomputation_time_ms") > 0);
    assert_int_equal(int_of(j, "budget_bytes"), least);
    json_decref(j);
    partd_sac_result_free(res);

    partd_problem_free(&pb);
    partd_modules_free(req->modules);
    partd_strtab_free(&req->strings);
    free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimal_answer),
        cmocka_unit_test(test_feasible_with_optional_members),
        cmocka_unit_test(test_empty_plan),
        cmocka_unit_test(test_op_policies),
        cmocka_unit_test(test_frontier),
        cmocka_unit_test(test_free_null_and_solve_ms),
        cmocka_unit_test(test_planner_result_renders),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
