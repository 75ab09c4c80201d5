/*
 * training_frontier.h - the Pareto frontier of checkpoint sets (internal to
 * training*.c).
 *
 * Points are sets of units, each with R (forward time recomputed, the sum of
 * its units' F) and D (bytes discarded, the sum of its units' d); a point is
 * kept when no other has D at least as large for R at most as large. Points
 * are held by D ascending (R strictly ascending with it). Adding one unit
 * merges the points with their shifted copies in one linear pass, so a
 * stack of c identical units keeps c + 1 points and costs O(c) per unit.
 *
 * With `record`, every step remembers each point's parent and whether it
 * took the step's unit, so the set of a point can be read back.
 *
 * Ownership: the frontier owns its arrays (partd__training_frontier_free). Errors:
 * PARTD_ENOMEM, PARTD_ETOOBIG (more than PARTD_TRAINING_MAX_FRONTIER points: a search
 * limit).
 */
#ifndef PARTD_TRAINING_FRONTIER_H
#define PARTD_TRAINING_FRONTIER_H

#include <stdint.h>

#define PARTD_TRAINING_MAX_FRONTIER (1u << 20)

typedef struct partd_training_frontier {
    double *R;
    int64_t *D;
    uint32_t n, cap;
    /* the pass's output, swapped in */
    double *R2;
    int64_t *D2;
    uint32_t *par2;
    uint8_t *take2;
    /* recording */
    int record;
    uint32_t n_steps, max_steps;
    uint32_t **parent;
    uint8_t **take;
    uint32_t *step_item;
} partd_training_frontier;

int partd__training_frontier_init(partd_training_frontier *fr, uint32_t max_steps, int record);
void partd__training_frontier_free(partd_training_frontier *fr);

/* Back to the empty set alone: (R, D) = (0, 0). */
void partd__training_frontier_reset(partd_training_frontier *fr);

/* Adds a unit (forward time F, discarded bytes d > 0) known to the caller
 * as `item`. */
int partd__training_frontier_add(partd_training_frontier *fr, double F, int64_t d, uint32_t item);

/* Marks in_item[item] = 1 for the items of point `point` as it was after
 * `steps` steps (recording frontiers only). */
void partd__training_frontier_items(const partd_training_frontier *fr, uint32_t point, uint32_t steps, uint8_t *in_item);

#endif
