/*
 * ca_list.c - the list FX's cost_aware pass merges (ca_internal.h): one
 * partition per operation, FX's used_mem_bytes of a union, the critical
 * path of its nodes, bfs levels (get_bfs_level_partition), a merge, and
 * the cost of a whole list recomputed as FX does (its device mapping and
 * get_latency_of_partitioned_graph). Errors: PARTD_OK, PARTD_ENOMEM,
 * PARTD_EINTERNAL (the list's partitions closing a cycle, which merges
 * never do).
 */
#include <stdlib.h>

#include "ca_internal.h"
#include "fx_internal.h"
#include "partd/partd.h"

int64_t partd__ca_list_bytes(partd__ca_state *st, const partd__ca_rec *a,
                             const partd__ca_rec *b)
{
    return partd__fx_union_bytes(st->g, a->ops, a->n, b->ops, b->n, st->stamp, &st->token);
}

/* Levels (get_bfs_level_partition) of the list. */
int partd__ca_list_levels(partd__ca_state *st)
{
    return partd__fx_levels(st->g, st->part_of, st->n_recs, st->order, st->n_order, st->level);
}

/* The cost of the list with recs a and b merged (a == b: the list as it
 * is, with the devices of st->dev); INFINITY-like: returns 0 and leaves
 * *cost when the merge closes a cycle or the list does not map. With map
 * set, the candidate's devices are kept in st->c_dev. */
int partd__ca_list_evaluate(partd__ca_state *st, uint32_t a, uint32_t b, int64_t merged_used,
                            int remap, double *cost, int *ok)
{
    const partd_graph *g = st->g;
    uint32_t k = 0;
    *ok = 0;
    for (uint32_t i = 0; i < st->n_order; i++) {
        uint32_t r = st->order[i];
        if (r == a || r == b)
            continue;
        st->pos[r] = k;
        st->c_used[k++] = st->recs[r].used;
    }
    if (a != b) {
        st->pos[a] = st->pos[b] = k;
        st->c_used[k++] = merged_used;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++)
        st->c_part_of[v] = st->part_of[v] == PARTD_NONE ? PARTD_NONE : st->pos[st->part_of[v]];
    partd__fx_layout l = {k, st->c_part_of, st->c_dev_off, st->c_dev_idx};
    if (remap) {
        int found = partd__fx_map(st->req, &l, st->c_used, st->c_dev);
        if (found < 0)
            return PARTD_ENOMEM;
        if (!found)
            return PARTD_OK;
    } else {
        for (uint32_t i = 0; i < st->n_order; i++)
            st->c_dev[st->pos[st->order[i]]] = st->dev[st->order[i]];
    }
    uint32_t at = 0;
    for (uint32_t p = 0; p < k; p++) {
        st->c_dev_off[p] = at;
        if (st->c_dev[p] != PARTD_NONE)
            st->c_dev_idx[at++] = st->c_dev[p];
    }
    st->c_dev_off[k] = at;
    uint32_t cycle;
    int rc = partd__fx_latency(st->req, &l, cost, &cycle);
    if (rc == PARTD_EINFEASIBLE)
        return PARTD_OK;
    *ok = rc == PARTD_OK;
    return rc;
}

/* The critical path of node latencies over the ops of a and b (b may be
 * NULL), as partd__fx_latency takes it: node order, top down. */
double partd__ca_list_lat(partd__ca_state *st, const partd__ca_rec *a, const partd__ca_rec *b)
{
    const partd_graph *g = st->g;
    partd__ca_round *d = &st->rd;
    uint32_t t = ++d->n_tok;
    uint32_t nb = b ? b->n : 0;
    for (uint32_t i = 0; i < a->n; i++)
        d->in_u[a->ops[i]] = t;
    for (uint32_t i = 0; i < nb; i++)
        d->in_u[b->ops[i]] = t;
    double lat = 0;
    uint32_t i = 0, k = 0;
    while (i < a->n || k < nb) {
        uint32_t v = k >= nb || (i < a->n && a->ops[i] < b->ops[k]) ? a->ops[i++] : b->ops[k++];
        double top = 0;
        for (uint32_t e = g->in_off[v]; e < g->in_off[v + 1]; e++) {
            uint32_t u = g->in_idx[e];
            if (d->in_u[u] == t && d->dist[u] > top)
                top = d->dist[u];
        }
        d->dist[v] = top + partd__fx_node_sec(g, v);
        if (d->dist[v] > lat)
            lat = d->dist[v];
    }
    return lat;
}

/* Recs a and b replaced by their union at the list's end, which keeps
 * the order of the others (FX's partitions.remove and append). */
int partd__ca_list_merge(partd__ca_state *st, uint32_t a, uint32_t b, int64_t used)
{
    partd__ca_rec *n = &st->recs[st->n_recs];
    const partd__ca_rec *ra = &st->recs[a], *rb = &st->recs[b];
    n->n = ra->n + rb->n;
    n->ops = malloc(n->n * sizeof *n->ops);
    if (!n->ops)
        return PARTD_ENOMEM;
    for (uint32_t i = 0, k = 0, at = 0; at < n->n; at++)
        n->ops[at] = k >= rb->n || (i < ra->n && ra->ops[i] < rb->ops[k]) ? ra->ops[i++]
                                                                           : rb->ops[k++];
    n->used = used;
    n->lat = partd__ca_list_lat(st, ra, rb);
    uint32_t r = st->n_recs++;
    for (uint32_t i = 0; i < n->n; i++)
        st->part_of[n->ops[i]] = r;
    uint32_t k = 0;
    for (uint32_t i = 0; i < st->n_order; i++)
        if (st->order[i] != a && st->order[i] != b)
            st->order[k++] = st->order[i];
    st->order[k++] = r;
    st->n_order = k;
    st->dev[r] = PARTD_NONE;
    free(st->recs[a].ops);
    free(st->recs[b].ops);
    st->recs[a].ops = st->recs[b].ops = NULL;
    return PARTD_OK;
}

int partd__ca_list_init(partd__ca_state *st, const partd_request *req)
{
    const partd_graph *g = &req->graph;
    *st = (partd__ca_state){0};
    st->req = req;
    st->g = g;
    size_t R = 2 * (size_t)g->n_ops + 2, N = (size_t)g->n_nodes + 1;
    st->recs = calloc(R, sizeof *st->recs);
    st->part_of = malloc(N * sizeof *st->part_of);
    st->order = malloc(R * sizeof *st->order);
    st->level = calloc(R, sizeof *st->level);
    st->dev = malloc(R * sizeof *st->dev);
    st->stamp = calloc(N, sizeof *st->stamp);
    st->pos = malloc(R * sizeof *st->pos);
    st->c_part_of = malloc(N * sizeof *st->c_part_of);
    st->c_used = malloc(R * sizeof *st->c_used);
    st->c_dev = malloc(R * sizeof *st->c_dev);
    st->c_dev_off = malloc((R + 1) * sizeof *st->c_dev_off);
    st->c_dev_idx = malloc(R * sizeof *st->c_dev_idx);
    if (!st->recs || !st->part_of || !st->order || !st->level || !st->dev || !st->stamp ||
        !st->pos || !st->c_part_of || !st->c_used || !st->c_dev || !st->c_dev_off ||
        !st->c_dev_idx || partd__ca_round_alloc(st) != PARTD_OK)
        return PARTD_ENOMEM;
    /* create_single_node_partition for every operation, in node order */
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        st->part_of[v] = PARTD_NONE;
        if (!partd_op_is_operation(g->op[v]))
            continue;
        partd__ca_rec *r = &st->recs[st->n_recs];
        r->ops = malloc(sizeof *r->ops);
        if (!r->ops)
            return PARTD_ENOMEM;
        r->ops[0] = v;
        r->n = 1;
        r->used = partd__ca_list_bytes(st, r, &(partd__ca_rec){0});
        r->lat = partd__fx_node_sec(g, v);
        st->part_of[v] = st->n_recs;
        st->dev[st->n_recs] = PARTD_NONE;
        st->order[st->n_order++] = st->n_recs++;
    }
    return partd__ca_list_levels(st);
}

void partd__ca_list_free(partd__ca_state *st)
{
    for (uint32_t r = 0; st->recs && r < st->n_recs; r++)
        free(st->recs[r].ops);
    free(st->recs);
    free(st->part_of);
    free(st->order);
    free(st->level);
    free(st->dev);
    free(st->stamp);
    free(st->pos);
    free(st->c_part_of);
    free(st->c_used);
    free(st->c_dev);
    free(st->c_dev_off);
    free(st->c_dev_idx);
    partd__ca_round_free(&st->rd);
}
