/*
 * fuzz_modules.c - libFuzzer driver: arbitrary bytes parsed as JSON and
 * decoded as graph.modules (PyTorch's module_info). The checks are in
 * targets.c; a broken invariant aborts with its sentence.
 */
#include <stdio.h>
#include <stdlib.h>

#include "targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *bad = partd_fuzz_modules(data, size);
    if (bad) {
        fprintf(stderr, "partd fuzz_modules: invariant broken: %s\n", bad);
        abort();
    }
    return 0;
}
