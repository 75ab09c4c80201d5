/*
 * plan_types.h - the planner's answer, independent of JSON: partitions,
 * pipeline boundaries, tied parameters and the summary, with the helpers
 * every planner shares to build one (allocation, linking partitions,
 * per-partition times).
 *
 * Planners (size_based.h, pipeline.h) and the result renderer (result.h)
 * include this header; only the dispatcher (plan.h) includes the planners,
 * so lib/'s include graph stays acyclic.
 *
 * Ownership: a partd_plan owns every array in it, its warnings and its SAC
 * result;
 * partd_plan_free() releases all of it (NULL is a no-op).
 * Errors: partd_plan_alloc() returns NULL when memory runs out (its only
 * failure); partd_plan_link() and partd_plan_warn() return PARTD_OK or
 * PARTD_ENOMEM (partd.h).
 */
#ifndef PARTD_PLAN_TYPES_H
#define PARTD_PLAN_TYPES_H

#include <stdint.h>

#include "model.h"

typedef struct partd_part {
    uint32_t n_nodes;
    uint32_t *nodes;           /* operation nodes, ascending (graph order) */
    uint32_t n_devices;
    uint32_t *devices;         /* device indices; devices[0] is "device" */
    int64_t memory_bytes;
    int64_t param_bytes;
    int64_t transfer_in_bytes;
    double compute_ms;
    double time_ms;
    /* Filled by partd_plan_link(): */
    uint32_t n_inputs, n_outputs, n_parents, n_children;
    uint32_t *inputs;          /* nodes outside read here, ascending */
    uint32_t *outputs;         /* nodes here read elsewhere or by `output` */
    uint32_t *parents;         /* partition ids, ascending */
    uint32_t *children;
    /* Node-level plans: the module (string id) whose only call begins the
     * partition, where the program can be split before it as PyTorch's
     * pipeline() splits (set by the dispatcher, lib/plan/plan_internal.h);
     * PARTD_NONE otherwise (partd_plan_alloc's value). */
    uint32_t first_module;
} partd_part;

typedef struct partd_boundary {
    uint32_t after;            /* last node of the stage before the cut */
    uint32_t n_tensors;
    uint32_t *tensors;         /* nodes live across the cut, ascending */
    int64_t bytes;
} partd_boundary;

typedef struct partd_tied {
    uint32_t param;            /* parameter id (graph.param_name) */
    uint32_t n_parts;
    uint32_t *parts;           /* ascending */
} partd_tied;

typedef struct partd_summary {
    double bottleneck_ms;
    double total_ms;
    int64_t transfer_bytes;
    int64_t peak_memory_bytes;
    int optimal;
    /* FX's modes (v3): FX's get_latency_of_partitioned_graph, in ms */
    int has_latency;
    double latency_ms;
} partd_summary;

/* Something the plan could do but the user should know (the result's
 * `warnings`): a stable code and a sentence that says what to do. */
typedef struct partd_warning {
    const char *code;          /* a string literal, e.g. "microbatches-above-batch" */
    char *message;             /* owned by the plan */
} partd_warning;

struct partd_sac_result; /* sac.h */
struct partd_training_result; /* training_types.h */

typedef struct partd_plan {
    partd_mode mode;
    uint32_t n_parts;
    partd_part *parts;
    uint32_t *balance;         /* pipeline only: op nodes per stage; else NULL */
    uint32_t n_boundaries;
    partd_boundary *boundaries;/* pipeline only */
    uint32_t n_tied;
    partd_tied *tied;
    partd_summary summary;
    struct partd_sac_result *sac; /* NULL unless options.sac */
    struct partd_training_result *training; /* mode training only */
    uint32_t n_warnings;
    partd_warning *warnings;   /* in the order added; NULL when none */
} partd_plan;

void partd_plan_free(partd_plan *plan);
/* Releases a training result (plan->training) and what it owns; NULL-safe.
 * The training planner frees one it could not hand on with it. */
void partd_plan_training_free(struct partd_training_result *t);

/* Appends a warning: code (a string literal) and a printf-style message.
 * PARTD_OK, or PARTD_ENOMEM with the plan unchanged. */
int partd_plan_warn(partd_plan *plan, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Allocates a zeroed plan with n_parts zeroed partitions. NULL on ENOMEM. */
partd_plan *partd_plan_alloc(partd_mode mode, uint32_t n_parts);

/* From the node -> partition assignment (PARTD_NONE for non-operations),
 * fills every partition's inputs, outputs, parents and children, and, unless
 * the planner already set plan->tied, the tied parameters: every named
 * parameter used by more than one partition (through its own nodes or a
 * get_attr node it reads). PARTD_OK or PARTD_ENOMEM. */
int partd_plan_link(const partd_request *req, const uint32_t *node_part,
                    partd_plan *plan);

/* a + b for byte figures of a plan, saturating at INT64_MAX instead of
 * overflowing: a saturated total is refused by partd_plan_run (over 2^53). */
static inline int64_t partd_bytes_add(int64_t a, int64_t b)
{
    int64_t s;
    return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

/* Per-partition time figures (compute_ms, transfer_in_bytes, time_ms) by the
 * contract's formula on the partition's first device, and the summary's
 * bottleneck/total/transfer/peak from the partitions. Call after link. */
void partd_plan_fill_times(const partd_request *req, partd_plan *plan);

#endif
