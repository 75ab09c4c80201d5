/*
 * pipeline.h - exact contiguous pipeline-stage planner (mode "pipeline").
 *
 * Splits the planning order into options.pipeline.stages contiguous stages,
 * stage i on devices[i], minimising the balance_by objective exactly over all
 * splits that respect memory limits and cut_after (ties: smaller sum of stage
 * times, then earliest cuts). Fills partitions, balance, boundaries (tensors
 * live across each cut) and tied_params; summary.optimal = 1 when proven.
 *
 * Errors: PARTD_EINVALID (422: unknown cut_after name, too many cuts, cuts
 * leaving an empty stage, more stages than devices or operations),
 * PARTD_EINFEASIBLE (no split fits: names the stage short of memory and by
 * how many bytes in the split minimising the largest shortfall),
 * PARTD_ECANCELLED/PARTD_ETIMEOUT, PARTD_ENOMEM.
 */
#ifndef PARTD_PIPELINE_H
#define PARTD_PIPELINE_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

int partd_pipeline(const partd_request *req, const partd_cancel *cancel,
                   partd_plan **out, partd_problem *problem);


#endif
