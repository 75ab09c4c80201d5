/*
 * training_model.h - the training planner's model (internal to training*.c).
 *
 * Owns, for one request in mode "training":
 *   - the units (contract: maximal runs of operations with the same module
 *     prefix at unit_depth) and their names (training_units.c);
 *   - per-operation figures at speed 1: forward f, backward b, and for the
 *     checkpoint rule the first reader outside the node's unit;
 *   - the device classes: devices with the same speed and memory_bytes are
 *     interchangeable, so searches count stages per class;
 *   - the candidate stages (training_stage.c): from every unit a, the
 *     ranges [a, a + 1) .. [a, a + len[a]) that can belong to an optimal
 *     plan. Their values - for every device class and every number of
 *     microbatches in flight k, the least stage time over the allowed
 *     checkpoint sets that fit the class's memory (INFINITY when none fits),
 *     or in shortfall mode the least memory minus the class's memory - are
 *     not stored: the search computes one row (one first unit a) at a time
 *     (tr_rows), so the planner's memory stays linear in the units.
 * The checkpoint sets' Pareto frontier is training_frontier.h.
 * The pipeline planner's window (pipeline_model.h) counts each stage's
 * received bytes and parameters (shared ones once, get_attr as parameters).
 *
 * Memory: md->stats (never NULL) counts the bytes the search holds (the
 * row buffers and DP arrays) and their high-water mark; tr_mem() keeps it.
 *
 * Ownership: tr_model owns every array (tr_model_free); a tr_rows owns its
 * buffers (tr_rows_free). Errors: PARTD_ENOMEM,
 * PARTD_EINVALID (problem filled: more stages than units), PARTD_ETOOBIG
 * (problem filled: a search limit), the cancel flag's codes.
 */
#ifndef PARTD_TRAINING_MODEL_H
#define PARTD_TRAINING_MODEL_H

#include <stdint.h>

#include "cancel.h"
#include "model.h"
#include "pipeline_model.h"
#include "problem.h"
#include "training_types.h"

typedef struct tr_unit {
    int32_t lo, hi;            /* operation ranks [lo, hi) */
    double fwd, bwd;           /* sums of f and b at speed 1, in rank order */
    int64_t act;               /* output bytes of its operations */
} tr_unit;

/* The figures of one stage that do not depend on the device or position. */
typedef struct tr_range {
    uint32_t a, b;             /* units [a, b) */
    double fwd, bwd;           /* speed 1 */
    int64_t in, out, params, act;
    double comm_ms;
} tr_range;

/* A checkpoint set, as the stage figures need it. */
typedef struct tr_ckpt {
    int any;                   /* X non-empty */
    int64_t discarded;         /* sum over X's units of discarded bytes: kept(X) = act - discarded */
    int64_t transient;         /* max over X's units of discarded bytes */
    double recompute;          /* sum of f over X's units, speed 1 */
} tr_ckpt;

typedef struct tr_model {
    const partd_request *req;
    const partd_training_options *opt;
    pl_model pl;               /* ranks, windows, parameters */
    uint32_t M;                /* microbatches */
    uint32_t depth;            /* unit_depth used */

    uint32_t n_units;
    tr_unit *units;
    uint32_t *unit_of;         /* per rank */
    char **unit_name;          /* n_units malloc'd names */
    double *fb_prefix;         /* n_units + 1: prefix of fwd + bwd over units */

    double *f;                 /* per rank, speed 1 */
    int32_t *next_outside;     /* per rank: first reading rank past its unit, INT32_MAX none */
    int32_t *last_user;        /* per rank: last reading rank, -1 none */
    /* CSR by rank: the ranks whose last_user / next_outside is that rank. */
    uint32_t *lu_off, *lu_idx, *no_off, *no_idx;

    uint32_t n_classes;
    double *cls_speed;
    int64_t *cls_mem;
    uint32_t *cls_count;       /* devices in the class */
    uint32_t *dev_class;       /* device -> class */
    int64_t max_mem;

    uint32_t max_stages;       /* options.stages, or min(devices, units) */
    uint32_t tail_cap;         /* tests: tail nodes per DP pass (0: the state limit) */
    uint32_t n_k;              /* k values in the table: 1 (gpipe) or min(M, max_stages) */

    /* The candidate stages: ranges [a, a+1) .. [a, a + len[a]). */
    uint32_t *len;
    uint32_t max_len;          /* the largest len[a] */
    int shortfall;             /* values are least memory minus class memory */
    partd_training_stats *stats; /* the caller's, or own_stats */
    partd_training_stats own_stats;
} tr_model;

/* training_units.c */
int tr_model_build(tr_model *md, const partd_request *req, partd_problem *pb);
void tr_model_free(tr_model *md);
/* The default unit_depth of the contract for req (exposed for tests). */
uint32_t tr_default_depth(const partd_request *req);

/* k for the stage `from_end` stages before the end (1 = last stage). */
static inline uint32_t tr_k(const tr_model *md, uint32_t from_end)
{
    if (md->opt->schedule == PARTD_SCHEDULE_GPIPE)
        return md->M;
    return from_end < md->M ? from_end : md->M;
}

static inline uint32_t tr_kidx(const tr_model *md, uint32_t k)
{
    return md->opt->schedule == PARTD_SCHEDULE_GPIPE ? 0 : k - 1;
}

/* The search's memory count: delta bytes allocated (> 0) or freed (< 0). */
static inline void tr_mem(const tr_model *md, int64_t delta)
{
    partd_training_stats *st = md->stats;
    st->live_bytes = (uint64_t)((int64_t)st->live_bytes + delta);
    if (st->live_bytes > st->peak_bytes)
        st->peak_bytes = st->live_bytes;
}

/* training_stage.c */

/* Sets md->len (the candidate stages) for the values of the search:
 * shortfall = 0, least times; 1, least memory shortfalls. */
int tr_ranges_build(tr_model *md, int shortfall, const partd_cancel *cancel, partd_problem *pb);

/* One row of values at a time: tr_row(r, a, n, &cells) computes the values
 * of the first n (at most len[a]) candidate stages [a, b), b = a + 1 ..
 * a + n, cell (b, cls, kidx) at
 * ((b - a - 1) * n_classes + cls) * n_k + kidx; the cells stay valid until
 * the next call. Errors: PARTD_ENOMEM, PARTD_ETOOBIG (a stage has more
 * Pareto points than TR_MAX_FRONTIER; tr_frontier_problem says so). */
typedef struct tr_rows tr_rows;
int tr_rows_init(const tr_model *md, tr_rows **out);
void tr_rows_free(tr_rows *r);
int tr_row(tr_rows *r, uint32_t a, uint32_t n, const double **cells);

static inline size_t tr_row_index(const tr_model *md, uint32_t a, uint32_t b, uint32_t cls,
                                  uint32_t kidx)
{
    return ((size_t)(b - a - 1) * md->n_classes + cls) * md->n_k + kidx;
}

/* The problem document of PARTD_ETOOBIG from the checkpoint frontier. */
void tr_frontier_problem(partd_problem *pb);

/* The range's figures, and the checkpoint set of the stage [a, b) on class
 * cls with k in flight: the least-time set that fits (or, with fit == 0, the
 * least-memory set). *units_out gets the checkpointed units (malloc'd,
 * ascending; NULL when none). */
int tr_stage_choose(const tr_model *md, uint32_t a, uint32_t b, uint32_t cls, uint32_t k,
                    int fit, tr_range *rg, tr_ckpt *x, uint32_t **units_out,
                    uint32_t *n_units_out);

/* The contract's figures of a stage. */
int64_t tr_stage_memory(const tr_model *md, const tr_range *rg, const tr_ckpt *x, uint32_t k);
/* The memory's terms, each divided by M and rounded down: inputs held
 * (k * in / M) and activations held (kept outputs and the transient term);
 * the rest of tr_stage_memory is param_factor * params, rounded up with the
 * others' fractions. */
void tr_stage_memory_parts(const tr_model *md, const tr_range *rg, const tr_ckpt *x,
                           uint32_t k, int64_t *inputs, int64_t *activations);
double tr_stage_time(const tr_model *md, const tr_range *rg, const tr_ckpt *x, double speed);
/* c: checkpointed microbatches of the checkpoint mode. */
uint32_t tr_checkpointed_microbatches(const tr_model *md);

#endif
