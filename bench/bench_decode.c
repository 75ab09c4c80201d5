/*
 * bench_decode.c - request decoding against the streaming parser's floor,
 * and what hostile bodies cost against ordinary ones.
 *
 * For synthetic transformers (bench/support/gen.h) of 10^5 and 10^6 nodes
 * on 8 devices, one child process per size: it generates the request text,
 * then times yajl parsing it with no callbacks (the floor: what reading the
 * JSON costs at all) and partd decoding it (partd_request_decoder_feed in 1 MiB
 * chunks, as `partd plan` reads a file, then partd_request_decoder_finish), best of
 * a few runs, and the decode's peak resident memory over the RSS before it
 * (the kernel's peak mark reset with /proc/self/clear_refs). Prints the
 * request size, both times, their ratio and the peak (also as a multiple of
 * the request size).
 *
 * Then three figures with their targets, each the best of a few
 * runs:
 *   - 65,536 node names crafted to collide under FNV-1a (collide.h) against
 *     ordinary names of the same length (80 bytes), decoded: at most 3x;
 *   - the 10^6-node request (pipeline, summary result) through `partd plan`
 *     (PARTD_BIN) against Python's json.load of the same file (PYTHON,
 *     default /usr/bin/python3), CPU time of each process: at most 0.3x;
 *   - a body with a 32 MiB string against one with as much white space,
 *     decoded in 64 KiB pieces as a daemon receives it: at most 3x.
 * Prints figures; asserts nothing about them.
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_parse.h>

#include "collide.h"
#include "gen.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "proc_mem.h"

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

/* Seconds to decode the text in chunks of `chunk` bytes; -1 when it did
 * not decode. */
static double decode_in(const char *text, size_t len, size_t chunk, partd_request **out)
{
    double t0 = now();
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_request_decoder_new(NULL, &pb);
    int rc = dec ? PARTD_OK : PARTD_ENOMEM;
    for (size_t at = 0; rc == PARTD_OK && at < len; at += chunk)
        rc = partd_request_decoder_feed(dec, text + at, len - at < chunk ? len - at : chunk);
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, out);
    partd_request_decoder_free(dec);
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
        double d = decode_in(text, len, CHUNK, &req);
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

/* ---- hostile bodies ------------------------------------------------------ */

/* Best of `runs` decodes of the text in pieces of `chunk`; -1 on failure. */
static double best_decode(const char *text, size_t len, size_t chunk, int runs)
{
    double best = 1e9;
    for (int r = 0; r < runs; r++) {
        partd_request *req = NULL;
        double d = decode_in(text, len, chunk, &req);
        partd_request_free(req);
        if (d < 0)
            return -1;
        best = d < best ? d : best;
    }
    return best;
}

/* A chain of 2^blocks nodes named by name(i), on one device. */
static char *chain_of(uint32_t blocks, char (*pairs)[PARTD_COLLIDE_BLOCK], size_t *len)
{
    uint32_t n = 1u << blocks;
    size_t name_len = (size_t)blocks * PARTD_COLLIDE_BLOCK;
    size_t cap = (size_t)n * (2 * name_len + 80) + 256, used = 0;
    char *b = malloc(cap), *name = malloc(name_len + 1), *prev = malloc(name_len + 1);
    if (!b || !name || !prev) {
        free(b), free(name), free(prev);
        return NULL;
    }
    used += (size_t)snprintf(b, cap, "{\"devices\":[{\"name\":\"g\",\"memory_bytes\":1000000}],"
                                     "\"graph\":{\"nodes\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (pairs)
            partd_collide_name(pairs, blocks, i, name);
        else
            partd_collide_plain_name(blocks, i, name);
        used += (size_t)snprintf(b + used, cap - used,
                                 i ? ",{\"name\":\"%s\",\"op\":\"call_function\",\"inputs\":[\"%s\"]}"
                                   : "{\"name\":\"%s\",\"op\":\"placeholder\"}",
                                 name, prev);
        memcpy(prev, name, name_len + 1);
    }
    used += (size_t)snprintf(b + used, cap - used, "]}}");
    free(name);
    free(prev);
    *len = used;
    return b;
}

static int crafted_names(void)
{
    enum { BLOCKS = 16 };
    char (*pairs)[PARTD_COLLIDE_BLOCK] = malloc(2 * BLOCKS * sizeof *pairs);
    if (!pairs || partd_collide_pairs(BLOCKS, pairs) != 0)
        return 1;
    size_t clen, plen;
    char *crafted = chain_of(BLOCKS, pairs, &clen), *plain = chain_of(BLOCKS, NULL, &plen);
    double c = crafted ? best_decode(crafted, clen, CHUNK, 3) : -1;
    double p = plain ? best_decode(plain, plen, CHUNK, 3) : -1;
    free(crafted);
    free(plain);
    free(pairs);
    if (c < 0 || p < 0)
        return 1;
    printf("%u node names of %d bytes colliding under FNV-1a: decode %.3f s; ordinary names "
           "%.3f s: %.2fx (target <= 3x)\n",
           1u << BLOCKS, BLOCKS * PARTD_COLLIDE_BLOCK, c, p, c / p);
    return 0;
}

/* A request whose root holds "meta": {"s": ...} with n bytes of padding:
 * a string of n 'x', or n spaces before an empty string. */
static char *padded_request(size_t n, int string, size_t *len)
{
    static const char head[] = "{\"devices\":[{\"name\":\"g\",\"memory_bytes\":1000}],"
                               "\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
                               "\"meta\":{\"s\":";
    size_t h = sizeof head - 1;
    char *b = malloc(h + n + 5);
    if (!b)
        return NULL;
    memcpy(b, head, h);
    memset(b + h + 1, string ? 'x' : ' ', n);
    b[h] = string ? '"' : ' ';
    memcpy(b + h + 1 + n, string ? "\"}}" : "\"\"}}", string ? 3 : 4);
    *len = h + n + (string ? 4 : 5);
    return b;
}

static int long_string(void)
{
    const size_t size = (size_t)32 << 20, piece = (size_t)64 << 10;
    size_t slen, wlen;
    char *str = padded_request(size, 1, &slen), *ws = padded_request(size, 0, &wlen);
    double s = str ? best_decode(str, slen, piece, 3) : -1;
    double w = ws ? best_decode(ws, wlen, piece, 3) : -1;
    free(str);
    free(ws);
    if (s < 0 || w < 0)
        return 1;
    printf("a 32 MiB string in 64 KiB pieces: decode %.3f s; as much white space %.3f s: "
           "%.2fx (target <= 3x)\n", s, w, s / w);
    return 0;
}

/* CPU seconds (user + system) of `argv` run to completion; -1 when it did
 * not exit 0. */
static double cpu_of(char *const argv[])
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int plan_against_python(void)
{
    const char *partd = getenv("PARTD_BIN") ? getenv("PARTD_BIN") : "build/partd";
    const char *python = getenv("PYTHON") ? getenv("PYTHON") : "/usr/bin/python3";
    partd_gen_spec spec = {.n_nodes = 1000000, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.25, .mode = "pipeline", .seed = 7,
                           .extra_options = "\"result\": {\"detail\": \"summary\"}"};
    size_t len;
    char *text = partd_gen_request(&spec, &len);
    char path[] = "/tmp/partd-bench-XXXXXX";
    int fd = text ? mkstemp(path) : -1;
    int ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
    free(text);
    if (fd >= 0)
        close(fd);
    double plan = 1e9, load = 1e9;
    char *plan_argv[] = {(char *)partd, "plan", path, "-o", "/dev/null", NULL};
    char *load_argv[] = {(char *)python, "-c",
                         "import json, sys\nwith open(sys.argv[1]) as f: json.load(f)", path,
                         NULL};
    for (int r = 0; ok && r < 3; r++) {
        double p = cpu_of(plan_argv), l = cpu_of(load_argv);
        ok = p >= 0 && l >= 0;
        plan = p < plan ? p : plan;
        load = l < load ? l : load;
    }
    if (fd >= 0)
        unlink(path);
    if (!ok)
        return 1;
    printf("the %.0f MiB 10^6-node request: partd plan %.2f s CPU; Python's json.load %.2f s: "
           "%.2fx (target <= 0.3x)\n", (double)len / MIB, plan, load, plan / load);
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
    fflush(stdout);
    if (crafted_names() != 0 || long_string() != 0 || plan_against_python() != 0) {
        fprintf(stderr, "bench_decode: a hostile-body figure failed\n");
        failed = 1;
    }
    return failed;
}
