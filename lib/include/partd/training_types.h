/*
 * training_types.h - what the training planner (training.h) hands on: the
 * training result of a plan (plan->training, rendered by result.c: per
 * stage its rank and figures, per rank its memory and busy time, the
 * schedule with every rank's actions, the step summary), the search's
 * memory figures (partd_training_stats).
 *
 * Ownership: a partd_training_result owns its names and arrays
 * (partd_plan_training_free in plan_types.h, NULL-safe). Nothing here can
 * fail.
 */
#ifndef PARTD_TRAINING_TYPES_H
#define PARTD_TRAINING_TYPES_H

#include <stdint.h>

#include "model.h"

typedef struct partd_training_stage {
    uint32_t rank;
    uint32_t first_unit, n_units;
    uint32_t n_checkpointed;
    uint32_t *checkpointed;    /* unit ids, ascending */
    /* Per microbatch, ms (contract, "The training result"). */
    double forward_ms, backward_ms, input_grad_ms, weight_grad_ms, recompute_ms, send_ms;
    double time_ms;            /* forward + backward + recompute */
    /* memory_bytes: the stage's own peak within its rank's order
     * (parameters, the microbatches it holds, its transient term). */
    int64_t memory_bytes;
    int64_t param_memory_bytes;      /* ceil(param_factor * params) */
    int64_t input_memory_bytes;      /* floor(in / M) */
    int64_t activation_memory_bytes; /* floor(kept / M) */
} partd_training_stage;

typedef struct partd_training_rank {
    uint32_t device;
    int64_t memory_bytes;      /* the rank's peak, read from its order */
    double busy_ms;            /* the sum of its actions' durations */
} partd_training_rank;

typedef struct partd_training_result {
    uint32_t n_units;
    char **unit_names;         /* malloc'd, n_units */
    uint32_t n_stages;
    partd_training_stage *stages;
    uint32_t n_ranks;
    partd_training_rank *ranks;
    partd_training_schedule schedule;
    uint32_t virtual_stages;
    /* Every rank's actions in its order: rank r's are
     * [action_off[r], action_off[r + 1]); kind 0..3 is F, B, I, W. */
    uint32_t *action_off;
    uint32_t *action_stage;
    uint16_t *action_mb;
    uint8_t *action_kind;
    double step_ms, bottleneck_ms, bubble_fraction;
    double lower_bound_ms, gap;
    int optimal;
    uint32_t microbatches, unit_depth;
    partd_checkpoint checkpoint;
} partd_training_result;

/* What the search held and did: deterministic counts, for tests and the
 * benchmark. peak_bytes grows linearly with the units for a fixed set of
 * devices and microbatches. */
typedef struct partd_training_stats {
    uint64_t peak_bytes;       /* high-water mark of the search's buffers */
    uint64_t live_bytes;       /* held now (0 once the planner returns) */
    uint64_t configs;          /* (schedule, v, ranks, device order) visited */
    uint64_t evaluations;      /* plans timed */
    uint64_t work;             /* actions simulated, and units priced by bounds */
    int exhaustive;            /* 1: every plan of the space was timed */
} partd_training_stats;

#endif
