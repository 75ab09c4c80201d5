/*
 * bench_result.c - rendering a large result: time and peak resident size.
 *
 * A 10^5-node graph with long skip connections split into 2,000 pipeline
 * stages (balance_by uniform, so that planning is quick): its boundaries
 * list every tensor live across each of the 2,000 cuts, which makes a
 * result of hundreds of megabytes in full detail. Measured in a
 * child process per case, after planning (peak RSS mark reset, freed heap
 * returned): rendering into memory (the daemon's path) and writing as a
 * stream into a sink that discards the bytes (`partd plan`'s path: its
 * memory is what it would be with a file), with options.result.detail
 * "full" and "summary". Prints figures; asserts nothing about them.
 *
 *   bench_result [--request FILE]   also writes the request text to FILE
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"
#include "proc_mem.h"

#define MIB (1024.0 * 1024.0)
#define NODES 100000
#define STAGES 2000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A chain x -> n1 -> n2 -> ... where n_i also reads n_(i - NODES/2): across
 * each cut in the middle about NODES/2 outputs are live, so the boundaries
 * list ~ STAGES x NODES/4 names (the shape behind a 570 MB result). */
static char *request_text(size_t *len)
{
    size_t cap = (size_t)NODES * 160 + (size_t)STAGES * 64 + 256, n = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    n += (size_t)snprintf(t + n, cap - n, "{\"graph\":{\"name\":\"chain\",\"nodes\":["
                          "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":64}");
    for (uint32_t i = 1; i < NODES; i++) {
        char prev[16], skip[24] = "";
        snprintf(prev, sizeof prev, i == 1 ? "x" : "n%u", i - 1);
        if (i > NODES / 2)
            snprintf(skip, sizeof skip, ",\"n%u\"", i - NODES / 2);
        n += (size_t)snprintf(t + n, cap - n,
                              ",{\"name\":\"n%u\",\"op\":\"call_function\",\"inputs\":"
                              "[\"%s\"%s],\"output_bytes\":64,\"latency_ms\":%u.%u}",
                              i, prev, skip, 1 + i % 7, i % 10);
    }
    n += (size_t)snprintf(t + n, cap - n,
                          ",{\"name\":\"output\",\"op\":\"output\",\"inputs\":[\"n%u\"]}]},"
                          "\"devices\":[", NODES - 1);
    for (uint32_t d = 0; d < STAGES; d++)
        n += (size_t)snprintf(t + n, cap - n, "%s{\"name\":\"d%u\",\"memory_bytes\":%u}",
                              d ? "," : "", d, 1u << 30);
    n += (size_t)snprintf(t + n, cap - n, "],\"options\":{\"pipeline\":"
                          "{\"balance_by\":\"uniform\"}}}\n");
    *len = n;
    return t;
}

static int discard(const char *data, size_t len, void *ctx)
{
    (void)data;
    *(size_t *)ctx += len;
    return PARTD_OK;
}

typedef struct figures {
    double seconds, peak, bytes;
    unsigned nodes, stages;
} figures;

static int measure(int summary, int streamed, figures *fig)
{
    size_t len;
    char *text = request_text(&len);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    partd_plan *plan = NULL;
    if (!text || partd_request_decode(text, len, NULL, &req, &pb) != PARTD_OK ||
        partd_plan_run(req, NULL, &plan, &pb) != PARTD_OK) {
        fprintf(stderr, "bench_result: %s\n", pb.detail ? pb.detail : "out of memory");
        return 1;
    }
    free(text);
    /* As decoded from "options": {"result": {"detail": "summary"}}. */
    req->options.result_detail = summary ? PARTD_RESULT_DETAIL_SUMMARY : PARTD_RESULT_DETAIL_FULL;
    fig->nodes = req->graph.n_nodes;
    fig->stages = plan->n_parts;
    malloc_trim(0);
    if (partd_bench_reset_peak() != 0)
        return 1;
    double base = partd_bench_status_bytes(0, "VmRSS"), t0 = now_s();
    size_t out = 0;
    int rc;
    if (streamed) {
        rc = partd_result_write(req, plan, NULL, 0, discard, &out, NULL);
    } else {
        char *doc = partd_result_render(req, plan, NULL, 0, &out, NULL, &rc);
        free(doc);
    }
    fig->seconds = now_s() - t0;
    fig->peak = partd_bench_status_bytes(0, "VmHWM") - base;
    fig->bytes = (double)out;
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return rc == PARTD_OK ? 0 : 1;
}

typedef struct result_case {
    int summary, streamed;
} result_case;

static int measure_case(void *ctx, void *out)
{
    const result_case *c = ctx;
    return measure(c->summary, c->streamed, out);
}

static int run_case(int summary, int streamed)
{
    result_case c = {summary, streamed};
    figures fig = {0};
    if (partd_bench_in_child(measure_case, &c, &fig, sizeof fig) != 0) {
        fprintf(stderr, "bench_result: case failed\n");
        return 1;
    }
    printf("result n=%u stages=%u detail=%-7s %-16s %8.1f MiB in %6.3f s  "
           "peak RSS over planned: %7.1f MiB\n",
           fig.nodes, fig.stages, summary ? "summary" : "full",
           streamed ? "streamed (plan)" : "in memory (serve)", fig.bytes / MIB, fig.seconds,
           fig.peak / MIB);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--request") == 0) {
        size_t len;
        char *text = request_text(&len);
        FILE *f = fopen(argv[2], "w");
        if (!text || !f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
            perror(argv[2]);
            return 1;
        }
        free(text);
    }
    for (int summary = 0; summary <= 1; summary++)
        for (int streamed = 0; streamed <= 1; streamed++)
            if (run_case(summary, streamed) != 0)
                return 1;
    return 0;
}
