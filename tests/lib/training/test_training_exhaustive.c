/*
 * test_training_exhaustive.c - the exhaustive search
 * (lib/training/training_exhaustive.h).
 *
 * On small stacks over devices of mixed speeds, with no checkpoints (one
 * set per stage): the plan it finds is the best of every split of every
 * configuration of the space, each timed here, and it times each once;
 * with memory that nothing fits, the plan of least shortfall.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "partd/decode.h"
#include "partd/partd.h"
#include "testutil.h"
#include "training/training_exhaustive.h"
#include "training_test.h"

/* Every split of every configuration of sp, timed here: the best into b,
 * the splits counted. */
static uint64_t every_plan(const partd_training_model *md, const partd_training_space *sp,
                           partd_training_best *b)
{
    uint64_t plans = 0;
    for (uint32_t k = 0; k < sp->n; k++) {
        partd_training_cfg c;
        assert_int_equal(partd__training_space_build(sp, k, &c), PARTD_OK);
        partd_training_plan p = {0};
        assert_int_equal(partd__training_plan_alloc(&p, c.S, c.V), PARTD_OK);
        uint32_t V = c.V, n = md->n_units;
        for (uint32_t j = 0; j <= V; j++)
            p.cut[j] = j < V ? j : n;
        for (;;) {
            partd__training_eval_stages(md, &c, p.cut);
            assert_int_equal(partd__training_eval_choose(md, &c, &p), PARTD_OK);
            assert_int_equal(partd__training_plan_offer(b, &p), PARTD_OK);
            plans++;
            uint32_t j = V - 1;
            while (j >= 1 && p.cut[j] + 1 > n - (V - j))
                j--;
            if (j < 1)
                break;
            p.cut[j]++;
            for (uint32_t i = j + 1; i < V; i++)
                p.cut[i] = p.cut[i - 1] + 1;
        }
        partd__training_plan_free(&p);
        partd__training_cfg_free(&c);
    }
    return plans;
}

static void check(uint32_t n, const double *speed, uint32_t S, long long mem, int fits)
{
    partd_request *req = tt_stack(n, speed, S, mem);
    partd_training_model md;
    tt_model(&md, req);
    partd_training_space sp;
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    assert_true(sp.n > 0);
    partd_training_stats st = {0};
    partd_training_best got = {{0}, 0}, want = {{0}, 0};
    assert_int_equal(partd__training_exhaustive(&sp, &got, &st), PARTD_OK);
    uint64_t plans = every_plan(&md, &sp, &want);
    assert_true(got.any && want.any);
    assert_int_equal(got.p.feasible, fits);
    assert_int_equal(partd__training_plan_cmp(&got.p, &want.p), 0);
    assert_memory_equal(got.p.cut, want.p.cut, (want.p.V + 1) * sizeof *want.p.cut);
    assert_memory_equal(got.p.dev, want.p.dev, want.p.S * sizeof *want.p.dev);
    assert_int_equal(st.configs, sp.n);
    assert_int_equal(st.evaluations, plans);
    partd__training_plan_free(&got.p);
    partd__training_plan_free(&want.p);
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_the_best_of_every_plan(void **state)
{
    (void)state;
    check(6, (const double[]){1, 2, 1.5}, 3, 1000000000, 1);
    check(7, (const double[]){2, 1}, 2, 1000000000, 1);
}

static void test_the_least_short_when_nothing_fits(void **state)
{
    (void)state;
    check(6, (const double[]){1, 2, 1.5}, 3, 10, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_best_of_every_plan),
        cmocka_unit_test(test_the_least_short_when_nothing_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
