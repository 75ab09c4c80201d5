/* test_show_schedule.c - the simulated training step of `partd show`: the
 * order of each stage's blocks under gpipe and 1f1b, and a timeline in which
 * no stage runs two blocks at once, every block waits for its inputs, and
 * none waits longer than it must. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "partd.h"
#include "show_schedule.h"

#define F(m) SHOW_OP_FWD(m)
#define B(m) SHOW_OP_BWD(m)
#define EPS 1e-9

static void assert_order(size_t S, size_t M, int ofob, size_t s, const uint32_t *want)
{
    uint32_t got[64];
    show_schedule_order(S, M, ofob, s, got);
    for (size_t k = 0; k < 2 * M; k++)
        assert_int_equal(got[k], want[k]);
}

static void test_gpipe_runs_all_forwards_then_all_backwards(void **state)
{
    (void)state;
    const uint32_t want[] = {F(0), F(1), F(2), B(0), B(1), B(2)};
    for (size_t s = 0; s < 4; s++)
        assert_order(4, 3, 0, s, want);
}

static void test_1f1b_warms_up_then_alternates(void **state)
{
    (void)state;
    /* S = 4, M = 6: stage 1 runs min(6, 3) = 3 forwards first. */
    const uint32_t s1[] = {F(0), F(1), F(2), B(0), F(3), B(1), F(4), B(2), F(5), B(3), B(4), B(5)};
    assert_order(4, 6, 1, 1, s1);
    /* The last stage alternates from the start. */
    const uint32_t s3[] = {F(0), B(0), F(1), B(1), F(2), B(2), F(3), B(3), F(4), B(4), F(5), B(5)};
    assert_order(4, 6, 1, 3, s3);
    /* Fewer microbatches than stages ahead: all forwards, then backwards. */
    const uint32_t few[] = {F(0), F(1), B(0), B(1)};
    assert_order(4, 2, 1, 0, few);
}

static void test_every_block_once(void **state)
{
    (void)state;
    for (size_t S = 1; S <= 6; S++)
        for (size_t M = 1; M <= 9; M++)
            for (int ofob = 0; ofob < 2; ofob++)
                for (size_t s = 0; s < S; s++) {
                    uint32_t ops[18];
                    int seen[18] = {0};
                    show_schedule_order(S, M, ofob, s, ops);
                    for (size_t k = 0; k < 2 * M; k++) {
                        assert_true(ops[k] < 2 * M);
                        seen[ops[k]]++;
                    }
                    for (size_t k = 0; k < 2 * M; k++)
                        assert_int_equal(seen[k], 1);
                }
}

/* Checks the timeline: per stage the blocks run in the schedule's order
 * without overlap, each after its inputs, and each starts exactly when the
 * later of its stage and its inputs is ready (no idle time is invented). */
static void check_timeline(const show_schedule *sch, int ofob, const double *fwd,
                           const double *bwd)
{
    size_t S = sch->stages, M = sch->microbatches;
    uint32_t *ops = malloc(2 * M * sizeof *ops);
    for (size_t s = 0; s < S; s++) {
        show_schedule_order(S, M, ofob, s, ops);
        double free_at = 0;
        for (size_t k = 0; k < 2 * M; k++) {
            size_t m = SHOW_OP_MB(ops[k]), i = s * M + m;
            int back = SHOW_OP_IS_BWD(ops[k]);
            double start = back ? sch->bwd_start[i] : sch->fwd_start[i];
            double end = back ? sch->bwd_end[i] : sch->fwd_end[i];
            double ready = free_at;
            if (!back && s > 0)
                ready = fmax(ready, sch->fwd_end[(s - 1) * M + m]);
            if (back) {
                ready = fmax(ready, sch->fwd_end[i]);
                if (s + 1 < S)
                    ready = fmax(ready, sch->bwd_end[(s + 1) * M + m]);
            }
            assert_true(start >= free_at - EPS); /* no overlap on the stage */
            assert_true(fabs(start - ready) < EPS);
            assert_true(fabs(end - start - (back ? bwd[s] : fwd[s])) < EPS);
            assert_true(end <= sch->makespan + EPS);
            free_at = end;
        }
    }
    free(ops);
}

static void test_timeline_respects_stages_and_dependencies(void **state)
{
    (void)state;
    unsigned seed = 12345;
    for (size_t S = 1; S <= 7; S++)
        for (size_t M = 1; M <= 10; M += 3)
            for (int ofob = 0; ofob < 2; ofob++) {
                double fwd[7], bwd[7];
                for (size_t s = 0; s < S; s++) {
                    seed = seed * 1103515245u + 12345u;
                    fwd[s] = 0.5 + (seed >> 16) % 100 / 50.0;
                    bwd[s] = 2 * fwd[s] + (s % 2);
                }
                show_schedule sch;
                assert_int_equal(show_schedule_run(S, M, ofob, fwd, bwd, &sch), PARTD_OK);
                check_timeline(&sch, ofob, fwd, bwd);
                show_schedule_free(&sch);
            }
}

static void test_uniform_stages_take_the_textbook_time(void **state)
{
    (void)state;
    /* Equal stages: both schedules take (S + M - 1)(f + b). */
    double fwd[4] = {1, 1, 1, 1}, bwd[4] = {2, 2, 2, 2};
    for (int ofob = 0; ofob < 2; ofob++) {
        show_schedule sch;
        assert_int_equal(show_schedule_run(4, 8, ofob, fwd, bwd, &sch), PARTD_OK);
        assert_true(fabs(sch.makespan - (4 + 8 - 1) * 3.0) < EPS);
        show_schedule_free(&sch);
    }
}

static void test_rejects_empty_and_negative(void **state)
{
    (void)state;
    double ok[2] = {1, 1}, bad[2] = {1, -1}, nan_[2] = {1, NAN};
    show_schedule sch;
    assert_int_equal(show_schedule_run(0, 4, 1, ok, ok, &sch), PARTD_EINVALID);
    assert_int_equal(show_schedule_run(2, 0, 1, ok, ok, &sch), PARTD_EINVALID);
    assert_int_equal(show_schedule_run(2, 4, 1, ok, bad, &sch), PARTD_EINVALID);
    assert_int_equal(show_schedule_run(2, 4, 0, nan_, ok, &sch), PARTD_EINVALID);
    assert_int_equal(show_schedule_run(2, (size_t)1 << 40, 0, ok, ok, &sch), PARTD_EINVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpipe_runs_all_forwards_then_all_backwards),
        cmocka_unit_test(test_1f1b_warms_up_then_alternates),
        cmocka_unit_test(test_every_block_once),
        cmocka_unit_test(test_timeline_respects_stages_and_dependencies),
        cmocka_unit_test(test_uniform_stages_take_the_textbook_time),
        cmocka_unit_test(test_rejects_empty_and_negative),
    };
    return cmocka_run_group_tests_name("show_schedule", tests, NULL, NULL);
}
