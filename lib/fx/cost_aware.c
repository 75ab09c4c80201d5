/*
 * cost_aware.c - FX's cost_aware mode; see cost_aware.h.
 *
 * FX (cost_aware_partition in accelerator_partitioner.py, 1.13) tries every
 * pair of partitions by merging them in a copy of the list, mapping every
 * partition onto devices again (get_device_to_partitions_mapping, which
 * decides which partitions share a device and so transfer nothing) and
 * walking every path of the partitions' DAG; each try costs it time
 * quadratic in the graph. Here a try is one pass: the candidate list
 * (the pair removed, their union last), FX's best-fit mapping in one sweep
 * over the partitions with the bytes each device already holds of their
 * inputs, and the cost as a longest path in topological order (fx_eval.c),
 * which finds the same figure to the bit. The rules are FX's:
 *   - a pair is tried when the bfs levels (longest path from a partition
 *     without parents) differ by at most 1 or one is the other's parent or
 *     child; a try whose union closes a cycle or whose list does not map
 *     costs infinity;
 *   - the baseline of each round is the cost of the current list with the
 *     devices the previous round mapped (none in the first round), and a
 *     try wins with a cost <= the best so far, so the last of equals wins;
 *   - the winner's union is appended and the two removed; levels and the
 *     mapping are then redone on the list.
 */
#include "cost_aware.h"

#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "partd/partd.h"
#include "size_based.h"

typedef struct rec {
    uint32_t *ops;
    uint32_t n;
    int64_t used;
} rec;

typedef struct state {
    const partd_request *req;
    const partd_graph *g;
    rec *recs;
    uint32_t n_recs;
    uint32_t *part_of;     /* op -> rec */
    uint32_t *order;       /* FX's self.partitions: rec ids */
    uint32_t n_order;
    uint32_t *level;       /* per rec */
    uint32_t *dev;         /* per rec: device of the last mapping, or PARTD_NONE */
    uint32_t *stamp;       /* per node (unions) */
    uint32_t token;
    uint64_t *adj;         /* sorted (min rec << 32 | max rec) of connected pairs */
    size_t n_adj;
    /* a candidate list */
    uint32_t *pos;         /* rec -> index in the candidate */
    uint32_t *c_part_of;
    int64_t *c_used;
    uint32_t *c_dev, *c_dev_off, *c_dev_idx;
} state;

static int64_t union_bytes(state *st, const rec *a, const rec *b)
{
    const partd_graph *g = st->g;
    uint32_t t = ++st->token;
    const rec *rs[2] = {a, b};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < rs[k]->n; i++)
            st->stamp[rs[k]->ops[i]] = t;
    int64_t bytes = 0;
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < rs[k]->n; i++) {
            uint32_t v = rs[k]->ops[i];
            bytes += partd__fx_total(g, v);
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (st->stamp[u] == t)
                    continue;
                if (partd__fx_is_constant(g, u)) {
                    st->stamp[u] = t;
                    bytes += partd__fx_total(g, u);
                } else {
                    bytes += partd__fx_output(g, u);
                }
            }
        }
    return bytes;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Levels (get_bfs_level_partition) and the connected pairs of the list. */
static int analyse(state *st)
{
    const partd_graph *g = st->g;
    uint32_t R = st->n_recs;
    size_t E = g->in_off[g->n_nodes];
    uint32_t *indeg = calloc((size_t)R + 1, sizeof *indeg);
    uint32_t *off = calloc((size_t)R + 2, sizeof *off);
    uint32_t *queue = malloc(((size_t)R + 1) * sizeof *queue);
    uint32_t *ch = malloc((E + 1) * sizeof *ch);
    uint64_t *adj = malloc((E + 1) * sizeof *adj);
    int rc = PARTD_ENOMEM;
    if (!indeg || !off || !queue || !ch || !adj)
        goto out;
    size_t m = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            uint32_t r = st->part_of[v];
            if (r == PARTD_NONE)
                continue;
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t q = st->part_of[g->in_idx[k]];
                if (q == PARTD_NONE || q == r)
                    continue;
                if (pass == 0) {
                    off[q + 2]++;
                    adj[m++] = q < r ? (uint64_t)q << 32 | r : (uint64_t)r << 32 | q;
                } else {
                    ch[off[q + 1]++] = r;
                    indeg[r]++;
                }
            }
        }
        if (pass == 0)
            for (uint32_t i = 0; i < R; i++)
                off[i + 2] += off[i + 1];
    }
    qsort(adj, m, sizeof *adj, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (u == 0 || adj[u - 1] != adj[i])
            adj[u++] = adj[i];
    free(st->adj);
    st->adj = adj;
    st->n_adj = u;
    adj = NULL;
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < st->n_order; i++) {
        uint32_t r = st->order[i];
        st->level[r] = 0;
        if (!indeg[r])
            queue[tail++] = r;
    }
    while (head < tail) {
        uint32_t r = queue[head++];
        for (uint32_t j = off[r]; j < off[r + 1]; j++) {
            uint32_t c = ch[j];
            if (st->level[c] < st->level[r] + 1)
                st->level[c] = st->level[r] + 1;
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    rc = tail == st->n_order ? PARTD_OK : PARTD_EINTERNAL; /* merges never close a cycle */
out:
    free(indeg);
    free(off);
    free(queue);
    free(ch);
    free(adj);
    return rc;
}

static int connected(const state *st, uint32_t a, uint32_t b)
{
    uint64_t key = a < b ? (uint64_t)a << 32 | b : (uint64_t)b << 32 | a;
    return bsearch(&key, st->adj, st->n_adj, sizeof *st->adj, cmp_u64) != NULL;
}

/* The cost of the list with recs a and b merged (a == b: the list as it
 * is, with the devices of st->dev); INFINITY-like: returns 0 and leaves
 * *cost when the merge closes a cycle or the list does not map. With map
 * set, the candidate's devices are kept in st->c_dev. */
static int evaluate(state *st, uint32_t a, uint32_t b, int64_t merged_used, int remap,
                    double *cost, int *ok)
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

static int merge(state *st, uint32_t a, uint32_t b, int64_t used)
{
    rec *n = &st->recs[st->n_recs];
    n->n = st->recs[a].n + st->recs[b].n;
    n->ops = malloc(n->n * sizeof *n->ops);
    if (!n->ops)
        return PARTD_ENOMEM;
    memcpy(n->ops, st->recs[a].ops, st->recs[a].n * sizeof *n->ops);
    memcpy(n->ops + st->recs[a].n, st->recs[b].ops, st->recs[b].n * sizeof *n->ops);
    n->used = used;
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

/* One round of search_combination; *merged set when a pair was merged. */
static int round_(state *st, const partd_cancel *cancel, int *merged)
{
    double cost;
    int ok, rc;
    *merged = 0;
    if ((rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &cost, &ok)) != PARTD_OK)
        return rc;
    if (!ok)
        return PARTD_EINTERNAL;
    if (st->n_order == 1)
        return PARTD_OK;
    uint32_t best_a = PARTD_NONE, best_b = PARTD_NONE;
    int64_t best_used = 0;
    for (uint32_t i = 0; i + 1 < st->n_order; i++) {
        if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
            return rc;
        uint32_t a = st->order[i];
        for (uint32_t j = i + 1; j < st->n_order; j++) {
            uint32_t b = st->order[j];
            uint32_t la = st->level[a], lb = st->level[b];
            if ((la > lb ? la - lb : lb - la) > 1 && !connected(st, a, b))
                continue;
            int64_t used = union_bytes(st, &st->recs[a], &st->recs[b]);
            double c;
            if ((rc = evaluate(st, a, b, used, 1, &c, &ok)) != PARTD_OK)
                return rc;
            if (ok && c <= cost) {
                cost = c;
                best_a = a;
                best_b = b;
                best_used = used;
            }
        }
    }
    if (best_a != PARTD_NONE) {
        if ((rc = merge(st, best_a, best_b, best_used)) != PARTD_OK)
            return rc;
        *merged = 1;
    }
    if ((rc = analyse(st)) != PARTD_OK)
        return rc;
    /* reset_partition_device, get_device_to_partitions_mapping on the list */
    if ((rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 1, &cost, &ok)) != PARTD_OK)
        return rc;
    int found = ok;
    if (!found) {
        /* FX keeps what its mapping gave before it stopped: only whether
         * every partition has a device matters from here (see finish) */
        for (uint32_t i = 0; i < st->n_order; i++)
            st->dev[st->order[i]] = PARTD_NONE;
        return PARTD_OK;
    }
    for (uint32_t i = 0; i < st->n_order; i++)
        st->dev[st->order[i]] = st->c_dev[st->pos[st->order[i]]];
    return PARTD_OK;
}

/* FX's size_based plan (its list and devices), costed as this mode's. */
static int size_based_instead(const partd_request *req, const partd_cancel *cancel,
                              partd_plan **out, partd_problem *pb)
{
    partd_plan *sb = NULL;
    int rc = partd_size_based(req, cancel, &sb, pb);
    if (rc != PARTD_OK)
        return rc;
    const partd_graph *g = &req->graph;
    uint32_t P = sb->n_parts, nd = 0;
    for (uint32_t p = 0; p < P; p++)
        nd += sb->parts[p].n_devices;
    uint32_t *part_of = malloc(((size_t)g->n_nodes + 1) * sizeof *part_of);
    uint32_t *dev_off = malloc(((size_t)P + 1) * sizeof *dev_off);
    uint32_t *dev_idx = malloc(((size_t)nd + 1) * sizeof *dev_idx);
    int64_t *used = malloc(((size_t)P + 1) * sizeof *used);
    rc = PARTD_ENOMEM;
    if (part_of && dev_off && dev_idx && used) {
        for (uint32_t v = 0; v < g->n_nodes; v++)
            part_of[v] = PARTD_NONE;
        uint32_t at = 0;
        for (uint32_t p = 0; p < P; p++) {
            const partd_part *pt = &sb->parts[p];
            for (uint32_t i = 0; i < pt->n_nodes; i++)
                part_of[pt->nodes[i]] = p;
            dev_off[p] = at;
            for (uint32_t i = 0; i < pt->n_devices; i++)
                dev_idx[at++] = pt->devices[i];
            used[p] = pt->memory_bytes;
        }
        dev_off[P] = at;
        partd__fx_layout l = {P, part_of, dev_off, dev_idx};
        double sec;
        uint32_t cycle;
        rc = partd__fx_latency(req, &l, &sec, &cycle);
        if (rc == PARTD_EINFEASIBLE)
            rc = PARTD_EINTERNAL; /* size_based's partitions follow node order */
        if (rc == PARTD_OK)
            rc = partd__fx_plan(req, PARTD_MODE_COST_AWARE, &l, used, sec, out);
    }
    partd_plan_free(sb);
    free(part_of);
    free(dev_off);
    free(dev_idx);
    free(used);
    return rc;
}

static int finish(state *st, const partd_cancel *cancel, partd_plan **out, partd_problem *pb)
{
    for (uint32_t i = 0; i < st->n_order; i++)
        if (st->dev[st->order[i]] == PARTD_NONE)
            return size_based_instead(st->req, cancel, out, pb);
    double sec;
    int ok;
    int rc = evaluate(st, PARTD_NONE, PARTD_NONE, 0, 0, &sec, &ok);
    if (rc == PARTD_OK && !ok)
        rc = PARTD_EINTERNAL;
    if (rc == PARTD_OK)
        rc = partd__fx_plan(st->req, PARTD_MODE_COST_AWARE,
                            &(partd__fx_layout){st->n_order, st->c_part_of, st->c_dev_off,
                                                st->c_dev_idx},
                            st->c_used, sec, out);
    return rc;
}

int partd_cost_aware(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                     partd_problem *problem)
{
    const partd_graph *g = &req->graph;
    int rc = partd__fx_whole(req, PARTD_MODE_COST_AWARE, out, problem);
    if (rc != PARTD_OK || *out)
        return rc;
    state st = {0};
    st.req = req;
    st.g = g;
    size_t R = 2 * (size_t)g->n_ops + 2, N = (size_t)g->n_nodes + 1;
    st.recs = calloc(R, sizeof *st.recs);
    st.part_of = malloc(N * sizeof *st.part_of);
    st.order = malloc(R * sizeof *st.order);
    st.level = calloc(R, sizeof *st.level);
    st.dev = malloc(R * sizeof *st.dev);
    st.stamp = calloc(N, sizeof *st.stamp);
    st.pos = malloc(R * sizeof *st.pos);
    st.c_part_of = malloc(N * sizeof *st.c_part_of);
    st.c_used = malloc(R * sizeof *st.c_used);
    st.c_dev = malloc(R * sizeof *st.c_dev);
    st.c_dev_off = malloc((R + 1) * sizeof *st.c_dev_off);
    st.c_dev_idx = malloc(R * sizeof *st.c_dev_idx);
    rc = PARTD_ENOMEM;
    if (!st.recs || !st.part_of || !st.order || !st.level || !st.dev || !st.stamp || !st.pos ||
        !st.c_part_of || !st.c_used || !st.c_dev || !st.c_dev_off || !st.c_dev_idx)
        goto out;
    /* create_single_node_partition for every operation, in node order */
    rc = PARTD_OK;
    for (uint32_t v = 0; v < g->n_nodes && rc == PARTD_OK; v++) {
        st.part_of[v] = PARTD_NONE;
        if (!partd_op_is_operation(g->op[v]))
            continue;
        rec *r = &st.recs[st.n_recs];
        r->ops = malloc(sizeof *r->ops);
        if (!r->ops) {
            rc = PARTD_ENOMEM;
            break;
        }
        r->ops[0] = v;
        r->n = 1;
        r->used = union_bytes(&st, r, &(rec){0});
        st.part_of[v] = st.n_recs;
        st.dev[st.n_recs] = PARTD_NONE;
        st.order[st.n_order++] = st.n_recs++;
    }
    if (rc == PARTD_OK)
        rc = analyse(&st);
    int merged = 1;
    while (rc == PARTD_OK && merged)
        rc = round_(&st, cancel, &merged);
    if (rc == PARTD_OK)
        rc = finish(&st, cancel, out, problem);
out:
    for (uint32_t r = 0; st.recs && r < st.n_recs; r++)
        free(st.recs[r].ops);
    free(st.recs);
    free(st.part_of);
    free(st.order);
    free(st.level);
    free(st.dev);
    free(st.stamp);
    free(st.pos);
    free(st.c_part_of);
    free(st.c_used);
    free(st.c_dev);
    free(st.c_dev_off);
    free(st.c_dev_idx);
    free(st.adj);
    return rc;
}
