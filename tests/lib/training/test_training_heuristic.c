/*
 * test_training_heuristic.c - the search of a large space
 * (lib/training/training_heuristic.h).
 *
 * On spaces small enough for the exhaustive search too: the plan it finds
 * fits and is no better than the exhaustive search's optimum, and its
 * lower bound is no more than that optimum (nor than its own step). On
 * more devices of distinct speeds than the space keeps sequences of: the
 * bound is no more than the fluid bound of the fastest devices.
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
#include "training/training_heuristic.h"
#include "training_test.h"

static void check(uint32_t n, const double *speed, uint32_t S)
{
    partd_request *req = tt_stack(n, speed, S, 1000000000);
    partd_training_model md;
    tt_model(&md, req);
    partd_training_space sp;
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    partd_training_stats st = {0};
    partd_training_best opt = {{0}, 0}, got = {{0}, 0};
    assert_int_equal(partd__training_exhaustive(&sp, &opt, &st), PARTD_OK);
    double lower = 0;
    assert_int_equal(partd__training_heuristic(&sp, &got, &st, &lower), PARTD_OK);
    assert_true(got.any && got.p.feasible && opt.p.feasible);
    assert_true(got.p.step >= opt.p.step);
    assert_true(lower <= opt.p.step * (1 + 1e-9));
    assert_true(lower <= got.p.step);
    assert_true(lower > 0);
    partd__training_plan_free(&got.p);
    partd__training_plan_free(&opt.p);
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);
}

static void test_no_better_than_the_optimum_bounded_below_it(void **state)
{
    (void)state;
    check(6, (const double[]){1, 2, 1.5}, 3);
    check(9, (const double[]){2, 1}, 2);
    check(8, (const double[]){1, 1, 3, 1}, 4);
}

static void test_bounded_by_the_sequences_left_out(void **state)
{
    (void)state;
    double speed[12];
    for (uint32_t d = 0; d < 12; d++)
        speed[d] = 1 + d / 4.0;
    partd_request *req = tt_stack(12, speed, 12, 1000000000);
    partd_training_model md;
    tt_model(&md, req);
    partd_training_space sp;
    assert_int_equal(partd__training_space_enumerate(&sp, &md, NULL), PARTD_OK);
    assert_true(sp.partial);
    partd_training_stats st = {0};
    partd_training_best got = {{0}, 0};
    double lower = 0;
    assert_int_equal(partd__training_heuristic(&sp, &got, &st, &lower), PARTD_OK);
    assert_true(got.any && got.p.feasible);
    assert_true(lower <= sp.partial_lb);
    assert_true(lower <= got.p.step);
    partd__training_plan_free(&got.p);
    partd__training_space_free(&sp);
    partd__training_model_free(&md);
    partd_request_free(req);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_better_than_the_optimum_bounded_below_it),
        cmocka_unit_test(test_bounded_by_the_sequences_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
