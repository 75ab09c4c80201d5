/*
 * milp.h - a mixed-integer linear program in arrays, its numeric pre-check,
 * and its solve by COIN-OR CBC in a child process (internal to the SAC
 * unit).
 *
 * The caller builds the model with partd_milp_add_col/add_row (triplets, no
 * solver involved), then partd_milp_solve() checks its numbers and runs CBC
 * in a forked child (solver_child.h): a CBC abort, assertion, escaped C++
 * exception or runaway allocation kills the child only, and fails only this
 * solve with PARTD_EINTERNAL and a problem document. The child returns the
 * solver's raw doubles, so a solve gives exactly what an in-process solve
 * would. Each solve has its own process: solves of concurrent jobs run side
 * by side (CBC's driver keeps global state, coin-or/Cbc#332, which a process
 * of its own makes harmless).
 *
 * Ownership: partd_milp owns its arrays (partd_milp_free); x in the result is
 * the caller's.
 *
 * Errors of partd_milp_solve: PARTD_ENOMEM, PARTD_ECANCELLED, PARTD_ETIMEOUT
 * (the cancel's deadline), PARTD_EINVALID (a number the solver cannot take:
 * not finite, or beyond PARTD_MILP_MAX_ABS; 422 problem at /graph/modules),
 * PARTD_EINTERNAL (the solver crashed, ran out of its memory limit, or gave
 * up on numerics; 500 problem "solver-failed" saying how). The problem is
 * filled when env->problem is not NULL. Infeasibility and the time limit are
 * statuses, not errors.
 */
#ifndef PARTD_MILP_H
#define PARTD_MILP_H

#include <stdint.h>

#include "partd/cancel.h"
#include "partd/problem.h"

/* CBC's infinity: a bound at or beyond it is no bound. */
#define PARTD_MILP_INF 1e30
/* The largest coefficient or finite bound the pre-check lets through. */
#define PARTD_MILP_MAX_ABS 1e20
/* Address space a solve may add to the process's when no limit is given. */
#define PARTD_SOLVER_MEMORY_DEFAULT (4ull << 30)

typedef struct partd_milp {
    int n_cols, n_rows, n_nz;
    int cap_cols, cap_rows, cap_nz;
    double *col_lb, *col_ub, *obj;
    uint8_t *is_int;
    double *row_lb, *row_ub;
    int *nz_row, *nz_col;
    double *nz_val;
    int oom; /* an add failed: the model is incomplete */
} partd_milp;

/* The column's index, or -1 (oom set). */
int partd_milp_add_col(partd_milp *b, double lb, double ub, double obj, int is_int);
/* A row lb <= sum vals[k] x[cols[k]] <= ub (zeros skipped); its index or -1. */
int partd_milp_add_row(partd_milp *b, double lb, double ub, int n, const int *cols,
                       const double *vals);
void partd_milp_free(partd_milp *b);

/* What every solve of one job shares. A NULL env: never cancelled, failures
 * not described, the default memory limit. */
typedef struct partd_solver_env {
    const partd_cancel *cancel;   /* NULL: never cancelled */
    partd_problem *problem;       /* NULL: failures are not described */
    uint64_t memory_bytes;        /* 0: PARTD_SOLVER_MEMORY_DEFAULT */
} partd_solver_env;

typedef struct partd_milp_params {
    double time_limit_s;          /* CBC's wall-clock limit, > 0 */
    double relative_gap;          /* >= 0 */
    int tight_tolerances;         /* primal/integer tolerance 1e-9 */
    const partd_solver_env *env;  /* may be NULL */
} partd_milp_params;

typedef enum partd_milp_status {
    PARTD_MILP_OPTIMAL = 0,       /* proven within the requested gap */
    PARTD_MILP_FEASIBLE,          /* a solution, not proven optimal */
    PARTD_MILP_INFEASIBLE,        /* proven: no solution */
    PARTD_MILP_NONE               /* a limit hit before any solution */
} partd_milp_status;

typedef struct partd_milp_result {
    partd_milp_status status;
    double objective;             /* with a solution */
    double gap;                   /* relative gap to the best bound, >= 0 */
    double *x;                    /* caller-allocated, n_cols; set with a solution */
} partd_milp_result;

int partd_milp_solve(const partd_milp *b, const partd_milp_params *p,
                     partd_milp_result *out);

#endif
