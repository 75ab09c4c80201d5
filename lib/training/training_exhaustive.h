/*
 * training_exhaustive.h - the exhaustive search of a small space of
 * configurations (internal to training*.c).
 *
 * Every split of every configuration (cuts in lexicographic order), and
 * for each every checkpoint set of every stage: per rank, only the sets
 * that fit and that no other beats in recomputation, memory and tie order
 * (only the fastest of them when the ranks' sets multiply into more than
 * PARTD_TRAINING_EXHAUSTIVE_PRODUCT plans); every plan timed and offered.
 * A split where nothing fits offers its least-memory plan, so that the
 * least shortfall is known. The best plan is then optimal.
 *
 * Owns nothing past a call: the best plan goes to the caller's
 * partd_training_best. Errors: PARTD_ENOMEM, PARTD_ETOOBIG (past
 * PARTD_TRAINING_EXHAUSTIVE_PLANS plans timed or
 * PARTD_TRAINING_EXHAUSTIVE_COMBOS checkpoint combinations sized: the
 * space is not small after all, best holds what was found), the cancel
 * flag's codes.
 */
#ifndef PARTD_TRAINING_EXHAUSTIVE_H
#define PARTD_TRAINING_EXHAUSTIVE_H

#include "training_search.h"
#include "training_space.h"

/* Exhaustive when every configuration's splits add up to at most this, and
 * while the plans timed and the checkpoint combinations sized stay below
 * PLANS and COMBOS. */
#define PARTD_TRAINING_EXHAUSTIVE_SPLITS 20000
#define PARTD_TRAINING_EXHAUSTIVE_PLANS 400000
#define PARTD_TRAINING_EXHAUSTIVE_COMBOS 4000000
/* When the ranks' kept combinations make more plans than this, each keeps
 * only those no other beats in every stage's recomputation: the step stays
 * the least, the tie on memory among equal steps is no longer searched. */
#define PARTD_TRAINING_EXHAUSTIVE_PRODUCT 64

/* Every plan of every configuration of sp, the best into b; counts
 * configurations, evaluations and work in st. */
int partd__training_exhaustive(const partd_training_space *sp, partd_training_best *b,
                               partd_training_stats *st);

#endif
