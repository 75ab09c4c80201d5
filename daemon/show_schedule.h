/*
 * show_schedule.h - one training step of a pipeline, simulated block by
 * block, for the timeline of `partd show`.
 *
 * Each stage runs its forward and backward blocks of every microbatch in
 * the schedule's fixed order (the contract's `gpipe`: forwards 0..M-1, then
 * backwards 0..M-1; `1f1b`: min(M, S - s) forwards, then one backward and
 * one forward alternately, then the remaining backwards). A block starts
 * when its stage is free and its input is ready: forward (s, m) needs
 * forward (s-1, m) done; backward (s, m) needs its own forward and backward
 * (s+1, m) done. Durations are per stage, the same for every microbatch.
 *
 * show_schedule_run() fills a show_schedule that owns its arrays (release
 * with show_schedule_free) and returns PARTD_OK, PARTD_EINVALID (no stages
 * or microbatches, too many blocks, a negative or non-finite duration) or
 * PARTD_ENOMEM.
 */
#ifndef PARTD_SHOW_SCHEDULE_H
#define PARTD_SHOW_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* An operation of a stage: forward of microbatch m is 2m, backward 2m + 1. */
#define SHOW_OP_FWD(m) ((uint32_t)(m) * 2u)
#define SHOW_OP_BWD(m) ((uint32_t)(m) * 2u + 1u)
#define SHOW_OP_IS_BWD(op) ((op) & 1u)
#define SHOW_OP_MB(op) ((op) >> 1)

typedef struct show_schedule {
    size_t stages, microbatches;
    /* Index [s * microbatches + m]. */
    double *fwd_start, *fwd_end, *bwd_start, *bwd_end;
    double makespan; /* end of the last block */
} show_schedule;

/* The order in which stage s of S runs its 2M operations, into ops[2M]. */
void show_schedule_order(size_t stages, size_t microbatches, int one_f_one_b, size_t s,
                         uint32_t *ops);

int show_schedule_run(size_t stages, size_t microbatches, int one_f_one_b,
                      const double *fwd_ms, const double *bwd_ms, show_schedule *out);
void show_schedule_free(show_schedule *sch);

#endif
