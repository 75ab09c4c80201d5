/*
 * show_result.h - a result document read for drawing: the figures
 * `partd show` needs, checked for type and range, with the memory of each
 * partition split into parameters, received tensors and the rest.
 *
 * show_result_parse() owns everything it returns (release with
 * show_result_free); names point into the parsed JSON, which the result
 * keeps alive. It returns PARTD_OK, PARTD_EMALFORMED (not JSON),
 * PARTD_EINVALID (not a result document) or PARTD_ENOMEM, with one sentence
 * in err naming the member by JSON Pointer.
 */
#ifndef PARTD_SHOW_RESULT_H
#define PARTD_SHOW_RESULT_H

#include <jansson.h>
#include <stddef.h>

/* More blocks than this and the training timeline is summarised instead of
 * drawn one block per stage and microbatch. */
#define SHOW_MAX_BLOCKS 65536

typedef struct show_part {
    const char *device;
    long nodes;                 /* operation nodes; -1 when the result omits them */
    double memory_bytes;
    double device_memory_bytes; /* < 0: the result predates v2 and does not say */
    /* memory_bytes = params + received + rest (each >= 0); for a training
     * stage whose result says so (has_memory_split), its param, input and
     * activation memory. */
    double params, received, rest;
    int has_memory_split;
    double time_ms, compute_ms;
    /* training only */
    double forward_ms, backward_ms, recompute_ms, comm_ms;
    long in_flight;
    size_t n_units;
    json_t *checkpointed; /* array of unit names, borrowed from the document */
} show_part;

typedef struct show_frontier_point {
    double budget_bytes;
    int solved; /* 0: infeasible or no solution at this budget */
    double peak_bytes, recompute_ms;
} show_frontier_point;

typedef struct show_sac {
    int present;
    const char *status;
    double recompute_ms, peak_bytes, baseline_bytes, budget_bytes;
    int has_peak;
    json_t *ac_decisions; /* object: module fqn -> discarded fraction */
    size_t n_frontier;
    show_frontier_point *frontier;
} show_sac;

typedef struct show_result {
    json_t *doc;
    const char *mode;
    int training;
    size_t n_parts;
    show_part *parts;
    int has_device_memory; /* every partition has device_memory_bytes */
    double bottleneck_ms, total_ms, peak_bytes, transfer_bytes;
    /* training summary */
    long microbatches;
    int one_f_one_b; /* schedule: 1 for 1f1b, 0 for gpipe */
    double step_ms, bubble_fraction;
    const char *checkpoint;
    show_sac sac;
} show_result;

int show_result_parse(const char *json, size_t len, show_result *out, char *err, size_t errcap);
void show_result_free(show_result *r);

#endif
