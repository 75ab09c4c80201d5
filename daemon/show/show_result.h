/*
 * show_result.h - a result document read for drawing: the figures
 * `partd show` needs, checked for type and range, with the memory of each
 * partition split into parameters, received tensors and the rest. Private
 * to daemon/show.
 *
 * A v3 training result's step is re-timed from its own figures and actions
 * by the training planner's step simulator (partd/timeline.h) as it is
 * read: actions that are not a plan make it not a result document.
 *
 * partd__show_result_parse() owns everything it returns (release with
 * partd__show_result_free); names point into the parsed JSON, which the
 * result keeps alive. It returns PARTD_OK, PARTD_EMALFORMED (not JSON),
 * PARTD_EINVALID (not a result document) or PARTD_ENOMEM, with one sentence
 * in err naming the member by JSON Pointer.
 */
#ifndef PARTD_SHOW_RESULT_H
#define PARTD_SHOW_RESULT_H

#include <jansson.h>
#include <stddef.h>

#include "partd/timeline.h"

/* More blocks than this and the training timeline is summarised instead of
 * drawn one block per stage and microbatch. */
#define PARTD_SHOW_MAX_BLOCKS 65536

typedef struct partd__show_part {
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
    /* training only; comm_ms is v3's send_ms (v2 said comm_ms) */
    double forward_ms, backward_ms, recompute_ms, comm_ms;
    double input_grad_ms, weight_grad_ms; /* v3 */
    long rank;                            /* v3; -1 in a v2 result */
    long in_flight;                       /* v2; 1 in a v3 result */
    size_t n_units;
    json_t *units;        /* array of unit names or NULL, borrowed from the document */
    json_t *checkpointed; /* array of unit names, borrowed from the document */
    double param_factor;  /* training: param_memory_bytes / param_bytes; 0 when unknown */
} partd__show_part;

/* A rank of a v3 training result (ranks[]). */
typedef struct partd__show_rank {
    const char *device;
    double memory_bytes, device_memory_bytes, busy_ms;
} partd__show_rank;

typedef struct partd__show_frontier_point {
    double budget_bytes;
    int solved; /* 0: infeasible or no solution at this budget */
    double peak_bytes, recompute_ms;
} partd__show_frontier_point;

typedef struct partd__show_sac {
    int present;
    const char *status;
    double recompute_ms, peak_bytes, baseline_bytes, budget_bytes;
    int has_peak;
    json_t *ac_decisions; /* object: module fqn -> discarded fraction */
    size_t n_frontier;
    partd__show_frontier_point *frontier;
} partd__show_sac;

typedef struct partd__show_result {
    json_t *doc;
    const char *mode;
    int training;
    size_t n_parts;
    partd__show_part *parts;
    int has_device_memory; /* every partition has device_memory_bytes */
    double bottleneck_ms, total_ms, peak_bytes, transfer_bytes;
    double latency_ms; /* FX's cost of the partitions (FX modes); -1 when absent */
    /* training summary */
    long microbatches;
    const char *schedule; /* as the result names it: "1F1B", "gpipe" (v2), ... */
    double step_ms, bubble_fraction;
    const char *checkpoint;
    /* v3 training: ranks[], schedule.virtual_stages and schedule.actions
     * (n_ranks > 0), re-timed by partd/timeline.h: timeline.start/end of
     * every action, in the lists' order. plan points into the arrays
     * below. A v2 result has none of them (n_ranks 0). */
    size_t n_ranks;
    partd__show_rank *ranks;
    long virtual_stages;
    partd_timeline_stage *tl_stages;
    uint32_t *action_off;
    partd_timeline_action *actions;
    partd_timeline_plan plan;
    partd_timeline timeline;
    partd__show_sac sac;
} partd__show_result;

int partd__show_result_parse(const char *json, size_t len, partd__show_result *out, char *err,
                             size_t errcap);
void partd__show_result_free(partd__show_result *r);

/* "stage" for pipelines, "partition" otherwise. */
const char *partd__show_result_part_word(const partd__show_result *r);

#endif
