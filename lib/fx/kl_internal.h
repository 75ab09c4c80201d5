/*
 * kl_internal.h - the state of FX's kl_based pass, shared by its units in
 * lib/fx (not a public interface; the mode's entry is kl_based.h):
 *   kl_state.c  the list of partitions as FX's Partition sets hold it and
 *               FX's full recomputation of a try over it (memory, links,
 *               cycles, device mapping, cost);
 *   kl_fast.c   the incremental state that gives a try's figures from the
 *               two partitions its swap touches, to the bit the same;
 *   kl_answer.c the plan of the list, FX's rules on it, and the fallback
 *               where FX's answer breaks them;
 *   kl_based.c  the entry and the swap search that drives the others.
 *
 * Errors: PARTD_OK, PARTD_ENOMEM; costs are seconds, INFINITY for a try FX
 * prices so, PARTD__KL_RAISED for one FX never finishes costing. Only
 * partd__kl_answer_instead fills a problem (PARTD_EINFEASIBLE).
 */
#ifndef PARTD_KL_INTERNAL_H
#define PARTD_KL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

#define PARTD__KL_RAISED (-1.0) /* a try whose costing FX never finishes (a cycle it walks) */

typedef struct partd__kl_ent {
    uint32_t p; /* a partition holding the node */
    double d;   /* the longest path in p ending at the node (seconds) */
} partd__kl_ent;

typedef struct partd__kl_fast {
    int on;
    uint32_t P;
    uint32_t *part;        /* op -> partition as last carried over, PARTD_NONE */
    double *sec, *d;       /* node latency; longest path in its partition ending at it */
    double *lat;           /* per partition: its critical path */
    int64_t *used;         /* per partition: FX's used_mem_bytes */
    uint32_t **pl, *pn, *pcap; /* each partition's operations, ascending */
    uint32_t *from;        /* per partition: lowest operation whose path may be stale */
    uint32_t *cid;         /* placeholder or get_attr -> its row of cc */
    uint32_t *cc;          /* its reading edges per partition */
    uint32_t *ec;          /* P x P [producer][consumer]: operation edges */
    int64_t *w;            /* P x P [consumer][producer]: their output bytes, per edge */
    int64_t *c;            /* P x P [producer][consumer]: FX's comm bytes of the link */
    uint32_t *pending, n_pending; /* operations noted since the last sync */
    uint8_t *is_pending;
} partd__kl_fast;

typedef struct partd__kl {
    const partd_request *req;
    const partd_graph *g;
    uint32_t n, P, D;
    partd__kl_ent **m;           /* op -> partitions holding it */
    uint32_t *mn, *mcap;
    uint32_t n_dups;   /* operations in more than one partition */
    uint32_t *dev;     /* FX's logical_device_ids, one device or PARTD_NONE */
    int dev_stale;     /* dev must become the fresh mapping of the list */
    uint64_t tok;
    uint64_t *nstamp;  /* per node */
    uint64_t *pstamp, *astamp; /* per partition */
    uint64_t *dstamp;  /* per device */
    int64_t *used;
    /* operations of each partition, graph order */
    uint32_t *po_off, *po;
    size_t po_cap;
    /* partitions' DAG: parents of each child (CSR), bytes per edge */
    uint32_t *e_off, *e_src;
    int64_t *e_bytes;
    size_t e_cap;
    uint32_t *ch_off, *ch;
    int64_t *acc;
    uint8_t *flag;
    uint32_t *touched;
    /* mapping */
    int64_t *left, *credit;
    uint32_t *order, *fdev, *fdev2;
    /* longest path */
    double *lat, *best;
    uint32_t *indeg, *queue;
    uint8_t *reach;
    uint32_t *list;    /* snapshot of p1's operations */
    int track;         /* partd__kl_state_add and _remove note what they change */
    int check;         /* every incremental figure against the full recomputation */
    int mismatch;
    partd__kl_fast f;
} partd__kl;

/* The slot of partition p among those holding node v, or -1. */
static inline int partd__kl_slot_of(const partd__kl *k, uint32_t v, uint32_t p)
{
    for (uint32_t i = 0; i < k->mn[v]; i++)
        if (k->m[v][i].p == p)
            return (int)i;
    return -1;
}

/* Partitions a and b transfer nothing: the same device, and one. */
static inline int partd__kl_same_device(const uint32_t *dev, uint32_t a, uint32_t b)
{
    return dev[a] != PARTD_NONE && dev[a] == dev[b];
}

/* kl_state.c. init: every buffer for a list of n_parts partitions over
 * req's graph, the list empty (k is zeroed first, so _free is safe after a
 * failed init); free: them, not the incremental state. */
int partd__kl_state_init(partd__kl *k, const partd_request *req, uint32_t n_parts, int check);
void partd__kl_state_free(partd__kl *k);
/* Partition.add_node and remove_node on the list; swap: FX's swap_nodes(n0,
 * n1, p0, p1), either node PARTD_NONE. */
int partd__kl_state_add(partd__kl *k, uint32_t p, uint32_t v);
void partd__kl_state_remove(partd__kl *k, uint32_t p, uint32_t v);
int partd__kl_state_swap(partd__kl *k, uint32_t n0, uint32_t n1, uint32_t p0, uint32_t p1);
/* The full recomputation: memory (used[], the operations of each
 * partition), then edges (the partitions' DAG); on_cycle, map (1 when
 * every partition found a device) and latency (PARTD__KL_RAISED on a cycle
 * FX walks) read what those two left. */
int partd__kl_state_memory(partd__kl *k);
int partd__kl_state_edges(partd__kl *k);
int partd__kl_state_on_cycle(partd__kl *k, uint32_t p);
int partd__kl_state_map(partd__kl *k, uint32_t *dev);
double partd__kl_state_latency(partd__kl *k, const uint32_t *dev, const partd_plan *sb);

/* kl_fast.c. init: the incremental state when the list suits it (f.on),
 * else left off; sync: the state brought up to the list, *ready 0 while an
 * operation is in two partitions or the state is off; cost: a try's cost
 * (fdev its fresh mapping); map: partd__kl_state_map over the state. */
int partd__kl_fast_init(partd__kl *k);
void partd__kl_fast_free(partd__kl_fast *f);
int partd__kl_fast_sync(partd__kl *k, int *ready);
double partd__kl_fast_cost(partd__kl *k, uint32_t p0, uint32_t p1);
int partd__kl_fast_map(partd__kl *k, uint32_t *dev);

/* kl_answer.c. plan: the plan of the list (nothing in two partitions)
 * with devices dev, or sb's; valid: the list obeys FX's rules (after
 * memory and edges); sb_valid: size_based's plan does (1, 0, -1 on
 * ENOMEM); instead: the answer where FX's is broken. */
int partd__kl_answer_plan(partd__kl *k, const uint32_t *dev, const partd_plan *sb, double sec,
                          partd_plan **out);
int partd__kl_answer_valid(partd__kl *k, const uint32_t *dev, const partd_plan *sb);
int partd__kl_answer_sb_valid(partd__kl *k, const partd_plan *sb);
int partd__kl_answer_instead(partd__kl *k, const partd_plan *sb, double sb_sec,
                             partd_plan **out, partd_problem *pb);

#endif
