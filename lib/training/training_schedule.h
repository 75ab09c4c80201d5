/*
 * training_schedule.h - the seven pipeline schedules of PyTorch's
 * torch.distributed.pipelining (contract, "The schedules: each rank's
 * list"): which rank runs each stage (loop or V placement), the conditions
 * each puts on S ranks, v stages per rank and M microbatches, and the
 * compute actions every rank runs, in its order.
 *
 * The orders are the contract's words, which state what PyTorch's classes
 * build (schedules.py: Schedule1F1B's runtime, ScheduleLoopedBFS,
 * ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble,
 * ScheduleZBVZeroBubble, ScheduleDualPipeV); the overlapped F/B pairs of
 * DualPipeV are listed as their F, then their B.
 *
 * This is the training folder's interface to the rest of lib (partd_
 * names): the planner times these lists, and lib/export writes them for
 * the runtimes (pytorch CSV, torchtitan) and checks a result's lists
 * against them, so one implementation of PyTorch's orders serves both.
 *
 * Ownership: partd_training_schedule_build() fills a partd_training_lists
 * that owns its arrays (partd_training_lists_free, NULL-safe on a zeroed
 * one; a list filled by hand owns malloc'd off and act the same way). Errors: PARTD_EINVALID (the schedule does not run with these S, v,
 * M), PARTD_ENOMEM.
 */
#ifndef PARTD_TRAINING_SCHEDULE_H
#define PARTD_TRAINING_SCHEDULE_H

#include <stdint.h>

#include "partd/enums.h"

/* Action kinds, as PyTorch writes them: forward, full backward, input-
 * gradient backward, weight-gradient backward. */
typedef enum partd_training_kind {
    PARTD_TRAINING_F,
    PARTD_TRAINING_B,
    PARTD_TRAINING_I,
    PARTD_TRAINING_W
} partd_training_kind;

typedef struct partd_training_action {
    uint32_t stage;
    uint16_t mb;
    uint8_t kind;              /* partd_training_kind */
    uint8_t pad;
} partd_training_action;

typedef struct partd_training_lists {
    partd_training_schedule schedule;
    uint32_t S, v, V, M;
    uint32_t n;                /* actions in all */
    uint32_t *off;             /* S + 1: rank r runs act[off[r] .. off[r + 1]) */
    partd_training_action *act;
} partd_training_lists;

/* The most microbatches an action can name (partd_training_action.mb). */
#define PARTD_TRAINING_MAX_MICROBATCHES UINT16_MAX

/* The largest v the search and the option take. */
#define PARTD_TRAINING_MAX_VIRTUAL 8

/* v of the schedule: 1 for GPipe and 1F1B, 2 for the V schedules, else the
 * v asked for. */
uint32_t partd_training_schedule_v(partd_training_schedule s, uint32_t v);

/* 1 when the schedule splits the backward into I and W. */
int partd_training_schedule_splits(partd_training_schedule s);

/* 1 when PyTorch's class runs with S ranks, v stages per rank and M
 * microbatches (v as partd_training_schedule_v gives it). */
int partd_training_schedule_allows(partd_training_schedule s, uint32_t S, uint32_t v,
                                    uint32_t M);

/* The condition, in words, for a 422 ("needs microbatches >= stages"). */
const char *partd_training_schedule_condition(partd_training_schedule s);

/* The rank of stage j of S * v. */
uint32_t partd_training_schedule_rank(partd_training_schedule s, uint32_t S, uint32_t j);

/* Every rank's list for S ranks, v stages per rank (replaced by
 * partd_training_schedule_v's: a caller holding a v of its own checks it
 * with partd_training_schedule_allows first) and M microbatches, into *out
 * (zeroed first). PARTD_OK; PARTD_EINVALID when the schedule does not run
 * so or M > PARTD_TRAINING_MAX_MICROBATCHES; PARTD_ENOMEM. */
int partd_training_schedule_build(partd_training_schedule s, uint32_t S, uint32_t v,
                                   uint32_t M, partd_training_lists *out);
void partd_training_lists_free(partd_training_lists *l);

/* "3F1": the action's name as PyTorch writes it, into buf (at least 24
 * bytes). */
void partd_training_action_name(const partd_training_action *a, char *buf, unsigned cap);

#endif
