/*
 * training.h - the training planner (mode "training"; contract, "Training
 * mode", v3): one training step of a pipeline as a runtime runs it. The
 * schedule (PyTorch's seven), stages per rank, ranks, device order, split
 * into whole units and every stage's checkpoint set are chosen together
 * to minimise step_ms, the time every rank's list of actions takes
 * (training_sim.h), every rank's peak memory fitting its device.
 *
 * partd_training() fills a plan like the pipeline planner's (partitions in
 * stage order, balance, boundaries, tied parameters, summary) plus
 * plan->training: per stage its rank and figures, per rank its memory and
 * busy time, the schedule with every rank's actions, and the step summary
 * with its proof (optimal, or the lower bound and gap).
 *
 * Errors: PARTD_EINVALID (422: the request's options do not fit its graph,
 * as partd_training_validate says), PARTD_EINFEASIBLE (no plan fits: the
 * problem names the rank and the bytes it is short in the plan needing the
 * least memory found), PARTD_ETOOBIG (a checkpoint frontier past its
 * limit), PARTD_ECANCELLED / PARTD_ETIMEOUT, PARTD_ENOMEM. On success *out
 * owns a new plan (partd_plan_free).
 */
#ifndef PARTD_TRAINING_H
#define PARTD_TRAINING_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"
#include "partd/training_types.h"

int partd_training(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem);

/* partd_training, filling *stats (zeroed first). */
int partd__training_stats_run(const partd_request *req, const partd_cancel *cancel,
                              partd_plan **out, partd_problem *problem,
                              partd_training_stats *stats);

/* The contract's default unit_depth for req's graph and devices (the cache
 * key resolves it too). */
uint32_t partd_training_default_depth(const partd_request *req);

/* The checks of a training request that need its graph (mode training
 * only; PARTD_OK otherwise), made before a job exists (validate.c):
 * weight_grad_ms within its node's backward time, a named schedule's
 * conditions and the virtual_stages it cannot take, more stages than
 * units, and a list of schedules none of which runs. PARTD_OK or
 * PARTD_EINVALID, every error added to pb at its JSON Pointer. */
int partd_training_validate(const partd_request *req, partd_problem *pb);

/* The units of req at its unit_depth (options, else the default rule):
 * *names gets n malloc'd names, *first_rank the first operation rank of
 * each (n + 1 entries, the last = number of operations), *depth the depth
 * used. For tests and tools. PARTD_OK or PARTD_ENOMEM / EINVALID. */
int partd__training_units(const partd_request *req, char ***names, uint32_t **first_rank,
                          uint32_t *n, uint32_t *depth);

/* A plan given outright, timed and sized by the step model, for the
 * benchmark's comparisons with what runtimes do by default: schedule s with
 * v stages per rank on the devices dev[0..S), stage j holding units
 * [cut[j], cut[j + 1]) (V + 1 cuts), the checkpoint sets chosen as the
 * search chooses them under the request's checkpoint mode (`always`: every
 * unit). *step gets its step,
 * *fits whether every rank fits its device. PARTD_OK, PARTD_EINVALID (the
 * schedule does not run so), PARTD_ENOMEM. */
int partd__training_time_plan(const partd_request *req, partd_training_schedule s, uint32_t S,
                              uint32_t v, const uint32_t *dev, const uint32_t *cut,
                              double *step, int *fits);

/* The contract's default unit_depth for req's graph and devices. */
uint32_t partd_training_default_depth(const partd_request *req);

#endif
