/*
 * bench_training.c - training planning time (mode "training", everything
 * auto: stage count, device order, checkpoint sets, unit depth).
 *
 * Synthetic GPT-like stacks of identical blocks (bench/support/gen.c, 14
 * operations per block, one unit per block plus the embedding and head
 * units) on devices of two kinds (half twice as fast with 1.3x the memory of
 * an even share, half 0.7x), memory_slack times the graph's bytes in all:
 *   - 96 blocks (~100 units, ~1350 nodes) on 8 devices, M = 16;
 *   - ~1000 units on 64 devices, M = 16, device order auto and given.
 * Prints the best planning time of a few runs (partd_training_stats_run on
 * the decoded request), step, stages and the number of checkpointed units. Asserts
 * nothing about time; the targets are 1 s and 10 s on 2 cores.
 *
 * Memory: for 250 to 2,000 units (M = 1, memory for the whole graph on
 * every device: every range is a candidate stage, the case a stored stage
 * table made quadratic), the
 * search's own high-water mark (partd_training_stats_run) and the process's
 * peak RSS, which must grow linearly with the units.
 */
#include <sys/resource.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "decode.h"
#include "gen.h"
#include "partd.h"
#include "training.h"

static double ms_since(int64_t t0)
{
    return (double)(partd_monotonic_ns() - t0) / 1e6;
}

static int bench_one(const char *label, uint32_t blocks, uint32_t devices, double slack,
                     const char *options, int runs)
{
    partd_gen_spec spec = {.n_nodes = blocks * 14 + 8, .n_devices = devices,
                           .memory_slack = slack, .mode = "training",
                           .extra_options = options, .seed = 11, .identical_blocks = 1,
                           .two_kinds = 1};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text)
        return 1;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    int rc = partd_request_decode(text, len, NULL, &req, &pb);
    free(text);
    if (rc != PARTD_OK) {
        fprintf(stderr, "decode: %s %s\n", partd_strerror(rc), pb.detail ? pb.detail : "");
        partd_problem_free(&pb);
        return 1;
    }
    double best = 1e300;
    partd_plan *plan = NULL;
    partd_training_stats st = {0};
    for (int r = 0; r < runs; r++) {
        partd_plan_free(plan);
        plan = NULL;
        int64_t t0 = partd_monotonic_ns();
        rc = partd_training_stats_run(req, NULL, &plan, &pb, &st);
        double ms = ms_since(t0);
        if (ms < best)
            best = ms;
        if (rc != PARTD_OK)
            break;
    }
    if (rc != PARTD_OK) {
        printf("%-44s %s: %s\n", label, partd_strerror(rc), pb.detail ? pb.detail : "");
    } else {
        const partd_training_result *t = plan->training;
        uint32_t ck = 0;
        for (uint32_t s = 0; s < t->n_stages; s++)
            ck += t->stages[s].n_checkpointed;
        printf("%-44s %5u units  plan %9.1f ms  step %10.3f ms  stages %2u  "
               "bubble %.3f  checkpointed units %u  DP passes %u  search peak %.1f KiB\n",
               label, t->n_units, best, t->step_ms, t->n_stages, t->bubble_fraction, ck,
               st.passes, (double)st.peak_bytes / 1024);
    }
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return rc == PARTD_OK ? 0 : 1;
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* One planning of `blocks` blocks on `devices` devices of two kinds, M = 1,
 * device order auto: the search's memory figures. Sizes ascending, so the
 * process's peak RSS after each is that size's. */
static int bench_memory(uint32_t blocks, uint32_t devices)
{
    partd_gen_spec spec = {.n_nodes = blocks * 14 + 8, .n_devices = devices,
                           .memory_slack = 8.0 * devices, .mode = "training",
                           .extra_options = "\"training\":{\"microbatches\":1,"
                                            "\"device_order\":\"auto\"}",
                           .seed = 11, .identical_blocks = 1, .two_kinds = 1};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text)
        return 1;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    int rc = partd_request_decode(text, len, NULL, &req, &pb);
    free(text);
    partd_plan *plan = NULL;
    partd_training_stats st;
    int64_t t0 = partd_monotonic_ns();
    if (rc == PARTD_OK)
        rc = partd_training_stats_run(req, NULL, &plan, &pb, &st);
    double ms = ms_since(t0);
    if (rc != PARTD_OK)
        printf("memory, %u blocks: %s %s\n", blocks, partd_strerror(rc), pb.detail ? pb.detail : "");
    else
        printf("memory, %4u blocks, %2u devices, M=1: %5u units  plan %8.1f ms  search peak "
               "%8.1f KiB  row %7llu cells  rows %9llu  passes %u  peak RSS %7ld KiB\n",
               blocks, devices, plan->training->n_units, ms, (double)st.peak_bytes / 1024,
               (unsigned long long)st.row_cells, (unsigned long long)st.rows, st.passes,
               peak_rss_kb());
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return rc == PARTD_OK ? 0 : 1;
}

int main(void)
{
    int bad = 0;
    /* First, so that the process's peak RSS is theirs. */
    for (uint32_t blocks = 250; blocks <= 2000; blocks *= 2)
        bad |= bench_memory(blocks, 8);
    const char *auto16 = "\"training\":{\"microbatches\":16,\"device_order\":\"auto\"}";
    bad |= bench_one("96 blocks, 8 devices (2 kinds), M=16", 96, 8, 6.0, auto16, 3);
    bad |= bench_one("96 blocks, 8 devices, M=16, tight memory", 96, 8, 2.5, auto16, 3);
    bad |= bench_one("~1000 units, 64 devices (2 kinds), M=16", 998, 64, 6.0, auto16, 1);
    bad |= bench_one("~1000 units, 64 devices, given order, M=16", 998, 64, 6.0,
                     "\"training\":{\"microbatches\":16}", 1);
    return bad;
}
