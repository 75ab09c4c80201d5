/*
 * test_training_dp.c - the training search's memory (lib/training_dp.c,
 * lib/training_stage.c's rows, partd_training_stats_run): linear in the
 * units.
 *
 * On GPT-like stacks (bench/support/gen.c) of N and 2N blocks, the search's
 * high-water mark of bytes (a deterministic count the planner keeps, not a
 * measurement) at most doubles, plus a little, while the number of
 * candidate stages grows quadratically (with memory for the whole graph on
 * every device and M = 1 every range is a candidate: the row of the first
 * unit, row_cells, doubles with N). Also: everything counted is released,
 * and the search computes one row per unit and pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gen.h"
#include "partd.h"
#include "plan.h"
#include "problem.h"
#include "testutil.h"
#include "training.h"

/* Plans `blocks` identical blocks on `devices` devices of two kinds with
 * the given options.training members; returns the search's figures. */
static partd_training_stats stats_for(uint32_t blocks, uint32_t devices, double slack,
                                      const char *training)
{
    char options[256];
    snprintf(options, sizeof options, "\"training\":{%s}", training);
    partd_gen_spec spec = {.n_nodes = blocks * 14 + 8, .n_devices = devices,
                           .memory_slack = slack, .mode = "training",
                           .extra_options = options, .seed = 5, .identical_blocks = 1,
                           .two_kinds = 1};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    assert_non_null(text);
    partd_request *req = tu_decode_ok(text);
    free(text);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan = NULL;
    partd_training_stats st;
    int rc = partd_training_stats_run(req, NULL, &plan, &pb, &st);
    if (rc != PARTD_OK)
        fprintf(stderr, "plan: %s %s\n", partd_strerror(rc), pb.detail ? pb.detail : "");
    assert_int_equal(rc, PARTD_OK);
    assert_non_null(plan->training);
    assert_int_equal(st.live_bytes, 0); /* every buffer counted was released */
    assert_true(st.peak_bytes > 0);
    assert_true(st.passes >= 1);
    /* One row per unit and pass, and one per stage of the plan checked. */
    uint32_t n_units = plan->training->n_units;
    assert_true(st.rows >= (uint64_t)n_units * st.passes);
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return st;
}

/* Doubling the blocks from `base` three times: the peak at most doubles
 * (+ 4 KiB) each time. When `all_ranges`, the first row holds every range
 * (its cells double too), so a stored table would have quadrupled. */
static void check_linear(uint32_t base, uint32_t devices, double slack, const char *training,
                         int all_ranges)
{
    partd_training_stats prev = stats_for(base, devices, slack, training);
    for (uint32_t blocks = 2 * base; blocks <= 8 * base; blocks *= 2) {
        partd_training_stats st = stats_for(blocks, devices, slack, training);
        if (st.peak_bytes > 2 * prev.peak_bytes + 4096)
            fprintf(stderr, "%u blocks: %llu bytes, %u blocks: %llu bytes\n", blocks / 2,
                    (unsigned long long)prev.peak_bytes, blocks,
                    (unsigned long long)st.peak_bytes);
        assert_true(st.peak_bytes <= 2 * prev.peak_bytes + 4096);
        assert_true(st.row_cells <= 2 * prev.row_cells + 64);
        if (all_ranges)
            assert_true(st.row_cells * 10 >= prev.row_cells * 19);
        prev = st;
    }
}

static void test_linear_every_range_a_candidate(void **state)
{
    (void)state;
    /* M = 1, memory for the graph 8 times over on each device. */
    check_linear(40, 4, 32.0, "\"microbatches\":1,\"device_order\":\"auto\"", 1);
    check_linear(40, 4, 32.0, "\"microbatches\":1", 1);
}

static void test_linear_pipelined_with_checkpointing(void **state)
{
    (void)state;
    /* M = 8: the bound search's many passes, 1f1b's in-flight counts (and
     * the given order's tails), gpipe; less memory, so that long stages
     * need checkpoint sets. */
    check_linear(20, 6, 4.0, "\"microbatches\":8,\"device_order\":\"auto\"", 0);
    check_linear(20, 6, 4.0, "\"microbatches\":8", 0);
    check_linear(20, 6, 4.0, "\"microbatches\":8,\"schedule\":\"gpipe\"", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_every_range_a_candidate),
        cmocka_unit_test(test_linear_pipelined_with_checkpointing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
