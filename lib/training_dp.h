/*
 * training_dp.h - the DP of the training search at one bound (internal to
 * training_search*.c and training_dp.c): the least sum of stage times (or,
 * in max_mode, the least largest value) over plans whose every stage takes
 * at most `bound`, with the plan's choices recorded.
 *
 * A pass computes the stage values one row (first unit) at a time through
 * tr_rows (training_model.h) and forgets the row once used, so a DP holds
 * O(units x states) numbers: states are count vectors per device class
 * (device_order auto), or stage positions and the 1f1b tails' class
 * sequences (device_order given; every stage count's tails in one pass, or
 * in batches when they would pass the state limit). While it runs, a pass also finds the
 * least stage value above `succ_of` (any row, any class and k): the next
 * candidate bound, without a table of them.
 *
 * Ownership: tr_dp owns its arrays and rows (tr_dp_free). Errors (tr_dp_init
 * and d->rc after tr_dp_solve): PARTD_ENOMEM, PARTD_ETOOBIG (too many
 * states; or a stage's checkpoint frontier, frontier_limit set), the cancel
 * flag's codes; tr_dp_extract: PARTD_ENOMEM, PARTD_EINTERNAL.
 */
#ifndef PARTD_TRAINING_DP_H
#define PARTD_TRAINING_DP_H

#include "cancel.h"
#include "training_model.h"
#include "training_search.h"

typedef struct tr_dp {
    const tr_model *md;
    int max_mode;              /* combine with max (shortfall, least bottleneck) */
    double bound;
    double succ_of, succ;      /* succ: least stage value > succ_of seen */
    int want_succ;
    double fastest_m;          /* the fastest class's speed x M */
    uint32_t Q;                /* count vectors (auto) */
    uint32_t *radix, *cap;     /* per class (auto) */
    uint32_t *qsum;            /* stages in a count vector */
    /* Per class j: the states using it, by stage count ascending (s, s
     * without one stage of j, kidx), and list_end[j * (n + 1) + r]: how many
     * have at most r stages. */
    uint32_t *list_s, *list_prev, *list_end;
    uint16_t *list_k;
    /* auto: f (n + 1) x Q with picks pick_b, pick_j; given: the front
     * G[p][a] (P + 1) x (n + 1) in f with its picks in pick_b. */
    double *f;
    uint32_t *pick_b, *pick_j;
    /* device_order given: the 1f1b tails. Node 0 is the empty tail; node i
     * adds the stage q = depth[i] from the end on class cls[i] before
     * parent[i]; tails of stage counts with the same classes share nodes.
     * h[i][a]: the best tail of node i covering units [a, n). */
    uint32_t P, n_nodes, tail_cap; /* tail nodes: held, room for */
    uint32_t *node_parent, *node_cls, *node_depth, *tail_node; /* tail_node per S */
    double *h;
    uint32_t *h_pick;
    tr_rows *rows;
    int64_t counted;           /* bytes counted in md->stats */
    const partd_cancel *cancel;
    int rc;
    int frontier_limit;        /* rc PARTD_ETOOBIG came from a stage's frontier */
} tr_dp;

/* The best final value (sum, or max), with its final state (auto: the
 * count vector; given: the unit where the tail starts) and stage count;
 * INFINITY when no plan. */
typedef struct tr_final {
    double value;
    uint32_t state, S;
} tr_final;

int tr_dp_init(tr_dp *d, const tr_model *md, const partd_cancel *cancel);
void tr_dp_free(tr_dp *d);
tr_final tr_dp_solve(tr_dp *d);
/* The recorded plan of f (from the last tr_dp_solve) into sol. */
int tr_dp_extract(const tr_dp *d, tr_final f, tr_solution *sol);

#endif
