/*
 * training_types.h - what the training planner (training.h) hands on: the
 * per-stage training figures and step summary of a plan (plan->training,
 * rendered by result.c), the search's memory figures (partd_training_stats),
 * and the contract's unit rule, which the cache key (hash.c) resolves too.
 *
 * Ownership: a partd_training_result owns its names and stage arrays
 * (partd_training_result_free, NULL-safe). Errors: partd_training_units
 * returns PARTD_OK, PARTD_ENOMEM or PARTD_EINVALID; the rest cannot fail.
 */
#ifndef PARTD_TRAINING_TYPES_H
#define PARTD_TRAINING_TYPES_H

#include <stdint.h>

#include "model.h"

typedef struct partd_training_stage {
    uint32_t first_unit, n_units;
    uint32_t n_checkpointed;
    uint32_t *checkpointed;    /* unit ids, ascending */
    uint32_t in_flight;        /* k */
    /* Per microbatch, ms: time_ms is their sum. */
    double forward_ms, backward_ms, recompute_ms, comm_ms, time_ms;
    int64_t memory_bytes;
    /* memory_bytes = param + input + activation memory: inputs held
     * (k * in / M) and activations held (kept outputs, transient term, / M)
     * rounded down, parameters (param_factor * params) rounded up with
     * their fractions. */
    int64_t param_memory_bytes, input_memory_bytes, activation_memory_bytes;
} partd_training_stage;

typedef struct partd_training_result {
    uint32_t n_units;
    char **unit_names;         /* malloc'd, n_units */
    uint32_t n_stages;
    partd_training_stage *stages;
    double step_ms, bottleneck_ms, bubble_fraction;
    uint32_t microbatches, unit_depth;
    partd_schedule schedule;
    partd_checkpoint checkpoint;
} partd_training_result;

void partd_training_result_free(partd_training_result *t);

/* What the search held: the stage values are computed one row (one first
 * unit) at a time, so these grow linearly with the units for a fixed set
 * of devices and microbatches. Deterministic counts, for tests and the
 * benchmark. */
typedef struct partd_training_stats {
    uint64_t peak_bytes;       /* high-water mark of the search's buffers */
    uint64_t live_bytes;       /* held now (0 once the planner returns) */
    uint64_t row_cells;        /* cells of the largest row buffer */
    uint64_t rows;             /* rows computed */
    uint32_t passes;           /* DP passes over the units */
} partd_training_stats;


/* The contract's default unit_depth for req's graph and devices. */
uint32_t partd_training_default_depth(const partd_request *req);

/* The units of req at its unit_depth (options, else the default rule):
 * *names gets n malloc'd names, *first_rank the first operation rank of
 * each (n + 1 entries, the last = number of operations), *depth the depth
 * used. For tests and tools. PARTD_OK or PARTD_ENOMEM / EINVALID. */
int partd_training_units(const partd_request *req, char ***names, uint32_t **first_rank,
                         uint32_t *n, uint32_t *depth);

#endif
