/*
 * training_game.h - a zero-sum matrix game solved by regret matching+
 * (internal to training*.c).
 *
 * The relaxation of training_bound.c weighs its paths (the rows, a
 * maximiser) against its assignments (the columns, a minimiser) by the
 * mixes this game finds: regret matching+, alternating, the mixes averaged
 * with weight t over the rounds. Many cheap rounds on a small matrix; the
 * same matrix and rounds give the same mixes on every machine.
 *
 * Owns nothing past a call. Errors: none but memory, answered by INFINITY
 * with the mixes left as they were.
 */
#ifndef PARTD_TRAINING_GAME_H
#define PARTD_TRAINING_GAME_H

#include <stdint.h>

/* Plays `rounds` rounds (> 0) of the game whose row p gets
 * A[p * stride + k] against column k (P rows, K columns, both > 0): the
 * rows' mix into lam (P), the columns' into mu (K), each summing to 1.
 * Returns what lam guarantees: the least, over the columns, of what it
 * gets against each. */
double partd__training_game_play(const double *A, uint32_t stride, uint32_t P, uint32_t K,
                                 uint32_t rounds, double *lam, double *mu);

#endif
