/*
 * gen.h - synthetic transformer-like request generator for benchmarks and
 * tests: an embedding, then blocks of (layernorm, attention q/k/v projections,
 * matmul, softmax, residual add, MLP up/act/down, residual add) with fan-out
 * and skip connections, parameters on projections, a tied embedding/head
 * weight, random-but-seeded sizes and latencies. Deterministic for a seed.
 */
#ifndef PARTD_BENCH_GEN_H
#define PARTD_BENCH_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct partd_gen_spec {
    uint32_t n_nodes;        /* approximate node count (>= 16) */
    uint32_t n_devices;      /* devices in the inventory */
    int heterogeneous;       /* vary memory and speed across devices */
    double memory_slack;     /* total device memory / graph bytes, e.g. 1.5 */
    const char *mode;        /* "size_based" or "pipeline" */
    const char *extra_options; /* raw JSON members appended to options, or NULL */
    uint64_t seed;
    int identical_blocks;    /* every block the same latencies and sizes */
    int two_kinds;           /* devices of two kinds: the first half twice as
                                fast with 1.3x the memory, the rest 0.7x */
} partd_gen_spec;

/* Returns a malloc'd request JSON text (caller frees), NULL on ENOMEM. */
char *partd_gen_request(const partd_gen_spec *spec, size_t *len);

#endif
