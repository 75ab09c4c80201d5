/*
 * training.h - the training planner (mode "training"; contract, "Training
 * mode"): one training step of a pipeline, with the split into whole units,
 * the checkpoint set of every stage, the stage count and the device order
 * chosen together to minimise step_ms exactly, every stage fitting its
 * device.
 *
 * partd_training() fills a plan like the pipeline planner's (partitions,
 * balance, boundaries, tied parameters, summary) plus plan->training: the
 * per-stage training figures and the step summary.
 *
 * Errors: PARTD_EINVALID (422: more stages than units), PARTD_EINFEASIBLE
 * (no plan fits: the problem names the stage and the bytes it is short in
 * the plan minimising the largest shortfall), PARTD_ETOOBIG (422: a search
 * limit, the problem says which), PARTD_ECANCELLED / PARTD_ETIMEOUT,
 * PARTD_ENOMEM. On success *out owns a new plan (partd_plan_free).
 */
#ifndef PARTD_TRAINING_H
#define PARTD_TRAINING_H

#include "cancel.h"
#include "model.h"
#include "plan.h"
#include "problem.h"

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

int partd_training(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem);

void partd_training_result_free(partd_training_result *t);

/* The contract's default unit_depth for req's graph and devices. */
uint32_t partd_training_default_depth(const partd_request *req);

/* The units of req at its unit_depth (options, else the default rule):
 * *names gets n malloc'd names, *first_rank the first operation rank of
 * each (n + 1 entries, the last = number of operations), *depth the depth
 * used. For tests and tools. PARTD_OK or PARTD_ENOMEM / EINVALID. */
int partd_training_units(const partd_request *req, char ***names, uint32_t **first_rank,
                         uint32_t *n, uint32_t *depth);

#endif
