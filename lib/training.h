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

/* partd_training, filling *stats (zeroed first). */
int partd_training_stats_run(const partd_request *req, const partd_cancel *cancel,
                             partd_plan **out, partd_problem *problem,
                             partd_training_stats *stats);


#endif
