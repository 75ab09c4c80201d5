/*
 * sac_result.h - what the SAC planner (sac.c) found, shared with its
 * rendering (sac_result.c). Internal to the SAC unit: everyone else sees the
 * opaque struct partd_sac_result through sac.h.
 *
 * Ownership: a partd_sac_result owns its plans, policies and frontier;
 * partd_sac_result_free() (sac.h) releases all of it.
 * Errors: types only; the functions are in sac.h (rendering returns NULL
 * when memory runs out).
 */
#ifndef PARTD_SAC_RESULT_H
#define PARTD_SAC_RESULT_H

#include <stdint.h>

#include "partd/enums.h"
#include "sac_model.h"

/* One answer: the main solve at the budget, or one frontier point. */
typedef struct partd_sac_answer {
    partd_sac_status status;
    double gap;
    int64_t budget_bytes;    /* as the user states budgets: cap + FSDP reserve */
    int64_t peak_bytes;
    double recompute_ms;
    partd_sac_plan_vec plan;
} partd_sac_answer;

/* A module's op-level policy (sac_oplevel.h): ops[i] = 1 when op i's output
 * is saved, 0 when recomputed; computed = 1 once asked for. */
typedef struct partd_sac_module_policy {
    int computed, feasible;
    uint8_t *ops;
} partd_sac_module_policy;

struct partd_sac_result {
    partd_sac_answer main;
    int64_t baseline_peak_bytes;
    int has_min_peak;
    int64_t min_peak_bytes;
    int has_fsdp;
    int64_t reserve_bytes;
    uint32_t n_modules;
    partd_sac_module_policy *policies; /* per module when op_level, else NULL */
    uint32_t n_frontier;
    partd_sac_answer *frontier;
    double solve_ms;
};

#endif
