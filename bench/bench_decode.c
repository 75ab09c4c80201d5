/*
 * bench_decode.c - request decoding against the streaming parser's floor.
 *
 * For synthetic transformers (bench/support/gen.h) of 10^5 and 10^6 nodes
 * on 8 devices, one child process per size: it generates the request text,
 * then times yajl parsing it with no callbacks (the floor: what reading the
 * JSON costs at all) and partd decoding it (partd_decoder_feed in 1 MiB
 * chunks, as `partd plan` reads a file, then partd_decoder_finish), best of
 * a few runs, and the decode's peak resident memory over the RSS before it
 * (the kernel's peak mark reset with /proc/self/clear_refs). Prints the
 * request size, both times, their ratio and the peak (also as a multiple of
 * the request size). Prints figures; asserts nothing about them.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>

#include "decode.h"
#include "gen.h"
#include "proc_mem.h"
#include "partd.h"

#define MIB (1024.0 * 1024.0)
#define CHUNK ((size_t)1 << 20)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds for yajl to parse the text with no callbacks; -1 on an error. */
static double yajl_floor(const char *text, size_t len)
{
    double t0 = now();
    yajl_handle h = yajl_alloc(NULL, NULL, NULL);
    if (!h)
        return -1;
    int ok = 1;
    for (size_t at = 0; ok && at < len; at += CHUNK)
        ok = yajl_parse(h, (const unsigned char *)text + at,
                        len - at < CHUNK ? len - at : CHUNK) == yajl_status_ok;
    ok = ok && yajl_complete_parse(h) == yajl_status_ok;
    yajl_free(h);
    return ok ? now() - t0 : -1;
}

/* Seconds to decode the text in chunks; -1 when it did not decode. */
static double partd_decode(const char *text, size_t len, partd_request **out)
{
    double t0 = now();
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_decoder_new(NULL, &pb);
    int rc = dec ? PARTD_OK : PARTD_ENOMEM;
    for (size_t at = 0; rc == PARTD_OK && at < len; at += CHUNK)
        rc = partd_decoder_feed(dec, text + at, len - at < CHUNK ? len - at : CHUNK);
    if (rc == PARTD_OK)
        rc = partd_decoder_finish(dec, out);
    partd_decoder_free(dec);
    if (rc != PARTD_OK)
        fprintf(stderr, "decode failed: %s\n", pb.detail ? pb.detail : "?");
    partd_problem_free(&pb);
    return rc == PARTD_OK ? now() - t0 : -1;
}

static int measure(uint32_t n, int runs)
{
    partd_gen_spec spec = {.n_nodes = n, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.25, .mode = "pipeline", .seed = 7};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    if (!text)
        return 1;
    double floor_s = 1e9, decode_s = 1e9, peak = 0;
    unsigned nodes = 0;
    for (int r = 0; r < runs; r++) {
        double y = yajl_floor(text, len);
        if (y < 0)
            return 1;
        floor_s = y < floor_s ? y : floor_s;
        malloc_trim(0);
        if (partd_bench_reset_peak() != 0)
            return 1;
        double base = partd_bench_status_bytes(0, "VmRSS");
        partd_request *req = NULL;
        double d = partd_decode(text, len, &req);
        if (d < 0)
            return 1;
        double p = partd_bench_status_bytes(0, "VmHWM") - base;
        decode_s = d < decode_s ? d : decode_s;
        peak = p > peak ? p : peak;
        nodes = req->graph.n_nodes;
        partd_request_free(req);
    }
    printf("%8u nodes  %7.1f MiB request  yajl no-op %6.3f s  partd decode %6.3f s "
           "(%.2fx)  decode peak %6.1f MiB (%.2fx the request)\n",
           nodes, (double)len / MIB, floor_s, decode_s, decode_s / floor_s, peak / MIB,
           peak / (double)len);
    fflush(stdout);
    free(text);
    return 0;
}

int main(void)
{
    static const struct { uint32_t n; int runs; } cases[] = {{100000, 5}, {1000000, 2}};
    int failed = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(measure(cases[k].n, cases[k].runs));
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "bench_decode: the %u-node case failed\n", cases[k].n);
            failed = 1;
        }
    }
    return failed;
}
