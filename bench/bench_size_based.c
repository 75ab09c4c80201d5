/*
 * bench_size_based.c - size_based planning time and `partd plan` end to end.
 *
 * For 10^3 .. 10^6-node synthetic transformers on 8 heterogeneous devices:
 * decode time, planning time after decoding (best of several runs), and
 * result rendering; then `partd plan` end to end at 10^6 nodes with its
 * peak RSS. Prints figures; asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gen.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"

static double ms_since(int64_t t0)
{
    return (double)(partd_clock_ns() - t0) / 1e6;
}

static int bench_size(uint32_t n)
{
    partd_gen_spec spec = {.n_nodes = n, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.25, .mode = "size_based", .seed = 42};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text)
        return 1;
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req;
    int64_t t0 = partd_clock_ns();
    if (partd_request_decode(text, len, NULL, &req, &pb) != PARTD_OK) {
        fprintf(stderr, "decode failed: %s\n", pb.detail);
        return 1;
    }
    double decode_ms = ms_since(t0);
    double best = 1e30;
    partd_plan *plan = NULL;
    int runs = n >= 1000000 ? 3 : 7;
    for (int r = 0; r < runs; r++) {
        partd_plan_free(plan);
        t0 = partd_clock_ns();
        if (partd_plan_run(req, NULL, &plan, &pb) != PARTD_OK) {
            fprintf(stderr, "plan failed: %s\n", pb.detail);
            return 1;
        }
        double t = ms_since(t0);
        if (t < best)
            best = t;
    }
    t0 = partd_clock_ns();
    size_t rlen;
    char *result = partd_result_to_json(req, plan, &rlen);
    double render_ms = ms_since(t0);
    printf("size_based n=%-8u nodes=%-8u partitions=%-3u decode=%9.1f ms  plan=%8.2f ms  "
           "plan/node=%6.1f ns  render=%8.1f ms  request=%zu B result=%zu B\n",
           n, req->graph.n_nodes, plan->n_parts, decode_ms, best,
           best * 1e6 / req->graph.n_nodes, render_ms, len, rlen);
    free(result);
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    free(text);
    return 0;
}

static int bench_end_to_end(const char *partd, uint32_t n)
{
    partd_gen_spec spec = {.n_nodes = n, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.25, .mode = "size_based", .seed = 42};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    char in[] = "/tmp/partd-bench-XXXXXX";
    int fd = mkstemp(in);
    if (!text || fd < 0 || write(fd, text, len) != (ssize_t)len) {
        free(text);
        return 1;
    }
    close(fd);
    free(text);
    int64_t t0 = partd_clock_ns();
    pid_t pid = fork();
    if (pid == 0) {
        execl(partd, "partd", "plan", in, "-o", "/dev/null", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    double wall = ms_since(t0);
    unlink(in);
    printf("partd plan end to end n=%u: exit %d, wall %.0f ms, peak RSS %.0f MB, request %.0f MB\n",
           n, WIFEXITED(status) ? WEXITSTATUS(status) : -1, wall, ru.ru_maxrss / 1024.0,
           len / 1048576.0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(void)
{
    const uint32_t sizes[] = {1000, 10000, 100000, 1000000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        if (bench_size(sizes[i]) != 0)
            return 1;
    const char *partd = getenv("PARTD_BIN");
    return bench_end_to_end(partd ? partd : "build/partd", 1000000);
}
