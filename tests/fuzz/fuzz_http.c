/*
 * fuzz_http.c - libFuzzer driver: a request line, headers and body sent to
 * the real daemon running in this process (see http_harness.h for the input
 * format and the checks). A broken invariant aborts with its sentence.
 *
 * Run with -close_fd_mask=2: the daemon logs one line per request on stderr;
 * libFuzzer then keeps its own output and sanitizer reports on a duplicate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_harness.h"

/* stderr as it was before -close_fd_mask=2 sent fd 2 to /dev/null, for the
 * sentence that says which invariant broke. */
static int report_fd = 2;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (partd_fuzz_http_start() != 0)
        abort();
    int fd = dup(2);
    if (fd >= 0)
        report_fd = fd;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *bad = partd_fuzz_http_one(data, size);
    if (bad) {
        char line[256];
        int n = snprintf(line, sizeof line, "partd fuzz_http: invariant broken: %s\n", bad);
        if (n > 0 && write(report_fd, line, strlen(line)) < 0)
            abort();
        abort();
    }
    return 0;
}
