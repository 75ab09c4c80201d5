/*
 * pipeline_model.h - the pipeline planner's cost model (internal to
 * pipeline*.c).
 *
 * Stages are ranges [a, e) of *operation ranks*: the operation nodes
 * (call_*) numbered 0..m-1 in planning order. Placeholders, get_attr nodes
 * and the output node belong to no stage:
 *   - a placeholder is a graph input that enters before stage 0; a stage that
 *     reads it receives its output_bytes (transfer and memory);
 *   - a get_attr node is a parameter: a stage that reads it stores it once
 *     (its named params, or max(output_bytes, param_bytes) when it names none);
 *   - the output node reads after the last stage (it matters only for
 *     liveness across cuts and for partitions' outputs).
 *
 * Everything a stage costs is a sum over "resources", each counted once per
 * stage that reads it:
 *   P class (parameters): named params (shared ones once per stage) and
 *     unnamed get_attr nodes;
 *   R class (received bytes): placeholders and the outputs of operations
 *     before the stage.
 * A resource read by readers r1 < r2 < ... (operation ranks) has one
 * *occurrence* per reader: (q, r) with q = previous reader, or the birth
 * rank for the first reader (the producing operation's rank, -1 for
 * placeholders and parameters). The resource is counted in stage [a, e) iff
 * one occurrence has q < a <= r < e, and at most one does. So a window
 * [a, e) slides forward in amortised O(1) per reader (partd_pipeline_window_move) with
 * no per-resource state: this is what makes the planner linear.
 *
 * Times are fixed point: X[i], the first i operations' time at speed 1, is a
 * sum of llround(t * 2^K) ticks (K chosen from the graph so that every sum
 * fits an int64), and a stage [a, e) on a device of speed v takes
 * round(X[e] / v) - round(X[a] / v) ticks. Sums telescope, so splits that
 * spread the same work over equally fast devices tie exactly, as the
 * contract's tie breaks need, and one prefix array serves every speed.
 *
 * Ownership: partd_pipeline_model owns all its arrays (partd_pipeline_model_free). Errors:
 * PARTD_ENOMEM, PARTD_EINVALID (latencies too large for a device's speed,
 * problem filled).
 */
#ifndef PARTD_PIPELINE_MODEL_H
#define PARTD_PIPELINE_MODEL_H

#include <math.h>
#include <stdint.h>

#include "partd/model.h"
#include "partd/problem.h"

/* The objective a search minimises the largest value of. SHORTFALL is the
 * infeasible case's: memory minus device memory, with no memory limit. */
typedef enum partd_pipeline_objective {
    PARTD_PIPELINE_OBJ_TIME = 0,
    PARTD_PIPELINE_OBJ_MEMORY,
    PARTD_PIPELINE_OBJ_PARAMS,
    PARTD_PIPELINE_OBJ_UNIFORM,
    PL_OBJ_SHORTFALL
} partd_pipeline_objective;

typedef struct partd_pipeline_model {
    const partd_request *req;
    uint32_t m;                /* operation nodes */
    uint32_t stages;
    uint32_t *op_node;         /* rank -> node index */
    uint32_t *node_rank;       /* node -> rank, PARTD_NONE for non-operations */

    /* Prefix sums over ranks (m + 1 entries). */
    int64_t *act;              /* output bytes of operations */
    int64_t *own_param;        /* param_bytes of operations naming no params */
    uint32_t n_speeds;         /* distinct speeds of the stages' devices */
    double *speed;             /* n_speeds values */
    uint32_t *stage_speed;     /* stage -> index into speed */
    int64_t *ticks;            /* X: prefix of node ticks at speed 1 */
    int tick_exp;              /* K: one tick is 2^-K ms */
    double tick_ms;            /* 2^-K, exact */
    double *time_prefix;       /* prefix of node times at speed 1, ms */
    double ms_per_byte;        /* 1000 / transfer_bytes_per_sec */

    /* Occurrences grouped by reader r (r_off, m + 1 entries) and by q >= 0
     * (q_off). wc = bytes * 2 + class (1 = P, 0 = R). */
    uint32_t *r_off;
    int32_t *r_q;
    int64_t *r_wc;
    uint32_t *q_off;
    int32_t *q_r;
    int64_t *q_wc;

    /* Required cuts: next_cut[a] = smallest required cut position > a, or m
     * (m + 1 entries). */
    int32_t *next_cut;

    /* Per stage. */
    int64_t *k_act;            /* activation copies: 1, microbatches, 1f1b */
    int64_t *mem_limit;        /* device memory_bytes */
    int32_t *target;           /* uniform: DeepSpeed partition_uniform size */
    double param_factor;
    partd_pipeline_objective objective;
    int tie_sweep_always;      /* tests: always use the tie breaks' sweep */
} partd_pipeline_model;

/* A stage under evaluation: [a, e) with the P and R resource bytes counted in
 * it. */
typedef struct partd_pipeline_window {
    int32_t a, e;
    int64_t p, r;
} partd_pipeline_window;

/* Everything the contract says about one stage. */
typedef struct partd_pipeline_stage {
    int64_t ticks, recv, params, act, mem;
    double compute_ms, time_ms;
    double cost;               /* the objective's value for this stage */
    int mem_ok;
} partd_pipeline_stage;

/* Builds the model for req with the required cut positions cuts[0..n_cuts)
 * (ascending, each in 1..m-1). */
int partd_pipeline_model_build(partd_pipeline_model *md, const partd_request *req, const int32_t *cuts,
                   uint32_t n_cuts, partd_problem *problem);
void partd_pipeline_model_free(partd_pipeline_model *md);

/* pipeline_boundaries.c: plan->boundaries for the split cuts[0..md->stages] (operation
 * ranks, 0 = c0 < ... < cS = m); shared with the training planner.
 * PARTD_OK or PARTD_ENOMEM. */
struct partd_plan;
int partd_pipeline_boundaries_fill(const partd_pipeline_model *md, const int32_t *cuts, struct partd_plan *plan);


/* ---- the sliding window -------------------------------------------------- */

static inline void partd_pipeline_window_add(partd_pipeline_window *w, int64_t wc, int sign)
{
    if (wc & 1)
        w->p += sign * (wc >> 1);
    else
        w->r += sign * (wc >> 1);
}

/* [a, e) -> [a, e + 1): the new reader e counts the resources it reads that
 * no reader in [a, e) read and that were born before a. */
static inline void partd_pipeline_window_grow(const partd_pipeline_model *md, partd_pipeline_window *w)
{
    int32_t e = w->e;
    for (uint32_t k = md->r_off[e]; k < md->r_off[e + 1]; k++)
        if (md->r_q[k] < w->a)
            partd_pipeline_window_add(w, md->r_wc[k], 1);
    w->e = e + 1;
}

/* [a, e) -> [a + 1, e), a < e: resources whose first reader in the window was
 * a leave unless read again before e (their next occurrence has q == a), and
 * a's own output becomes received by its readers in the window. */
static inline void partd_pipeline_window_shrink(const partd_pipeline_model *md, partd_pipeline_window *w)
{
    int32_t a = w->a;
    for (uint32_t k = md->r_off[a]; k < md->r_off[a + 1]; k++)
        if (md->r_q[k] < a)
            partd_pipeline_window_add(w, md->r_wc[k], -1);
    for (uint32_t k = md->q_off[a]; k < md->q_off[a + 1]; k++)
        if (md->q_r[k] < w->e)
            partd_pipeline_window_add(w, md->q_wc[k], 1);
    w->a = a + 1;
}

/* Moves w to [a, e); forward moves of an overlapping window cost O(readers
 * passed over), anything else starts afresh. */
static inline void partd_pipeline_window_move(const partd_pipeline_model *md, partd_pipeline_window *w, int32_t a, int32_t e)
{
    if (a < w->a || e < w->e || a >= w->e) {
        /* Not a forward move of an overlapping window: start afresh. */
        w->a = w->e = a;
        w->p = w->r = 0;
    }
    while (w->e < e)
        partd_pipeline_window_grow(md, w);
    while (w->a < a)
        partd_pipeline_window_shrink(md, w);
}

/* ---- stage figures ------------------------------------------------------- */

static inline int64_t partd_pipeline_stage_memory(const partd_pipeline_model *md, uint32_t s, int64_t params, int64_t act,
                            int64_t recv)
{
    const __int128 cap = (__int128)INT64_MAX / 2;
    double pd = ceil(md->param_factor * (double)params);
    __int128 mem = pd >= 0x1p62 ? cap : (__int128)(int64_t)pd;
    mem += (__int128)md->k_act[s] * act + recv;
    return mem > cap ? (int64_t)cap : (int64_t)mem;
}

/* X[pos] / speed of stage s, rounded to nearest (halves up; the quotient is
 * never negative): stage times are differences of these. */
static inline int64_t partd_pipeline_ticks_at(const partd_pipeline_model *md, uint32_t s, int32_t pos)
{
    double v = md->speed[md->stage_speed[s]];
    return v == 1.0 ? md->ticks[pos] : (int64_t)((double)md->ticks[pos] / v + 0.5);
}

/* Evaluates stage s on the window w. */
static inline void partd_pipeline_stage_eval(const partd_pipeline_model *md, uint32_t s, const partd_pipeline_window *w, partd_pipeline_stage *out)
{
    out->ticks = partd_pipeline_ticks_at(md, s, w->e) - partd_pipeline_ticks_at(md, s, w->a);
    out->recv = w->r;
    out->params = w->p + md->own_param[w->e] - md->own_param[w->a];
    out->act = md->act[w->e] - md->act[w->a];
    out->mem = partd_pipeline_stage_memory(md, s, out->params, out->act, out->recv);
    out->compute_ms = (double)out->ticks * md->tick_ms;
    out->time_ms = out->compute_ms + md->ms_per_byte * (double)out->recv;
    out->mem_ok = out->mem <= md->mem_limit[s];
    switch (md->objective) {
    case PARTD_PIPELINE_OBJ_TIME:
        out->cost = out->time_ms;
        break;
    case PARTD_PIPELINE_OBJ_MEMORY:
        out->cost = (double)out->mem / (double)md->mem_limit[s];
        break;
    case PARTD_PIPELINE_OBJ_PARAMS:
        out->cost = (double)out->params;
        break;
    case PARTD_PIPELINE_OBJ_UNIFORM:
        out->cost = fabs((double)(w->e - w->a) - (double)md->target[s]);
        break;
    case PL_OBJ_SHORTFALL:
        out->cost = (double)out->mem - (double)md->mem_limit[s];
        break;
    }
}

/* Smallest end allowed for a stage s starting at a under bound B (the
 * uniform objective bounds counts from below), never below a + 1. */
static inline int32_t partd_pipeline_min_end(const partd_pipeline_model *md, uint32_t s, int32_t a, double bound)
{
    if (s + 1 == md->stages)
        return (int32_t)md->m;
    int32_t lo = a + 1;
    if (md->objective == PARTD_PIPELINE_OBJ_UNIFORM && bound < (double)md->m) {
        int32_t need = a + md->target[s] - (int32_t)bound;
        if (need > lo)
            lo = need;
    }
    return lo;
}

/* Largest end allowed for stage s starting at a: the next required cut,
 * leaving one operation for each later stage; the last stage ends at m. */
static inline int32_t partd_pipeline_max_end(const partd_pipeline_model *md, uint32_t s, int32_t a)
{
    int32_t hi = (int32_t)md->m - (int32_t)(md->stages - 1 - s);
    return md->next_cut[a] < hi ? md->next_cut[a] : hi;
}

#endif
