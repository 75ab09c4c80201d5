/*
 * sac_oplevel.h - PyTorch's get_optimal_checkpointing_policy_per_module,
 * solved to proven optimality (internal to the SAC unit).
 *
 * Decides for each op of a module's SACStats whether its output is saved (1)
 * or recomputed (0): maximise the runtime of saved ops subject to
 *   saved memory <= ceil(budget * total memory),
 *   view-like ops recomputed,
 *   random ops all equal (all saved when force_store_random),
 *   an in-place op equal to its parent (saved when it is its own parent).
 * Equalities are merged into groups first (union-find), which turns the model
 * into a 0/1 knapsack over groups, solved by CBC with a zero gap and checked
 * in exact integer arithmetic afterwards.
 *
 * Result: *feasible 0 when the constraints contradict each other or the fixed
 * saves exceed the budget (PyTorch then returns an empty list); otherwise
 * policy[0..n_ops) is filled (caller-allocated).
 * Errors: PARTD_ENOMEM, PARTD_ETIMEOUT (not proven optimal within
 * time_limit_s), PARTD_ECANCELLED, PARTD_EINVALID/PARTD_EINTERNAL (numbers
 * out of the solver's range, solver failure: problem filled through env).
 * env (milp.h) may be NULL.
 */
#ifndef PARTD_SAC_OPLEVEL_H
#define PARTD_SAC_OPLEVEL_H

#include <stdint.h>

#include "modules/modules.h"
#include "solver/milp.h"

int partd__sac_op_policy(const partd_sac_stats *s, double budget, double time_limit_s,
                        const partd_solver_env *env, uint8_t *policy, int *feasible);

#endif
