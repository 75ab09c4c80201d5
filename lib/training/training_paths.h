/*
 * training_paths.h - the path through every rank's whole list (internal
 * to training*.c).
 *
 * For each rank of a configuration, under the durations its simulator was
 * last run with: the longest path into its first action (as the critical
 * path is read: through the dependency that set its start), its whole
 * list, and the longest path out of its last action. A path is counted as
 * training_bound.c counts them: per stage, its forward, backward, input
 * gradient and weight gradient actions, then the delays it crosses (5V
 * counts). Every plan's step is at least the length of each, which
 * carries the rank's busy time and the idle before and after it.
 *
 * Owns nothing past a call. Errors: PARTD_ENOMEM (rpath unchanged).
 */
#ifndef PARTD_TRAINING_PATHS_H
#define PARTD_TRAINING_PATHS_H

#include "training_search.h"
#include "training_sim.h"

/* After partd__training_sim_run(&c->sim, du, ...): rank q's path into
 * rpath[q * 5V .. (q + 1) * 5V) (zero for a rank without actions), dmin
 * (V) the delay across each cut. *work counts what it walked. */
int partd__training_paths_ranks(const partd_training_cfg *c,
                                const partd_training_durations *du, const double *dmin,
                                double *rpath, uint64_t *work);

#endif
