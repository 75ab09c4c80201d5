/*
 * kl_based.c - FX's kl_based mode (see kl_based.h): the entry and the swap
 * search. The list and FX's full recomputation are kl_state.c's, the
 * incremental state kl_fast.c's, the plan and the fallback where FX's
 * answer is broken kl_answer.c's (kl_internal.h). Errors as kl_based.h.
 *
 * FX (kl_based_partition in accelerator_partitioner.py, 1.13) starts from
 * size_based's partitions and, for every operation `node` in graph order
 * and every other partition p1, tries each node n1 of p1 and then no node
 * (None): it swaps node and n1 between p0 and p1 with Partition.add_node
 * and remove_node, relinks, costs the list (infinity when p0 or p1 lies on
 * a cycle or the list does not map onto devices afresh), swaps back with
 * the same calls in the other direction and maps the list afresh again.
 * Its quirks, kept here:
 *   - p0 is the partition size_based gave node (node_to_partition is never
 *     updated), so once node has moved, the "swap" adds it to p1 and the
 *     swap back adds it to p0: a try can change the list, and a node can
 *     end in two partitions. Partitions are therefore held as sets: each
 *     operation lists the partitions that hold it, and a placeholder or
 *     get_attr is in a partition while an operation there reads it (what
 *     add_node and remove_node keep true).
 *   - swap_node_to_partition answers the cost of its last try (the move)
 *     with the cheapest pair (first of equals), and the pair is taken when
 *     that move's cost is below the best so far; the best so far is that
 *     move's cost.
 *   - node_pair is never cleared: the last pair taken is swapped again
 *     after every later operation.
 *   - the devices after a taken swap are those the last try's swap back
 *     mapped (memory is not checked again); mapping only gives devices to
 *     partitions without one.
 * FX costs every try by walking every path of the partitions' DAG and
 * relinking every partition. Here, while nothing is in two partitions (and
 * the partitions are few enough for P x P tables), a try updates only what
 * its swap changes: the two partitions' memory, their links, and the
 * longest paths in them from the first swapped operation on; the cost is
 * then the longest path over the partitions' DAG (FX's figure to the bit,
 * as fx_eval.c; kl_fast.c). Otherwise a try is one pass over the graph. A try is made
 * only when it can matter: while nothing is in two partitions, a try of
 * (node, p1) has no effect on the list, and the pairs of p1 matter only
 * when the move's cost beats the best so far, so the move is costed first
 * and the pairs only then.
 */
#include "kl_based.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "kl_internal.h"
#include "partd/partd.h"
#include "size_based.h"

/* try_swap's costing by the full recomputation */
static int cost_full(partd__kl *k, uint32_t p0, uint32_t p1, double *cost)
{
    int rc = partd__kl_state_memory(k);
    if (rc == PARTD_OK)
        rc = partd__kl_state_edges(k);
    if (rc != PARTD_OK)
        return rc;
    *cost = INFINITY;
    if (!partd__kl_state_on_cycle(k, p0) && !partd__kl_state_on_cycle(k, p1)) {
        for (uint32_t p = 0; p < k->P; p++)
            k->fdev[p] = PARTD_NONE;
        if (partd__kl_state_map(k, k->fdev))
            *cost = partd__kl_state_latency(k, k->fdev, NULL);
    }
    return PARTD_OK;
}

/* FX's try_swap_nodes: the cost of the list with the swap made, and the
 * swap undone by the reverse calls; the list is then mapped afresh. */
static int try_swap(partd__kl *k, uint32_t n0, uint32_t n1, uint32_t p0, uint32_t p1, double *cost)
{
    int ready = 0, rc = partd__kl_state_swap(k, n0, n1, p0, p1);
    if (rc == PARTD_OK)
        rc = partd__kl_fast_sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (!ready) {
        if ((rc = cost_full(k, p0, p1, cost)) != PARTD_OK)
            return rc;
    } else {
        *cost = partd__kl_fast_cost(k, p0, p1);
        if (k->check) {
            double full;
            memcpy(k->fdev2, k->fdev, k->P * sizeof *k->fdev);
            if ((rc = cost_full(k, p0, p1, &full)) != PARTD_OK)
                return rc;
            if (memcmp(&full, cost, sizeof full) != 0 ||
                memcmp(k->used, k->f.used, k->P * sizeof *k->used) != 0 ||
                memcmp(k->fdev2, k->fdev, k->P * sizeof *k->fdev) != 0)
                k->mismatch = 1;
        }
    }
    k->dev_stale = 1;
    return partd__kl_state_swap(k, n1, n0, p0, p1);
}

/* partd__kl_state_map(dev) on the list as it is now */
static int map_list(partd__kl *k, uint32_t *dev)
{
    int ready, rc = partd__kl_fast_sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (!ready) {
        if ((rc = partd__kl_state_memory(k)) == PARTD_OK)
            partd__kl_state_map(k, dev);
        return rc;
    }
    if (k->check) {
        memcpy(k->fdev2, dev, k->P * sizeof *dev);
        if ((rc = partd__kl_state_memory(k)) != PARTD_OK)
            return rc;
        partd__kl_state_map(k, k->fdev2);
    }
    partd__kl_fast_map(k, dev);
    if (k->check && (memcmp(k->fdev2, dev, k->P * sizeof *dev) != 0 ||
                     memcmp(k->used, k->f.used, k->P * sizeof *k->used) != 0))
        k->mismatch = 1;
    return PARTD_OK;
}

/* dev as FX holds it: the fresh mapping of the list after the last try. */
static int settle_devices(partd__kl *k)
{
    if (!k->dev_stale)
        return PARTD_OK;
    for (uint32_t p = 0; p < k->P; p++)
        k->dev[p] = PARTD_NONE;
    int rc = map_list(k, k->dev);
    if (rc == PARTD_OK)
        k->dev_stale = 0;
    return rc;
}

/* p1's operations in graph order (list(p1.nodes) without its placeholders
 * and get_attrs, which FX skips) into list, *n of them. */
static int snapshot(partd__kl *k, uint32_t p1, uint32_t *n)
{
    int ready, rc = partd__kl_fast_sync(k, &ready);
    if (rc != PARTD_OK)
        return rc;
    if (ready) {
        *n = k->f.pn[p1];
        memcpy(k->list, k->f.pl[p1], *n * sizeof *k->list);
        return PARTD_OK;
    }
    uint32_t c = 0;
    for (uint32_t v = 0; v < k->n; v++)
        if (partd__kl_slot_of(k, v, p1) >= 0)
            k->list[c++] = v;
    *n = c;
    return PARTD_OK;
}

static int has_shared(const partd__kl *k, uint32_t p0, uint32_t p1)
{
    if (!k->n_dups)
        return 0;
    for (uint32_t v = 0; v < k->n; v++)
        if (k->mn[v] > 1 && partd__kl_slot_of(k, v, p0) >= 0 && partd__kl_slot_of(k, v, p1) >= 0)
            return 1;
    return 0;
}

typedef struct pick {
    uint32_t n0, n1, p0, p1;
    int have;
} pick;

/* swap_node_to_partition(node, p0, p1) and what kl_based_partition does
 * with its answer. *raised when a try's costing never ends in FX. */
static int visit(partd__kl *k, uint32_t node, uint32_t p0, uint32_t p1, double *cost,
                 pick *pk, int *raised)
{
    double c = INFINITY, min = INFINITY;
    uint32_t best = PARTD_NONE;
    int rc, clean = k->mn[node] == 1 && k->m[node][0].p == p0 && !has_shared(k, p0, p1);
    if (clean) {
        /* every try leaves the list as it was: the pairs matter only when
         * the move (FX's answer for p1) beats the best so far */
        if ((rc = try_swap(k, node, PARTD_NONE, p0, p1, &c)) != PARTD_OK)
            return rc;
        if (c == PARTD__KL_RAISED) {
            *raised = 1;
            return PARTD_OK;
        }
        if (!(c < *cost))
            return PARTD_OK;
        double move = c;
        uint32_t n;
        if ((rc = snapshot(k, p1, &n)) != PARTD_OK)
            return rc;
        for (uint32_t i = 0; i < n; i++) {
            if ((rc = try_swap(k, node, k->list[i], p0, p1, &c)) != PARTD_OK)
                return rc;
            if (c == PARTD__KL_RAISED) {
                *raised = 1;
                return PARTD_OK;
            }
            if (c < min) {
                min = c;
                best = k->list[i];
            }
        }
        if (move < min)
            best = PARTD_NONE;
        *cost = move;
    } else {
        uint32_t n;
        if ((rc = snapshot(k, p1, &n)) != PARTD_OK)
            return rc;
        int found = 0;
        for (uint32_t i = 0; i <= n; i++) {
            uint32_t n1 = i < n ? k->list[i] : PARTD_NONE;
            if ((rc = try_swap(k, node, n1, p0, p1, &c)) != PARTD_OK)
                return rc;
            if (c == PARTD__KL_RAISED) {
                *raised = 1;
                return PARTD_OK;
            }
            if (c < min) {
                min = c;
                best = n1;
                found = 1;
            }
        }
        if (!(c < *cost) || !found)
            return PARTD_OK;
        *cost = c;
    }
    *pk = (pick){node, best, p0, p1, 1};
    return PARTD_OK;
}

static int run(partd__kl *k, const partd_plan *sb, const partd_cancel *cancel,
               partd_plan **out, partd_problem *pb)
{
    const partd_graph *g = k->g;
    int rc = PARTD_OK;
    uint32_t *home = malloc(((size_t)k->n + 1) * sizeof *home);
    if (!home)
        return PARTD_ENOMEM;
    for (uint32_t v = 0; v < k->n; v++)
        home[v] = PARTD_NONE;
    if ((rc = partd__kl_fast_init(k)) != PARTD_OK)
        goto out;
    k->track = k->f.on;
    for (uint32_t p = 0; p < k->P && rc == PARTD_OK; p++) {
        if (!sb->parts[p].n_devices) {
            rc = PARTD_EINTERNAL; /* size_based maps every partition */
            break;
        }
        k->dev[p] = sb->parts[p].devices[0];
        for (uint32_t i = 0; i < sb->parts[p].n_nodes && rc == PARTD_OK; i++) {
            home[sb->parts[p].nodes[i]] = p;
            rc = partd__kl_state_add(k, p, sb->parts[p].nodes[i]);
        }
    }
    if (rc == PARTD_OK)
        rc = partd__kl_state_memory(k);
    if (rc == PARTD_OK)
        rc = partd__kl_state_edges(k);
    if (rc != PARTD_OK)
        goto out;
    double cost = partd__kl_state_latency(k, k->dev, sb), sb_sec = cost;
    if (cost == PARTD__KL_RAISED) {
        rc = PARTD_EINTERNAL; /* size_based's partitions follow node order */
        goto out;
    }
    if (k->P == 1) {
        /* nothing to swap with: size_based's partition and devices */
        int ok = partd__kl_answer_sb_valid(k, sb);
        rc = ok < 0 ? PARTD_ENOMEM
             : ok   ? partd__kl_answer_plan(k, k->dev, sb, cost, out)
                    : partd__kl_answer_instead(k, sb, sb_sec, out, pb);
        goto out;
    }
    pick pk = {0};
    int raised = 0;
    for (uint32_t node = 0; node < k->n && !raised; node++) {
        if (!partd_op_is_operation(g->op[node]))
            continue;
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            goto out;
        uint32_t p0 = home[node];
        for (uint32_t p1 = 0; p1 < k->P && !raised; p1++)
            if (p1 != p0 && (rc = visit(k, node, p0, p1, &cost, &pk, &raised)) != PARTD_OK)
                goto out;
        if (raised || !pk.have)
            continue;
        /* the pair is swapped with the devices the last try left */
        if ((rc = settle_devices(k)) != PARTD_OK ||
            (rc = partd__kl_state_swap(k, pk.n0, pk.n1, pk.p0, pk.p1)) != PARTD_OK ||
            (rc = map_list(k, k->dev)) != PARTD_OK)
            goto out;
    }
    if (!raised) {
        if ((rc = settle_devices(k)) != PARTD_OK || (rc = partd__kl_state_memory(k)) != PARTD_OK)
            goto out;
        partd__kl_state_map(k, k->dev);
        if ((rc = partd__kl_state_edges(k)) != PARTD_OK)
            goto out;
        if (partd__kl_answer_valid(k, k->dev, NULL)) {
            double sec = partd__kl_state_latency(k, k->dev, NULL);
            if (sec == PARTD__KL_RAISED)
                rc = PARTD_EINTERNAL; /* valid: no cycle */
            else
                rc = partd__kl_answer_plan(k, k->dev, NULL, sec, out);
            goto out;
        }
    }
    rc = partd__kl_answer_instead(k, sb, sb_sec, out, pb);
out:
    free(home);
    return rc;
}
static int kl_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem, int check)
{
    int rc = partd__fx_whole(req, PARTD_MODE_KL_BASED, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    partd_plan *sb = NULL;
    if ((rc = partd_size_based(req, cancel, &sb, problem)) != PARTD_OK)
        return rc;
    partd__kl k;
    rc = partd__kl_state_init(&k, req, sb->n_parts, check);
    if (rc == PARTD_OK)
        rc = run(&k, sb, cancel, out, problem);
    if (rc == PARTD_OK && k.mismatch)
        rc = PARTD_EINTERNAL;
    partd__kl_fast_free(&k.f);
    partd__kl_state_free(&k);
    partd_plan_free(sb);
    if (rc != PARTD_OK && *out) {
        partd_plan_free(*out);
        *out = NULL;
    }
    return rc;
}

int partd_kl_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    return kl_based(req, cancel, out, problem, 0);
}

int partd_kl_based_checked(const partd_request *req, const partd_cancel *cancel,
                           partd_plan **out, partd_problem *problem)
{
    return kl_based(req, cancel, out, problem, 1);
}
