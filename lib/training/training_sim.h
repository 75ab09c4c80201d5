/*
 * training_sim.h - the step model (contract, "Actions, time and memory"):
 * when every action of every rank's list starts and ends, and each rank's
 * peak memory, read from its order.
 *
 * An action starts when its rank has ended the previous one and its inputs
 * are there: F(j, m) after F(j - 1, m) + delta[j - 1]; B or I (j, m) after
 * F(j, m) and, below the last stage, after the B or I of (j + 1, m) +
 * delta[j]; W after its I. partd__training_sim_build() resolves those
 * dependencies once for a schedule's lists and puts the actions in an order
 * that respects them (a longest-path pass is then one sweep); every order
 * the seven schedules build has one, and a list that would wait forever is
 * PARTD_EINVALID.
 *
 * Ownership: a partd_training_sim owns its arrays (partd__training_sim_free,
 * NULL-safe on a zeroed one); it points at the lists, which must outlive it.
 * Errors: PARTD_ENOMEM, PARTD_EINVALID (a list waits forever).
 */
#ifndef PARTD_TRAINING_SIM_H
#define PARTD_TRAINING_SIM_H

#include <stdint.h>

#include "training_schedule.h"

#define PARTD_TRAINING_NO UINT32_MAX

typedef struct partd_training_sim {
    const partd_training_lists *l;
    uint32_t *order;           /* n: action indices, dependencies first */
    uint32_t *prev;            /* the rank's previous action, or NO */
    uint32_t *dep1, *dep2;     /* inputs (see above), or NO */
    uint8_t *rank_last;        /* the last action of a (j, m): B or W */
    uint8_t *loc;              /* the action's stage among its rank's, in order of appearance */
    uint32_t *rank_of_stage;   /* V */
    /* Scratch of partd__training_sim_run, n each. */
    double *end;
    uint8_t *why;              /* what the start waited for: 0 nothing, 1 prev, 2 dep1, 3 dep2 */
} partd_training_sim;

/* Durations per microbatch of every stage (V each): the forward, the full
 * and the input-gradient backward of an unchecked microbatch, the
 * recomputation a checkpointed one adds to its B or I, the weight
 * gradient, and the delay across the cut after the stage (0 for the last,
 * and wherever the next stage is on the same rank). Microbatch m is
 * checkpointed when m < c. */
typedef struct partd_training_durations {
    const double *F, *B, *I, *R, *W, *delta;
    uint32_t c;
} partd_training_durations;

int partd__training_sim_build(const partd_training_lists *l, partd_training_sim *out);
void partd__training_sim_free(partd_training_sim *s);

/* The duration of action a. */
double partd__training_sim_duration(const partd_training_durations *d,
                                    const partd_training_action *a);

/* Times every action (sim->end; starts are end - duration): the step (the
 * last end), and, when busy is not NULL, each rank's busy time (S). */
double partd__training_sim_run(partd_training_sim *s, const partd_training_durations *d,
                               double *busy);

/* After partd__training_sim_run: the longest path, as counts per stage of
 * the actions on it (cnt[kind * V + j], kinds F, B, I, W; checkpointed
 * and unchecked alike) and of the delays crossed (dcnt[j]). */
void partd__training_sim_critical(const partd_training_sim *s, const partd_training_durations *d,
                                  uint32_t *cnt, uint32_t *dcnt);

/* Memory read from the order. Per stage: held_c / held_u, the bytes a
 * checkpointed / unchecked microbatch holds from its F until its last
 * backward (in + kept), and transient, added while a B or I of a
 * checkpointed microbatch runs. Microbatch m is checkpointed when m < c.
 * *peak gets the rank's peak of their sum (the parameters are the
 * caller's); stage_peak (V, may be NULL; the caller zeroes it) each
 * stage's own peak within its rank's list; end (may be NULL) what the rank
 * still holds after its last action (0: every microbatch released). Sums
 * saturate at INT64_MAX / 2. */
void partd__training_sim_memory(const partd_training_sim *s, uint32_t rank,
                                const int64_t *held_c, const int64_t *held_u,
                                const int64_t *transient, uint32_t c, int64_t *peak,
                                int64_t *stage_peak, int64_t *end);

#endif
