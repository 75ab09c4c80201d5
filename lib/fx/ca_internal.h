/*
 * ca_internal.h - the state of FX's cost_aware pass, shared by its units in
 * lib/fx (not a public interface; the mode's entry is cost_aware.h):
 *   ca_list.c    the list of partitions (FX's self.partitions): single-node
 *                partitions, their bytes and latency, bfs levels, a merge,
 *                and the full recomputation of a list's cost (FX's mapping
 *                and get_latency_of_partitioned_graph on the whole list);
 *   ca_round.c   what a round builds once for its tries: the partitions'
 *                DAG by position, a topological order, FX's device mapping
 *                with the devices' state before every position, the cost
 *                at each position under it and latency-only bounds;
 *   ca_try.c     one pair's union (edges, bytes, credit), whether it closes
 *                a cycle, and the list's mapping with the pair merged,
 *                taken from the round's state and, where the round's
 *                mapping is whole, walked against it (the round's step
 *                kept wherever a shift in memory left cannot change it);
 *   ca_cost.c    one pair's cost: in full over the topological order, or
 *                incrementally from the round's costs with an early stop;
 *   cost_aware.c the entry, the merge rounds and the fallback where FX
 *                returns partitions without devices.
 *
 * Errors: functions returning int give PARTD_OK, PARTD_ENOMEM or
 * PARTD_EINTERNAL (a state FX's rules never reach); a try that cannot map
 * gives PARTD_NONE as the union's device; costs are seconds, HUGE_VAL for
 * a try stopped because it cannot beat its bound.
 */
#ifndef PARTD_CA_INTERNAL_H
#define PARTD_CA_INTERNAL_H

#include <stdint.h>

#include "partd/model.h"

typedef struct partd__ca_rec {
    uint32_t *ops;         /* in node order */
    uint32_t n;
    int64_t used;
    double lat;            /* critical path of node latencies (seconds) */
} partd__ca_rec;

/* A try's mapping walked against the round's: memory left is the round's
 * before position `at` plus dl, partitions held the round's plus dn; the
 * order is exact as it stood before position ex (ex <= at). */
typedef struct partd__ca_walk {
    int64_t *dl;
    int32_t *dn;
    uint32_t *ox;
    uint32_t at, ex;
    uint32_t *sd, n_sd;    /* the devices whose dl is not 0 */
    uint32_t tok;          /* marks its removed and moved partitions' children,
                            * and the positions whose device it set (tst) */
    uint64_t *mk;          /* a min-heap of the marked positions ahead of it */
    uint32_t n_mk;
} partd__ca_walk;

/* One round's partitions' DAG, by position in the list, the mapping of the
 * list taken fresh (the state before each position: a try keeps the
 * mapping of the partitions before the first one it removes), and the
 * scratch of a try. Sized once for the largest list. */
typedef struct partd__ca_round {
    uint32_t P, D;
    uint32_t *par_off, *par; /* parents of each position (CSR) */
    int64_t *comm, *cred;    /* per parent edge: FX's comm_size; the mapping's credit */
    uint32_t *ch_off, *ch;   /* children of each position (CSR) */
    uint32_t *topo, *tpos;
    double *lat;
    uint32_t *lvl;
    int64_t *s_left;         /* P x D snapshots */
    uint32_t *s_non, *s_ord;
    uint32_t *bdev;          /* fresh mapping; positions from fail_at on have none */
    uint32_t fail_at;
    int64_t *bextra;         /* what each position took from its device */
    /* Where a walk's step is the round's own (ca_round.c): at position k,
     * when each device's dl lies in [lo, hi] of k and k is not a position
     * where some device ties the round's choice in memory left (any_next:
     * the next such position from k on). Per device, a segment tree of -lo
     * and one of hi (the least of each span; leaves from rng_leaves) let a
     * walk jump to the next position its shift leaves. */
    int64_t *rng_lo, *rng_hi;
    uint32_t rng_leaves, *any_next;
    int64_t *lack;           /* P x D: the bytes each device lacked for each
                              * position's step (negative: room to spare) */
    uint32_t *rank0;         /* per device: its place in the first order */
    partd__ca_walk wr, wt;   /* the first of the pairs removed; both */
    uint32_t *evr, *evt, e_tok; /* positions a removed or moved parent reaches */
    /* a try */
    int64_t *left, *credit;
    uint32_t *non, *ord, *tdev;
    uint32_t *tst, cur_j;    /* tdev[q] holds when tst[q] is the token of the walk
                              * covering q (wr before cur_j, wt after); else the
                              * try keeps the round's bdev[q] */
    int64_t *r_left;         /* the mapping with the first of the pairs removed */
    uint32_t *r_non, *r_ord, r_at, r_nchg;
    int r_ok;
    double *best;
    uint32_t *nb, nb_tok;    /* positions next to the first of a pair */
    uint32_t *lv_off, *lv_pos; /* positions by bfs level (CSR), in order */
    uint32_t *cand, n_cand;  /* the second positions FX tries with one first */
    uint32_t *cand_nb;       /* its parents and children among them (scratch) */
    uint32_t *pst, p_tok;    /* per-position stamps */
    uint32_t *in_st, *out_st, u_tok;
    int64_t *in_comm, *in_cred, *out_comm;
    uint32_t *in_list, *out_list, n_in, n_out;
    uint32_t *defer, *queue, *desc, d_tok;
    uint32_t *chg, n_chg;    /* positions the try's mapping moved */
    double *bbest;           /* cost at each position under the fresh mapping */
    double *f0, *tail0;      /* longest path to each position, and on from its
                              * children, with no transfer time: bounds */
    uint32_t *by_best;       /* positions by bbest, largest first */
    uint64_t *heap;
    uint32_t n_heap, *hst, *vst, h_tok;
    uint32_t *in_u, *nseen, n_tok; /* per node */
    uint32_t *cu, n_cu;      /* constants the union reads */
    double *dist;            /* per node */
} partd__ca_round;

typedef struct partd__ca_state {
    const partd_request *req;
    const partd_graph *g;
    partd__ca_rec *recs;
    uint32_t n_recs;
    uint32_t *part_of;     /* op -> rec */
    uint32_t *order;       /* FX's self.partitions: rec ids */
    uint32_t n_order;
    uint32_t *level;       /* per rec */
    uint32_t *dev;         /* per rec: device of the last mapping, or PARTD_NONE */
    uint32_t *stamp;       /* per node (unions) */
    uint32_t token;
    /* a candidate list */
    uint32_t *pos;         /* rec -> index in the candidate */
    uint32_t *c_part_of;
    int64_t *c_used;
    uint32_t *c_dev, *c_dev_off, *c_dev_idx;
    partd__ca_round rd;
} partd__ca_state;

/* Whether a path costing `head` up to a partition, then `tail` in
 * latencies alone, costs more than `bound` for certain: the margin covers
 * the rounding of sums taken in another order than FX's (1e-9 relative is
 * far above a million roundings). */
static inline int partd__ca_exceeds(double head, double tail, double bound)
{
    return (head + tail) * (1.0 - 1e-9) > bound;
}

/* A binary min-heap of n keys: the two tries' queues (positions in a
 * walk's order, positions in topological order). */
static inline void partd__ca_heap_push(uint64_t *heap, uint32_t *n, uint64_t key)
{
    uint32_t at = (*n)++;
    while (at > 0 && heap[(at - 1) / 2] > key) {
        heap[at] = heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    heap[at] = key;
}

static inline uint64_t partd__ca_heap_pop(uint64_t *heap, uint32_t *n)
{
    uint64_t top = heap[0], last = heap[--*n];
    uint32_t at = 0;
    if (!*n)
        return top;
    for (;;) {
        uint32_t c = 2 * at + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && heap[c + 1] < heap[c])
            c++;
        if (heap[c] >= last)
            break;
        heap[at] = heap[c];
        at = c;
    }
    heap[at] = last;
    return top;
}

/* The device of position q in the try of positions i < cur_j: the round's
 * fresh mapping before i and wherever the try's walks took the round's
 * step without replaying it, the walks' own devices elsewhere. */
static inline uint32_t partd__ca_dev(const partd__ca_round *d, uint32_t i, uint32_t q)
{
    if (q < i)
        return d->bdev[q];
    uint32_t tok = q < d->cur_j ? d->wr.tok : d->wt.tok;
    return d->tst[q] == tok ? d->tdev[q] : d->bdev[q];
}

/* ca_list.c. init: one partition per operation in node order, with their
 * levels, and the round's scratch sized for the largest list; free
 * releases whatever init reached (call it whatever init returned). */
int partd__ca_list_init(partd__ca_state *st, const partd_request *req);
void partd__ca_list_free(partd__ca_state *st);
/* FX's used_mem_bytes of the union of a and b (b may hold no ops). */
int64_t partd__ca_list_bytes(partd__ca_state *st, const partd__ca_rec *a, const partd__ca_rec *b);
/* The critical path of node latencies over the ops of a and b (b may be
 * NULL), as partd__fx_latency takes it. */
double partd__ca_list_lat(partd__ca_state *st, const partd__ca_rec *a, const partd__ca_rec *b);
int partd__ca_list_levels(partd__ca_state *st);
/* The cost of the list with recs a and b merged (a == b == PARTD_NONE: the
 * list as it is); *ok 0 when the merge closes a cycle or the list does not
 * map. remap: FX's mapping afresh, kept in st->c_dev; else st->dev. */
int partd__ca_list_evaluate(partd__ca_state *st, uint32_t a, uint32_t b, int64_t merged_used,
                            int remap, double *cost, int *ok);
/* Recs a and b replaced by their union (used bytes) at the list's end. */
int partd__ca_list_merge(partd__ca_state *st, uint32_t a, uint32_t b, int64_t used);

/* ca_round.c. build: from the list as partd__ca_list_evaluate left the
 * candidate arrays for the list itself. */
int partd__ca_round_alloc(partd__ca_state *st);
void partd__ca_round_free(partd__ca_round *d);
int partd__ca_round_build(partd__ca_state *st);
/* partd__fx_map's step: the first device in ord with room (PARTD_NONE
 * when none; *extra what it takes), and the order after it takes that. */
uint32_t partd__ca_round_choose(uint32_t D, const int64_t *left, const uint32_t *non,
                                const uint32_t *ord, const int64_t *credit, int64_t used,
                                int64_t *extra);
void partd__ca_round_take(uint32_t D, int64_t *left, uint32_t *ord, uint32_t c, int64_t extra);

/* ca_try.c: the tries of positions i < j, after partd__ca_round_build.
 * start once per i; then per j: scan, map (the union's device). */
void partd__ca_try_scan(partd__ca_state *st, uint32_t i, uint32_t j);
int partd__ca_try_closes_cycle(partd__ca_round *d, uint32_t i, uint32_t j);
void partd__ca_try_start(partd__ca_state *st, uint32_t i);
uint32_t partd__ca_try_map(partd__ca_state *st, uint32_t i, uint32_t j, int64_t used);

/* ca_cost.c: the cost of the try partd__ca_try_map just mapped (dev_u the
 * union's device, lat_u its latency). lazy needs the round's fresh mapping
 * whole (fail_at == P); it returns HUGE_VAL as soon as the cost must
 * exceed bound (tail_u: the union's latencies-alone tail; adjacent: one of
 * the pair is the other's parent). */
double partd__ca_cost_full(partd__ca_state *st, uint32_t i, uint32_t j, uint32_t dev_u,
                           double lat_u);
double partd__ca_cost_lazy(partd__ca_state *st, uint32_t i, uint32_t j, uint32_t dev_u,
                           double lat_u, double tail_u, double bound, int adjacent);

#endif
