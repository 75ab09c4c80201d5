/*
 * bench_pipeline.c - exact pipeline planning time after decoding.
 *
 * Synthetic transformers (bench/support/gen.c) of 10^4, 10^5 and 10^6 nodes,
 * 8 stages on 8 heterogeneous devices (speed 0.5..2, memory 0.7..1.3 of an
 * even share of 1.5x the graph's bytes, 8x for the gpipe and 1f1b cases),
 * for every balance_by, the gpipe and 1f1b schedules, and one case without
 * enough memory (the shortfall search); then the planner's hard case, a
 * chain with one dominant operation. Prints the best planning time of
 * several runs (partd_plan_run on the decoded request), the bottleneck and
 * the balance.
 * Asserts nothing about time; the targets are 20 ms at 10^4 nodes and
 * 2 s at 10^6.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"

static double ms_since(int64_t t0)
{
    return (double)(partd_clock_ns() - t0) / 1e6;
}

static int bench_one(uint32_t n, const char *options, double slack)
{
    partd_gen_spec spec = {.n_nodes = n, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = slack, .mode = "pipeline",
                           .extra_options = options, .seed = 7};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text)
        return 1;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req;
    if (partd_request_decode(text, len, NULL, &req, &pb) != PARTD_OK) {
        fprintf(stderr, "decode failed: %s\n", pb.detail ? pb.detail : "");
        free(text);
        return 1;
    }
    free(text);
    double best = 1e30;
    partd_plan *plan = NULL;
    int runs = n >= 1000000 ? 3 : 9, rc = 0;
    for (int r = 0; r < runs && rc == 0; r++) {
        partd_plan_free(plan);
        plan = NULL;
        int64_t t0 = partd_clock_ns();
        rc = partd_plan_run(req, NULL, &plan, &pb);
        double t = ms_since(t0);
        if (t < best)
            best = t;
    }
    if (rc != PARTD_OK) {
        printf("pipeline nodes=%-8u slack=%.1f %-66s plan=%9.2f ms  %s\n", req->graph.n_nodes,
               slack, options, best, partd_strerror(rc));
    } else {
        char balance[256];
        size_t k = 0;
        for (uint32_t s = 0; s < plan->n_parts && k < sizeof balance - 16; s++)
            k += (size_t)snprintf(balance + k, sizeof balance - k, "%s%u", s ? "," : "",
                                  plan->balance[s]);
        printf("pipeline nodes=%-8u slack=%.1f %-66s plan=%9.2f ms  bottleneck=%10.3f ms  "
               "balance=[%s]\n",
               req->graph.n_nodes, slack, options, best, plan->summary.bottleneck_ms, balance);
    }
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return 0;
}

/* A chain with one operation a million times slower than the rest: every
 * split that isolates it is optimal, so the other cuts have wide windows and
 * the tie breaks run their segment-tree sweep. The hard case for the
 * planner, not a realistic model. */
static char *dominant_chain(uint32_t n, size_t *len)
{
    size_t cap = (size_t)n * 120 + 4096, k = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    k += (size_t)snprintf(s + k, cap - k, "{\"graph\":{\"nodes\":[{\"name\":\"x\","
                                          "\"op\":\"placeholder\",\"output_bytes\":8}");
    for (uint32_t i = 0; i < n; i++) {
        char in[24];
        if (i)
            snprintf(in, sizeof in, "o%u", i - 1);
        else
            snprintf(in, sizeof in, "x");
        k += (size_t)snprintf(s + k, cap - k,
                              ",{\"name\":\"o%u\",\"op\":\"call_function\",\"inputs\":[\"%s\"],"
                              "\"output_bytes\":4,\"latency_ms\":%s}",
                              i, in, i == n / 3 ? "1e6" : "1");
    }
    k += (size_t)snprintf(s + k, cap - k, "]},\"devices\":[");
    static const char *const speed[] = {"1", "2", "0.5", "1", "1.5", "1", "2", "1"};
    for (int d = 0; d < 8; d++)
        k += (size_t)snprintf(s + k, cap - k,
                              "%s{\"name\":\"g%d\",\"memory_bytes\":1000000000000,"
                              "\"speed\":%s}",
                              d ? "," : "", d, speed[d]);
    k += (size_t)snprintf(s + k, cap - k,
                          "],\"options\":{\"transfer_bytes_per_sec\":1e6}}");
    *len = k;
    return s;
}

static int bench_dominant(uint32_t n)
{
    size_t len;
    char *text = dominant_chain(n, &len);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req;
    if (!text || partd_request_decode(text, len, NULL, &req, &pb) != PARTD_OK) {
        free(text);
        return 1;
    }
    free(text);
    double best = 1e30;
    partd_plan *plan = NULL;
    int rc = 0;
    for (int r = 0; r < 3 && rc == 0; r++) {
        partd_plan_free(plan);
        plan = NULL;
        int64_t t0 = partd_clock_ns();
        rc = partd_plan_run(req, NULL, &plan, &pb);
        double t = ms_since(t0);
        if (t < best)
            best = t;
    }
    if (rc == PARTD_OK)
        printf("pipeline nodes=%-8u one dominant op, 8 stages, time%48s plan=%9.2f ms  "
               "bottleneck=%10.3f ms\n",
               req->graph.n_nodes, "", best, plan->summary.bottleneck_ms);
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return rc != PARTD_OK;
}

int main(void)
{
    static const uint32_t sizes[] = {10000, 100000, 1000000};
    static const struct {
        const char *options;
        double slack;
    } cases[] = {
        {"\"pipeline\":{\"stages\":8,\"balance_by\":\"time\"}", 1.5},
        {"\"pipeline\":{\"stages\":8,\"balance_by\":\"memory\"}", 1.5},
        {"\"pipeline\":{\"stages\":8,\"balance_by\":\"params\"}", 1.5},
        {"\"pipeline\":{\"stages\":8,\"balance_by\":\"uniform\"}", 1.5},
        {"\"pipeline\":{\"stages\":8,\"schedule\":\"gpipe\",\"microbatches\":4,"
         "\"param_factor\":4}", 8.0},
        {"\"pipeline\":{\"stages\":8,\"schedule\":\"1f1b\",\"microbatches\":8,"
         "\"param_factor\":4}", 8.0},
        /* Not enough memory: the search for the smallest shortfall. */
        {"\"pipeline\":{\"stages\":8,\"schedule\":\"gpipe\",\"microbatches\":4,"
         "\"param_factor\":4}", 1.5},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof cases / sizeof *cases; j++)
            rc |= bench_one(sizes[i], cases[j].options, cases[j].slack);
    rc |= bench_dominant(10000);
    rc |= bench_dominant(100000);
    return rc;
}
