/*
 * bench_memory.c - planning memory: peak resident size of decoding and of
 * planning + rendering, per 10^6 nodes.
 *
 * For synthetic transformers (bench/support/gen.h) of 10^5 and 10^6 nodes on
 * 8 heterogeneous devices, in size_based and pipeline mode, one child
 * process per case: it generates the request text, resets the kernel's peak
 * RSS mark (/proc/self/clear_refs, "5"), decodes (peak over the RSS before),
 * returns freed heap pages (malloc_trim), resets again, plans and renders
 * the result (peak over the RSS before).
 * Also prints the decoder's estimate of the model (what --max-model-bytes
 * compares against) next to the measured decode peak, so that the ceiling's
 * meaning can be checked. Prints figures; asserts nothing about them.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"
#include "proc_mem.h"

#define MIB (1024.0 * 1024.0)

typedef struct figures {
    double request_bytes, model_estimate, decode_peak, plan_peak;
    unsigned nodes, partitions;
} figures;

static int measure(uint32_t n, const char *mode, figures *fig)
{
    partd_gen_spec spec = {.n_nodes = n, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.25, .mode = mode, .seed = 7};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text || partd_bench_reset_peak() != 0)
        return 1;
    fig->request_bytes = (double)len;
    double base = partd_bench_status_bytes(0, "VmRSS");
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    if (partd_request_decode(text, len, NULL, &req, &pb) != PARTD_OK) {
        fprintf(stderr, "decode failed: %s\n", pb.detail ? pb.detail : "?");
        return 1;
    }
    fig->decode_peak = partd_bench_status_bytes(0, "VmHWM") - base;
    fig->model_estimate = (double)partd_request_model_bytes(req);
    fig->nodes = req->graph.n_nodes;
    free(text); /* the daemon frees the body before planning, too */
    /* Hand the JSON tree's freed pages back, or planning would reuse them
     * without raising the peak and look free. */
    malloc_trim(0);
    partd_bench_reset_peak();
    base = partd_bench_status_bytes(0, "VmRSS");
    partd_plan *plan = NULL;
    if (partd_plan_run(req, NULL, &plan, &pb) != PARTD_OK) {
        fprintf(stderr, "plan failed: %s\n", pb.detail ? pb.detail : "?");
        return 1;
    }
    size_t rlen;
    char *result = partd_result_to_json(req, plan, &rlen);
    if (!result)
        return 1;
    fig->plan_peak = partd_bench_status_bytes(0, "VmHWM") - base;
    fig->partitions = plan->n_parts;
    free(result);
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return 0;
}

typedef struct memory_case {
    uint32_t n;
    const char *mode;
} memory_case;

static int measure_case(void *ctx, void *out)
{
    const memory_case *c = ctx;
    return measure(c->n, c->mode, out);
}

/* Runs measure() in a child so that every case starts from a fresh heap. */
static int run_case(uint32_t n, const char *mode)
{
    memory_case c = {n, mode};
    figures fig = {0};
    if (partd_bench_in_child(measure_case, &c, &fig, sizeof fig) != 0) {
        fprintf(stderr, "memory case n=%u %s failed\n", n, mode);
        return 1;
    }
    double per = 1e6 / fig.nodes;
    printf("memory %-10s n=%-8u request=%7.1f MiB  model estimate=%7.1f MiB  "
           "decode peak=%7.1f MiB (%6.1f MiB/10^6 nodes)  plan+render peak=%7.1f MiB "
           "(%6.1f MiB/10^6 nodes)  partitions=%u\n",
           mode, fig.nodes, fig.request_bytes / MIB, fig.model_estimate / MIB,
           fig.decode_peak / MIB, fig.decode_peak * per / MIB, fig.plan_peak / MIB,
           fig.plan_peak * per / MIB, fig.partitions);
    return 0;
}

int main(void)
{
    const uint32_t sizes[] = {100000, 1000000};
    const char *modes[] = {"size_based", "pipeline"};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t m = 0; m < sizeof modes / sizeof *modes; m++)
            if (run_case(sizes[i], modes[m]) != 0)
                return 1;
    return 0;
}
