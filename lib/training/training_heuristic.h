/*
 * training_heuristic.h - the search of a space too large to search
 * exhaustively, and its lower bound (internal to training*.c).
 *
 * In the order of their fluid bounds, while below the best step: the
 * speed-balanced split of the first, middle and last device order of
 * every (ranks, schedule, v) (every order in a small space), then of every
 * order of the best few of those; the best configurations improved by
 * moving one cut at a time while the plan improves (checkpoint sets chosen
 * by partd__training_eval_choose); and, when few (ranks, schedule, v) have
 * configurations whose fluid bound is below the best step, each of them
 * bounded by the relaxation of training_bound.c over all those device
 * orders at once (the combo of the best plan first, the others stopping
 * once past the least bound so far). The least bound, at most the best
 * step and at most that of the device orders the space left out, is the
 * search's lower bound. Work (actions timed, units priced) is counted, not
 * clocked, so that the answer is the same on every machine.
 *
 * Owns nothing past a call: the best plan goes to the caller's
 * partd_training_best. Errors: PARTD_ENOMEM, PARTD_ETOOBIG (a checkpoint
 * frontier past its limit), the cancel flag's codes.
 */
#ifndef PARTD_TRAINING_HEURISTIC_H
#define PARTD_TRAINING_HEURISTIC_H

#include "training_search.h"
#include "training_space.h"

/* Searches sp (sp->n > 0), offering plans to b; *lower: the least lower
 * bound on the step of every plan of sp (INFINITY when none fits and
 * nothing bounds it). Counts configurations, evaluations and work in st. */
int partd__training_heuristic(const partd_training_space *sp, partd_training_best *b,
                              partd_training_stats *st, double *lower);

#endif
