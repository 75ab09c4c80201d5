/*
 * fuzz_request.c - libFuzzer driver: arbitrary bytes as a request body
 * through decoding, validation and (when small) planning and rendering.
 * The checks are in targets.c; a broken invariant aborts with its sentence.
 */
#include <stdio.h>
#include <stdlib.h>

#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *bad = partd_fuzz_request(data, size);
    if (bad) {
        fprintf(stderr, "partd fuzz_request: invariant broken: %s\n", bad);
        abort();
    }
    return 0;
}
