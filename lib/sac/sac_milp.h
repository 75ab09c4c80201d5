/*
 * sac_milp.h - the module-level sac_milp model on COIN-OR CBC (internal to
 * the SAC unit).
 *
 * Two problems on the same constraints:
 *   PARTD_SAC_MIN_RECOMPUTE  minimise recomputation time, peak <= cap
 *   PARTD_SAC_MIN_PEAK       minimise the peak (every discard ratio at 1,
 *                            which only lowers memory)
 * The solution is the solver's raw y and r; the caller rounds and re-scores
 * it with sac_model.h.
 *
 * Every solve runs CBC in a child process (milp.h): a solver crash fails the
 * solve, never the process, and solves of concurrent jobs need no lock.
 *
 * Errors: those of partd_milp_solve() (milp.h): PARTD_ENOMEM,
 * PARTD_ECANCELLED, PARTD_ETIMEOUT, PARTD_EINVALID (numbers out of the
 * solver's range), PARTD_EINTERNAL (the solver crashed or gave up on
 * numerics), the problem filled through env. Infeasibility and time limits
 * are statuses, not errors.
 */
#ifndef PARTD_SAC_MILP_H
#define PARTD_SAC_MILP_H

#include "partd/cancel.h"
#include "sac_model.h"
#include "solver/milp.h"

typedef enum partd_sac_goal {
    PARTD_SAC_MIN_RECOMPUTE = 0,
    PARTD_SAC_MIN_PEAK
} partd_sac_goal;

typedef enum partd_sac_solve_status {
    PARTD_SAC_SOLVED_OPTIMAL = PARTD_MILP_OPTIMAL,       /* proven within the gap */
    PARTD_SAC_SOLVED_FEASIBLE = PARTD_MILP_FEASIBLE,     /* not proven optimal */
    PARTD_SAC_SOLVED_INFEASIBLE = PARTD_MILP_INFEASIBLE, /* proven: no plan */
    PARTD_SAC_SOLVED_NONE = PARTD_MILP_NONE              /* limit hit first */
} partd_sac_solve_status;

typedef struct partd_sac_milp_params {
    partd_sac_goal goal;
    double cap_bytes;        /* MIN_RECOMPUTE: peak limit */
    double time_limit_s;     /* wall clock, > 0 */
    double relative_gap;     /* >= 0 */
    /* The job's cancel flag (a cancelled solve is killed at once), problem
     * document and solver memory limit; NULL: defaults. */
    const partd_solver_env *env;
} partd_sac_milp_params;

typedef struct partd_sac_milp_out {
    partd_sac_solve_status status;
    double objective;        /* ms (MIN_RECOMPUTE) or bytes (MIN_PEAK) */
    double gap;              /* relative gap to the best bound, >= 0 */
    uint8_t *y;              /* caller-allocated, tree->n */
    double *r;               /* caller-allocated, tree->n */
} partd_sac_milp_out;

int partd__sac_milp_solve(const partd_sac_tree *t, const partd_sac_milp_params *p,
                         partd_sac_milp_out *out);

/* Solves max runtimes.x subject to memory.x <= cap, x binary, to proven
 * optimality (gap 0). Items are the op-level groups of sac_oplevel.c. status
 * as above; x caller-allocated. env as in the params above (may be NULL). */
int partd__sac_knapsack_solve(uint32_t n, const double *value,
                             const double *weight, double cap,
                             double time_limit_s, const partd_solver_env *env, uint8_t *x,
                             partd_sac_solve_status *status);

#endif
