/*
 * test_sac_model.c - the SAC model's constants and its exact plan scoring,
 * on a hand-built module tree with hand-computed figures:
 *
 *   m (root)  param 1000  grad_total 500  act_total 100 act_grad 10
 *             act_fw 50   sac_memory 40   sac_runtime 10, no segments
 *   m.a       grad_total 200  act_total 300 act_grad 20 act_fw 200
 *             sac_memory 400  sac_runtime 8, segments 1.0 r and 0.5 r + 0.2
 *   m.a.x     leaf; grad_total 100 act_total 250 act_fw 150 sac_memory 100
 *   m.b       grad_total 300 act_total 400 act_grad 5 act_fw 100
 *             sac_memory 100 sac_runtime 4, segment 2 r - 0.5
 *
 * Forward pre-order m, m.a, m.a.x, m.b; post-order m.a.x, m.a, m.b, m.
 */
#include "testutil.h"

#include <string.h>

#include "partd/partd.h"
#include "sac/sac_model.h"

typedef struct fixture {
    partd_module mods[4];
    uint32_t post[4];
    partd_modules m;
    double a_slopes[2], a_icpt[2], b_slopes[1], b_icpt[1];
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    partd_module *md = f.mods;
    md[0] = (partd_module){.param_per_module = 1000, .grad_total = 500, .act_total = 100,
                           .act_grad_per_module = 10, .act_fw_per_module = 50,
                           .sac_memory = 40, .sac_runtime = 10, .parent = PARTD_NONE};
    md[1] = (partd_module){.param_per_module = 300, .grad_total = 200, .act_total = 300,
                           .act_grad_per_module = 20, .act_fw_per_module = 200,
                           .sac_memory = 400, .sac_runtime = 8, .parent = 0};
    md[2] = (partd_module){.grad_total = 100, .act_total = 250, .act_fw_per_module = 150,
                           .sac_memory = 100, .is_leaf = 1, .parent = 1};
    md[3] = (partd_module){.grad_total = 300, .act_total = 400, .act_grad_per_module = 5,
                           .act_fw_per_module = 100, .sac_memory = 100, .sac_runtime = 4,
                           .parent = 0};
    f.a_slopes[0] = 1.0, f.a_icpt[0] = 0;
    f.a_slopes[1] = 0.5, f.a_icpt[1] = 0.2;
    md[1].n_segments = 2, md[1].slopes = f.a_slopes, md[1].intercepts = f.a_icpt;
    f.b_slopes[0] = 2.0, f.b_icpt[0] = -0.5;
    md[3].n_segments = 1, md[3].slopes = f.b_slopes, md[3].intercepts = f.b_icpt;
    const uint32_t post[4] = {2, 1, 3, 0};
    memcpy(f.post, post, sizeof post);
    for (uint32_t k = 0; k < 4; k++)
        md[post[k]].post_pos = k;
    f.m = (partd_modules){.n = 4, .mods = md, .post_order = f.post};
    *state = &f;
    return 0;
}

static void test_constants(void **state)
{
    fixture *f = *state;
    partd_sac_tree t;
    assert_int_equal(partd__sac_tree_build(&f->m, 1, NULL, 0, NULL, 0, &t), PARTD_OK);
    const int64_t acm[4] = {50, 400, 150, 100}; /* max(sac_memory, act_fw) */
    const int64_t ia[4] = {50, 200, 150, 100};
    const int32_t min_ratio[4] = {0, 5000, 0, 0}; /* ceil(1e4 (ACM - IA) / ACM) */
    const int64_t act[4] = {110, 320, 250, 405};
    const int64_t fixed[4] = {1500, 1200, 1100, 1300};
    const uint8_t eligible[4] = {1, 1, 0, 1}; /* every non-leaf */
    const uint32_t eparent[4] = {PARTD_NONE, 0, 1, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t.acm[i], acm[i]);
        assert_int_equal(t.ia[i], ia[i]);
        assert_int_equal(t.min_ratio_e4[i], min_ratio[i]);
        assert_int_equal(t.act[i], act[i]);
        assert_int_equal(t.fixed[i], fixed[i]);
        assert_int_equal(t.eligible[i], eligible[i]);
        assert_int_equal(t.eligible_parent[i], eparent[i]);
    }
    assert_int_equal(t.n_eligible, 3);
    assert_int_equal(t.reserve_bytes, 0);
    assert_int_equal(t.world_size, 1);
    partd__sac_tree_free(&t);
    assert_null(t.acm);

    /* world_size 0 is taken as 1. */
    assert_int_equal(partd__sac_tree_build(&f->m, 0, NULL, 0, NULL, 0, &t), PARTD_OK);
    assert_int_equal(t.world_size, 1);
    partd__sac_tree_free(&t);
}

static void test_ac_units_restrict_eligibility(void **state)
{
    fixture *f = *state;
    partd_sac_tree t;
    const uint32_t only_b[] = {3};
    assert_int_equal(partd__sac_tree_build(&f->m, 1, only_b, 1, NULL, 0, &t), PARTD_OK);
    assert_int_equal(t.n_eligible, 1);
    assert_int_equal(t.eligible[3], 1);
    assert_int_equal(t.eligible[0], 0);
    assert_int_equal(t.eligible_parent[3], PARTD_NONE);
    partd__sac_tree_free(&t);
    /* A leaf named as a unit is still not eligible. */
    const uint32_t leaf[] = {2};
    assert_int_equal(partd__sac_tree_build(&f->m, 1, leaf, 1, NULL, 0, &t), PARTD_OK);
    assert_int_equal(t.n_eligible, 0);
    partd__sac_tree_free(&t);
}

static void test_fsdp_units(void **state)
{
    fixture *f = *state;
    partd_sac_tree t;
    const uint32_t unit_a[] = {1};
    assert_int_equal(partd__sac_tree_build(&f->m, 2, NULL, 0, unit_a, 1, &t), PARTD_OK);
    /* The unit's ancestors cannot be checkpointed. */
    assert_int_equal(t.eligible[0], 0);
    assert_int_equal(t.eligible[1], 1);
    assert_int_equal(t.eligible[3], 1);
    assert_int_equal(t.n_eligible, 2);
    assert_int_equal(t.eligible_parent[2], 1);
    assert_int_equal(t.eligible_parent[3], PARTD_NONE);
    /* Reserve: 3 x max(unit 300, root's share 1000 - 300). */
    assert_int_equal(t.reserve_bytes, 2100);
    partd__sac_tree_free(&t);
}

static void plan_of(partd_sac_plan_vec *p, uint32_t module, int32_t ratio_e4)
{
    p->y[module] = 1;
    p->ratio_e4[module] = ratio_e4;
}

static void test_evaluate(void **state)
{
    fixture *f = *state;
    partd_sac_tree t;
    assert_int_equal(partd__sac_tree_build(&f->m, 1, NULL, 0, NULL, 0, &t), PARTD_OK);
    partd_sac_plan_vec p;
    assert_int_equal(partd__sac_plan_vec_alloc(&p, 4), PARTD_OK);
    partd_sac_score s;

    /* Nothing checkpointed: max(act + fixed) = m.b's 405 + 1300. */
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.peak_bytes, 1705);
    assert_true(s.recompute_ms == 0);
    assert_int_equal(s.within_ratio_bounds, 1);
    assert_int_equal(s.nested, 0);

    /* m.a at 0.75 discards 400 x 0.75 - 200 = 100 bytes for the modules
     * after it in post-order: m.b 1605, m 1510. Recompute 8 x 0.75. */
    plan_of(&p, 1, 7500);
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.peak_bytes, 1605);
    assert_true(s.recompute_ms == 6.0);
    assert_int_equal(s.within_ratio_bounds, 1);
    assert_int_equal(s.nested, 0);
    assert_true(partd__sac_fits(&t, &p, 1605));
    assert_false(partd__sac_fits(&t, &p, 1604));

    /* The root too: nested; its discard (50 - 0) comes after every module. */
    plan_of(&p, 0, 10000);
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.peak_bytes, 1605);
    assert_int_equal(s.nested, 1);
    assert_true(s.recompute_ms == 6.0); /* the root has no segments */

    /* Below m.a's minimal ratio (0.5). */
    p.y[0] = 0, p.ratio_e4[0] = 0;
    plan_of(&p, 1, 4000);
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.within_ratio_bounds, 0);
    /* Above 1. */
    plan_of(&p, 1, 10001);
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.within_ratio_bounds, 0);

    partd__sac_plan_vec_free(&p);
    assert_null(p.y);
    partd__sac_plan_vec_free(&p); /* twice is harmless */
    partd__sac_tree_free(&t);
}

/* world_size 3: fixed terms are shared, the peak is the ceiling of the exact
 * value (m.b: 405 + 1300 / 3 = 838.33...) and fits compares exactly. */
static void test_world_size_rounding(void **state)
{
    fixture *f = *state;
    partd_sac_tree t;
    assert_int_equal(partd__sac_tree_build(&f->m, 3, NULL, 0, NULL, 0, &t), PARTD_OK);
    partd_sac_plan_vec p;
    assert_int_equal(partd__sac_plan_vec_alloc(&p, 4), PARTD_OK);
    partd_sac_score s;
    partd__sac_evaluate(&t, &p, &s);
    assert_int_equal(s.peak_bytes, 839);
    assert_true(partd__sac_fits(&t, &p, 839));
    assert_false(partd__sac_fits(&t, &p, 838));
    partd__sac_plan_vec_free(&p);
    partd__sac_tree_free(&t);
}

static void test_recompute_fraction(void **state)
{
    fixture *f = *state;
    /* max(0, max_k slope_k r + intercept_k) */
    assert_true(partd__sac_recompute_fraction(&f->mods[1], 0.0) == 0.2);
    assert_true(partd__sac_recompute_fraction(&f->mods[1], 0.5) == 0.5);
    assert_true(partd__sac_recompute_fraction(&f->mods[3], 0.125) == 0.0); /* negative */
    assert_true(partd__sac_recompute_fraction(&f->mods[3], 0.5) == 0.5);
    assert_true(partd__sac_recompute_fraction(&f->mods[0], 0.9) == 0.0); /* no segments */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_constants, setup),
        cmocka_unit_test_setup(test_ac_units_restrict_eligibility, setup),
        cmocka_unit_test_setup(test_fsdp_units, setup),
        cmocka_unit_test_setup(test_evaluate, setup),
        cmocka_unit_test_setup(test_world_size_rounding, setup),
        cmocka_unit_test_setup(test_recompute_fraction, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
