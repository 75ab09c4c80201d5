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
#include "plan_types.h"
#include "problem.h"
#include "training_types.h"

int partd_training(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem);

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

/* partd_training, filling *stats (zeroed first). */
int partd_training_stats_run(const partd_request *req, const partd_cancel *cancel,
                             partd_plan **out, partd_problem *problem,
                             partd_training_stats *stats);


#endif
