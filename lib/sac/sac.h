/*
 * sac.h - selective activation checkpointing planner (options.sac).
 *
 * Solves PyTorch's sac_milp model on req->modules with COIN-OR CBC, plus the
 * op-level policy and the Pareto frontier when asked. See the unit's source
 * for the formulation. sac.c plans; sac_result.c owns the result (free,
 * JSON); sac_model.c, sac_milp.c and sac_oplevel.c are the model, the solver
 * runs and the op-level policies.
 *
 * Errors: PARTD_EINVALID (422: options.sac without graph.modules, unknown
 * ac/fsdp unit, numbers out of the solver's range), PARTD_EINFEASIBLE (422
 * "infeasible": the budget is below the least peak any plan reaches; the
 * problem carries min_peak_memory_bytes, baseline_peak_memory_bytes and
 * budget_bytes), PARTD_ECANCELLED/PARTD_ETIMEOUT, PARTD_ENOMEM,
 * PARTD_EINTERNAL (the solver crashed or failed: 500 "solver-failed"; the
 * solver runs in a child process, so a crash never takes the caller's).
 */
#ifndef PARTD_SAC_H
#define PARTD_SAC_H

#include <jansson.h>

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/problem.h"

struct partd_sac_result;

int partd_sac_plan(const partd_request *req, const partd_cancel *cancel,
                   struct partd_sac_result **out, partd_problem *problem);

void partd_sac_result_free(struct partd_sac_result *r);

/* The `sac` member of the result document (new reference). Deterministic:
 * wall-clock figures are not part of it. NULL on ENOMEM. */
json_t *partd_sac_result_to_json(const partd_request *req,
                                 const struct partd_sac_result *r);

/* Wall-clock solve time of the last solve, for logs and the job document. */
double partd__sac_result_solve_ms(const struct partd_sac_result *r);

#endif
