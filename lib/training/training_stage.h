/*
 * training_stage.h - the figures of one stage, a run of units [a, b)
 * (contract, "Figures of a stage"), and the checkpoint sets it can take.
 *
 * Figures are at speed 1 and for the whole batch; the caller divides by
 * speed and M. in and params come through the pipeline model's window
 * (shared parameters once, get_attr nodes as parameters).
 *
 * Checkpoint sets. A checkpointed unit u of the stage discards d_u bytes
 * (its outputs no node of the stage outside u reads) and recomputes its
 * forward f_u; a set X has R = sum f_u, D = sum d_u and transient T = the
 * largest d_u. Under checkpoint `auto` the candidates are every set that
 * is not worse in all of R, D and T than another: for each threshold T
 * (the distinct d_u), the exact Pareto frontier of (R, D) over the units
 * with d_u <= T (training_frontier.c), so identical blocks keep it small;
 * `always` and `except_last` have the whole stage as one unit (R = f,
 * D = T = act), `never` the empty set. With `masks` (the exhaustive
 * search), a stage of at most PARTD_TRAINING_MASK_UNITS units gets instead
 * all 2^k subsets, each with its units as a bit mask (the tie order among
 * sets of equal figures needs them).
 *
 * Ownership: a partd_training_ckpts owns its arrays and scratch
 * (partd__training_ckpts_free). Errors: PARTD_ENOMEM, PARTD_ETOOBIG (a
 * frontier past PARTD_TRAINING_MAX_FRONTIER points).
 */
#ifndef PARTD_TRAINING_STAGE_H
#define PARTD_TRAINING_STAGE_H

#include <stdint.h>

#include "training_frontier.h"
#include "training_internal.h"

/* With masks, stages of at most this many units get every subset; longer
 * ones their frontier (which beats every other set in R, D and T). */
#define PARTD_TRAINING_MASK_UNITS 8

typedef struct partd_training_fig {
    uint32_t a, b;
    double f, bw, w;           /* forward, backward, its weight-gradient part */
    int64_t in, act, params, live_out;
} partd_training_fig;

/* One checkpoint set. */
typedef struct partd_training_ckpt {
    double R;                  /* forward recomputed, speed 1, whole batch */
    int64_t D, T;              /* bytes discarded, transient */
    uint64_t mask;             /* its units (bit i: unit a + i) when known */
} partd_training_ckpt;

/* The figures of [a, b); w is the caller's window, moved. */
void partd__training_fig(const partd_training_model *md, partd_pipeline_window *w, uint32_t a,
                         uint32_t b, partd_training_fig *out);

/* The parameter bytes of the union of the stages [a[i], b[i]) (a shared
 * parameter once); mark is the caller's scratch of md->n_res entries, all
 * different from gen, which it sets to gen. */
int64_t partd__training_params_union(const partd_training_model *md, const uint32_t *a,
                                     const uint32_t *b, uint32_t k, uint32_t *mark,
                                     uint32_t gen);

typedef struct partd_training_ckpts {
    const partd_training_model *md;
    partd_training_ckpt *c;    /* candidates, R ascending, the empty set first */
    uint32_t n;
    size_t cap;
    /* scratch */
    int64_t *d;                /* per unit of the stage */
    uint32_t *order;
    partd_training_frontier fr, frr; /* frr records its steps */
} partd_training_ckpts;

int partd__training_ckpts_init(partd_training_ckpts *cs, const partd_training_model *md);
void partd__training_ckpts_free(partd_training_ckpts *cs);

/* The candidates of the stage [a, b) under the request's checkpoint mode. */
int partd__training_ckpts_of(partd_training_ckpts *cs, uint32_t a, uint32_t b, int masks);

/* The units of candidate x of the stage [a, b), ascending, into
 * units (room for b - a); *n_units their count. */
int partd__training_ckpt_units(partd_training_ckpts *cs, uint32_t a, uint32_t b,
                               const partd_training_ckpt *x, uint32_t *units,
                               uint32_t *n_units);

#endif
