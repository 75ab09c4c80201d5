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
 * [a, e) slides forward in amortised O(1) per reader (pl_window_move) with
 * no per-resource state: this is what makes the planner linear.
 *
 * Times are fixed point: a node's time on a device of speed v is
 * llround(t / v * 2^K) ticks, K chosen from the graph so that every sum fits
 * an int64. Sums of ticks are exact, so splits that spread the same work over
 * equally fast devices tie exactly, as the contract's tie breaks need.
 *
 * Ownership: pl_model owns all its arrays (pl_model_free). Errors:
 * PARTD_ENOMEM, PARTD_EINVALID (latencies too large for a device's speed,
 * problem filled).
 */
#ifndef PARTD_PIPELINE_MODEL_H
#define PARTD_PIPELINE_MODEL_H

#include <stdint.h>

#include "model.h"
#include "problem.h"

/* The objective a search minimises the largest value of. SHORTFALL is the
 * infeasible case's: memory minus device memory, with no memory limit. */
typedef enum pl_objective {
    PL_OBJ_TIME = 0,
    PL_OBJ_MEMORY,
    PL_OBJ_PARAMS,
    PL_OBJ_UNIFORM,
    PL_OBJ_SHORTFALL
} pl_objective;

typedef struct pl_model {
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
    int64_t **ticks;           /* per speed: prefix of node ticks */
    uint32_t *stage_speed;     /* stage -> index into speed/ticks */
    int tick_exp;              /* K: one tick is 2^-K ms */
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
    pl_objective objective;
} pl_model;

/* A stage under evaluation: [a, e) with the P and R resource bytes counted in
 * it. */
typedef struct pl_window {
    int32_t a, e;
    int64_t p, r;
} pl_window;

/* Everything the contract says about one stage. */
typedef struct pl_stage {
    int64_t ticks, recv, params, act, mem;
    double compute_ms, time_ms;
    double cost;               /* the objective's value for this stage */
    int mem_ok;
} pl_stage;

/* Builds the model for req with the required cut positions cuts[0..n_cuts)
 * (ascending, each in 1..m-1). */
int pl_model_build(pl_model *md, const partd_request *req, const int32_t *cuts,
                   uint32_t n_cuts, partd_problem *problem);
void pl_model_free(pl_model *md);

/* Moves w forward to [a, e) (a >= w->a, e >= w->e, a <= e). */
void pl_window_move(const pl_model *md, pl_window *w, int32_t a, int32_t e);

/* Evaluates stage s on the window w. */
void pl_stage_eval(const pl_model *md, uint32_t s, const pl_window *w, pl_stage *out);

/* Smallest end e allowed for a stage s starting at a under bound B (the
 * uniform objective bounds counts from below), never below a + 1. */
int32_t pl_min_end(const pl_model *md, uint32_t s, int32_t a, double bound);

/* Largest end allowed for stage s starting at a: the next required cut,
 * leaving one operation for each later stage; the last stage ends at m. */
int32_t pl_max_end(const pl_model *md, uint32_t s, int32_t a);

#endif
