/*
 * training_search.h - the exact search of the training planner (internal to
 * training*.c): stage count, device order and split minimising step_ms, on
 * the candidate stages of training_model.h, their values computed a row at
 * a time (or, when md->shortfall is set, the plan minimising the largest
 * memory shortfall).
 *
 * Ties: among plans of equal step the one with the least bottleneck, then
 * the DP's first in its fixed order, so the answer is deterministic.
 *
 * Returns PARTD_OK (sol->found = 0 when no plan fits), PARTD_ENOMEM,
 * PARTD_ETOOBIG (too many DP states: device classes times counts; or, with
 * sol->frontier_limit set, a stage's checkpoint frontier), the cancel
 * flag's codes, PARTD_EINTERNAL (the recorded plan is inconsistent).
 * sol owns its stages (tr_solution_free).
 */
#ifndef PARTD_TRAINING_SEARCH_H
#define PARTD_TRAINING_SEARCH_H

#include "cancel.h"
#include "training_model.h"

typedef struct tr_pick {
    uint32_t a, b;             /* units [a, b) */
    uint32_t cls, device;
    uint32_t k;                /* microbatches in flight */
} tr_pick;

typedef struct tr_solution {
    int found;
    int frontier_limit;        /* PARTD_ETOOBIG came from a checkpoint frontier */
    uint32_t S;
    tr_pick *stages;
} tr_solution;

int tr_search(const tr_model *md, const partd_cancel *cancel, tr_solution *sol);
void tr_solution_free(tr_solution *sol);

#endif
