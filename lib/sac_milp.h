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
 * Errors: PARTD_ENOMEM, PARTD_EINTERNAL (the solver gave up on numerics).
 * Infeasibility and time limits are statuses, not errors.
 */
#ifndef PARTD_SAC_MILP_H
#define PARTD_SAC_MILP_H

#include "cancel.h"
#include "sac_model.h"

typedef enum partd_sac_goal {
    PARTD_SAC_MIN_RECOMPUTE = 0,
    PARTD_SAC_MIN_PEAK
} partd_sac_goal;

typedef enum partd_sac_solve_status {
    PARTD_SAC_SOLVED_OPTIMAL = 0, /* proven within the requested gap of 0 */
    PARTD_SAC_SOLVED_FEASIBLE,    /* a solution, not proven optimal */
    PARTD_SAC_SOLVED_INFEASIBLE,  /* proven: no plan */
    PARTD_SAC_SOLVED_NONE         /* limit hit before any solution */
} partd_sac_solve_status;

typedef struct partd_sac_milp_params {
    partd_sac_goal goal;
    double cap_bytes;        /* MIN_RECOMPUTE: peak limit */
    double time_limit_s;     /* wall clock, > 0 */
    double relative_gap;     /* >= 0 */
    /* Checked while waiting for the solver (another job's solve may hold
     * it); NULL: never cancelled. A solve itself runs to its limit. */
    const partd_cancel *cancel;
} partd_sac_milp_params;

typedef struct partd_sac_milp_out {
    partd_sac_solve_status status;
    double objective;        /* ms (MIN_RECOMPUTE) or bytes (MIN_PEAK) */
    double gap;              /* relative gap to the best bound, >= 0 */
    uint8_t *y;              /* caller-allocated, tree->n */
    double *r;               /* caller-allocated, tree->n */
} partd_sac_milp_out;

int partd_sac_milp_solve(const partd_sac_tree *t, const partd_sac_milp_params *p,
                         partd_sac_milp_out *out);

/* Solves max runtimes.x subject to memory.x <= cap, x binary, with the given
 * per-item fixings (-1 free, 0, 1), to proven optimality (gap 0). Items are
 * the op-level groups of sac_oplevel.c. status as above; x caller-allocated. */
int partd_sac_knapsack_solve(uint32_t n, const double *value,
                             const double *weight, double cap,
                             double time_limit_s, const partd_cancel *cancel, uint8_t *x,
                             partd_sac_solve_status *status);

/* The turn at CBC, whose driver is not thread-safe (see sac_milp.c). Waits
 * up to time_limit_s, looking at `cancel` (may be NULL) every 20 ms:
 * PARTD_OK (then partd_sac_solver_release() must follow), PARTD_ETIMEOUT,
 * PARTD_ECANCELLED, or PARTD_EINTERNAL. The solves above take it
 * themselves. */
int partd_sac_solver_acquire(double time_limit_s, const partd_cancel *cancel);
void partd_sac_solver_release(void);

#endif
