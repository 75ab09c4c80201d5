/*
 * timeline.h - one training step re-timed from a plan's own figures
 * (contract, "Actions, time and memory" and "The training result"): when
 * every action of every rank's list starts and ends, each rank's busy time
 * and the step.
 *
 * Every rank runs its list in order; an action starts when its rank has
 * ended the previous one and its inputs are there: F(j, m) after
 * F(j - 1, m) + send_ms of stage j - 1; B or I (j, m) after F(j, m) and,
 * below the last stage, after the B or I of (j + 1, m) + send_ms of stage
 * j; W(j, m) after I(j, m). A B or I of a checkpointed microbatch (m <
 * checkpointed) runs recompute_ms longer, the recomputation first. This is
 * the training planner's own step simulator (lib/training/training_sim.c,
 * where a result's step_ms comes from), fed with the figures a training
 * result carries instead of the search's: a result re-timed here gives
 * back its step_ms and every rank's busy_ms. `partd show` draws its
 * timeline with it.
 *
 * Ownership: partd_timeline_run() fills a partd_timeline that owns its
 * arrays (partd_timeline_free, NULL-safe on a zeroed one); the plan's
 * arrays stay the caller's and are read during the call only.
 *
 * Errors: PARTD_OK; PARTD_EINVALID when the figures are not a plan: no
 * ranks, stages or microbatches, a duration that is negative or not
 * finite, an action naming a stage or microbatch out of range or on
 * another rank than its stage's, a (stage, microbatch) without its one F
 * and either one B or one I and one W, or lists that wait for each other
 * forever; PARTD_ENOMEM. On PARTD_EINVALID, err (errcap bytes, may be 0)
 * holds one sentence naming the member of a training result the figure
 * comes from, by JSON Pointer ("/schedule/actions/1/4 (2F0) is on rank 1,
 * its stage on rank 2").
 */
#ifndef PARTD_TIMELINE_H
#define PARTD_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "enums.h"

/* Action kinds, as PyTorch writes them: forward, full backward, input-
 * gradient backward, weight-gradient backward. */
typedef enum partd_timeline_kind {
    PARTD_TIMELINE_F,
    PARTD_TIMELINE_B,
    PARTD_TIMELINE_I,
    PARTD_TIMELINE_W
} partd_timeline_kind;

typedef struct partd_timeline_action {
    uint32_t stage, microbatch;
    uint8_t kind; /* partd_timeline_kind */
} partd_timeline_action;

/* A stage's figures per microbatch, as partitions[] of a training result
 * gives them. */
typedef struct partd_timeline_stage {
    uint32_t rank;
    double forward_ms, backward_ms, input_grad_ms, weight_grad_ms, recompute_ms, send_ms;
} partd_timeline_stage;

typedef struct partd_timeline_plan {
    uint32_t ranks, stages, microbatches;
    uint32_t checkpointed;             /* microbatches m < this recompute */
    const partd_timeline_stage *stage; /* stages */
    const uint32_t *action_off;        /* ranks + 1: rank r runs action[off[r] .. off[r + 1]) */
    const partd_timeline_action *action;
} partd_timeline_plan;

typedef struct partd_timeline {
    uint32_t n;          /* actions, in the plan's order */
    double *start, *end; /* n */
    double *busy;        /* per rank: the sum of its actions' durations */
    double step_ms;      /* the last end (0 with no action) */
} partd_timeline;

/* "3F1" as PyTorch writes a compute action (stage, kind, microbatch;
 * decimal, at most 9 digits each): 1 and *out filled, or 0. */
int partd_timeline_action_parse(const char *s, partd_timeline_action *out);

/* The microbatches a checkpoint mode checkpoints (contract, "Figures of a
 * stage"): M for always and auto, M - 1 for except_last, 0 for never. */
uint32_t partd_timeline_checkpointed(partd_checkpoint mode, uint32_t microbatches);

/* The duration of action a of plan p: forward_ms; backward_ms or
 * input_grad_ms, plus recompute_ms when its microbatch is checkpointed;
 * weight_grad_ms. a must name one of p's stages. */
double partd_timeline_duration(const partd_timeline_plan *p, const partd_timeline_action *a);

int partd_timeline_run(const partd_timeline_plan *p, partd_timeline *out, char *err, size_t errcap);
void partd_timeline_free(partd_timeline *t);

#endif
