/*
 * plan.h - running a request's planners: the dispatcher.
 *
 * partd_plan_run() dispatches on options.mode (size_based.h, pipeline.h),
 * then runs the SAC planner (sac.h) when options.sac is present. The plan's
 * types and the helpers the planners share are in plan_types.h.
 *
 * Errors: PARTD_OK, or a negative PARTD_E* code (partd.h) with the problem
 * filled: PARTD_EINVALID (422: something only the planner can check, e.g. an
 * unknown cut_after name), PARTD_EINFEASIBLE (no plan: the problem document
 * says why), PARTD_ECANCELLED / PARTD_ETIMEOUT (from the cancel flag),
 * PARTD_ENOMEM. On success *out owns a new plan (partd_plan_free); on failure
 * *out is NULL.
 */
#ifndef PARTD_PLAN_H
#define PARTD_PLAN_H

#include "cancel.h"
#include "model.h"
#include "plan_types.h"
#include "problem.h"

int partd_plan_run(const partd_request *req, const partd_cancel *cancel,
                   partd_plan **out, partd_problem *problem);

#endif
