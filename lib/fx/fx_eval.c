/*
 * fx_eval.c - FX's memory and cost of a partitioning, and its plan; see
 * fx_internal.h.
 *
 * FX (partitioner_utils.py) walks every path of the partitions' DAG and of
 * each partition's nodes by recursion; the longest path is the same figure
 * taken in topological order. The sums are FX's to the bit: along a path FX
 * adds from the top, and rounding is monotone, so the largest rounded sum
 * over paths is the rounded sum of the largest prefix at every step.
 */
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"
#include "partd/partd.h"

int partd__fx_memory(const partd_request *req, const partd__fx_layout *l, int64_t *used)
{
    const partd_graph *g = &req->graph;
    uint32_t *stamp = malloc(((size_t)l->n_parts + 1) * sizeof *stamp);
    if (!stamp)
        return PARTD_ENOMEM;
    for (uint32_t p = 0; p < l->n_parts; p++) {
        used[p] = 0;
        stamp[p] = PARTD_NONE;
    }
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        uint32_t p = l->part_of[v];
        if (p != PARTD_NONE) {
            used[p] += partd__fx_total(g, v);
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k];
                if (!partd__fx_is_constant(g, u) && l->part_of[u] != p)
                    used[p] += partd__fx_output(g, u);
            }
        } else if (partd__fx_is_constant(g, v)) {
            /* once in each partition that reads it */
            for (uint32_t k = g->user_off[v]; k < g->user_off[v + 1]; k++) {
                uint32_t q = l->part_of[g->user_idx[k]];
                if (q != PARTD_NONE && stamp[q] != v) {
                    stamp[q] = v;
                    used[q] += partd__fx_total(g, v);
                }
            }
        }
    }
    free(stamp);
    return PARTD_OK;
}

static int same_devices(const partd__fx_layout *l, uint32_t a, uint32_t b)
{
    uint32_t na = l->dev_off[a + 1] - l->dev_off[a], nb = l->dev_off[b + 1] - l->dev_off[b];
    return na && na == nb &&
           memcmp(l->dev_idx + l->dev_off[a], l->dev_idx + l->dev_off[b],
                  na * sizeof *l->dev_idx) == 0;
}

typedef struct edges {
    uint32_t *off, *src; /* per child partition: its parents (CSR) */
    int64_t *bytes;      /* per edge: FX's comm_size */
} edges;

/* The parents of every partition and the bytes each edge carries. */
static int build_edges(const partd_request *req, const partd__fx_layout *l, edges *e)
{
    const partd_graph *g = &req->graph;
    uint32_t P = l->n_parts, n = g->n_nodes;
    /* ops of each partition (CSR), in graph order */
    uint32_t *op_off = calloc((size_t)P + 2, sizeof *op_off);
    uint32_t *ops = malloc(((size_t)g->n_ops + 1) * sizeof *ops);
    uint32_t *edge_at = malloc(((size_t)P + 1) * sizeof *edge_at); /* parent -> edge index + 1 stamp */
    uint32_t *edge_of = malloc(((size_t)P + 1) * sizeof *edge_of);
    uint32_t *seen = malloc(((size_t)n + 1) * sizeof *seen);
    size_t cap = 1024, m = 0;
    e->off = calloc((size_t)P + 1, sizeof *e->off);
    e->src = malloc(cap * sizeof *e->src);
    e->bytes = malloc(cap * sizeof *e->bytes);
    int rc = PARTD_ENOMEM;
    if (!op_off || !ops || !edge_at || !edge_of || !seen || !e->off || !e->src || !e->bytes)
        goto out;
    for (uint32_t v = 0; v < n; v++)
        if (l->part_of[v] != PARTD_NONE)
            op_off[l->part_of[v] + 2]++;
    for (uint32_t p = 0; p < P; p++)
        op_off[p + 2] += op_off[p + 1];
    for (uint32_t v = 0; v < n; v++)
        if (l->part_of[v] != PARTD_NONE)
            ops[op_off[l->part_of[v] + 1]++] = v;
    for (uint32_t p = 0; p < P; p++)
        edge_at[p] = PARTD_NONE;
    for (uint32_t v = 0; v < n; v++)
        seen[v] = PARTD_NONE;
    for (uint32_t q = 0; q < P; q++) {
        e->off[q] = (uint32_t)m;
        size_t first = m;
        /* parents through operations, and the operations' bytes */
        for (uint32_t i = op_off[q]; i < op_off[q + 1]; i++) {
            uint32_t v = ops[i];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k], p = l->part_of[u];
                if (p == PARTD_NONE || p == q || seen[u] == q)
                    continue;
                seen[u] = q;
                if (edge_at[p] != q) {
                    if (m == cap) {
                        cap *= 2;
                        uint32_t *s = realloc(e->src, cap * sizeof *s);
                        if (s)
                            e->src = s;
                        int64_t *b = realloc(e->bytes, cap * sizeof *b);
                        if (b)
                            e->bytes = b;
                        if (!s || !b)
                            goto out;
                    }
                    edge_at[p] = q;
                    edge_of[p] = (uint32_t)m;
                    e->src[m] = p;
                    e->bytes[m++] = 0;
                }
                e->bytes[edge_of[p]] += partd__fx_output(g, u);
            }
        }
        /* a placeholder or get_attr both read is in both sets: FX counts it */
        for (uint32_t i = op_off[q]; i < op_off[q + 1] && m > first; i++) {
            uint32_t v = ops[i];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t c = g->in_idx[k];
                if (!partd__fx_is_constant(g, c) || seen[c] == q)
                    continue;
                seen[c] = q;
                /* each parent reading c, once: a parent is marked by its edge */
                for (uint32_t j = g->user_off[c]; j < g->user_off[c + 1]; j++) {
                    uint32_t p = l->part_of[g->user_idx[j]];
                    if (p == PARTD_NONE || p == q || edge_at[p] != q)
                        continue;
                    uint32_t at = edge_of[p];
                    /* count c once per parent: flag by the top bit of src */
                    if (e->src[at] & 0x80000000u)
                        continue;
                    e->src[at] |= 0x80000000u;
                    e->bytes[at] += partd__fx_output(g, c);
                }
                for (size_t j = first; j < m; j++)
                    e->src[j] &= 0x7fffffffu;
            }
        }
    }
    e->off[P] = (uint32_t)m;
    rc = PARTD_OK;
out:
    free(op_off);
    free(ops);
    free(edge_at);
    free(edge_of);
    free(seen);
    return rc;
}

int partd__fx_latency(const partd_request *req, const partd__fx_layout *l, double *sec,
                      uint32_t *cycle)
{
    const partd_graph *g = &req->graph;
    uint32_t P = l->n_parts, n = g->n_nodes;
    double *dist = malloc(((size_t)n + 1) * sizeof *dist);
    double *lat = calloc((size_t)P + 1, sizeof *lat);
    double *best = malloc(((size_t)P + 1) * sizeof *best);
    uint32_t *indeg = calloc((size_t)P + 1, sizeof *indeg);
    uint32_t *queue = malloc(((size_t)P + 1) * sizeof *queue);
    uint32_t *ch_off = calloc((size_t)P + 2, sizeof *ch_off);
    uint32_t *ch = NULL;
    edges e = {0};
    int rc = PARTD_ENOMEM;
    if (!dist || !lat || !best || !indeg || !queue || !ch_off)
        goto out;
    /* each partition's critical path */
    for (uint32_t v = 0; v < n; v++) {
        uint32_t p = l->part_of[v];
        if (p == PARTD_NONE)
            continue;
        double top = 0;
        for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
            uint32_t u = g->in_idx[k];
            if (l->part_of[u] == p && dist[u] > top)
                top = dist[u];
        }
        dist[v] = top + partd__fx_node_sec(g, v);
        if (dist[v] > lat[p])
            lat[p] = dist[v];
    }
    if ((rc = build_edges(req, l, &e)) != PARTD_OK)
        goto out;
    rc = PARTD_ENOMEM;
    uint32_t m = e.off[P];
    ch = malloc(((size_t)m + 1) * sizeof *ch);
    if (!ch)
        goto out;
    for (uint32_t j = 0; j < m; j++)
        ch_off[e.src[j] + 2]++;
    for (uint32_t p = 0; p < P; p++)
        ch_off[p + 2] += ch_off[p + 1];
    for (uint32_t q = 0; q < P; q++)
        for (uint32_t j = e.off[q]; j < e.off[q + 1]; j++)
            ch[ch_off[e.src[j] + 1]++] = q;
    uint32_t head = 0, tail = 0;
    for (uint32_t q = 0; q < P; q++) {
        indeg[q] = e.off[q + 1] - e.off[q];
        if (!indeg[q])
            queue[tail++] = q;
    }
    while (head < tail) {
        uint32_t p = queue[head++];
        for (uint32_t j = ch_off[p]; j < ch_off[p + 1]; j++)
            if (--indeg[ch[j]] == 0)
                queue[tail++] = ch[j];
    }
    if (tail < P) {
        for (uint32_t q = 0; q < P; q++)
            if (indeg[q]) {
                *cycle = q;
                break;
            }
        rc = PARTD_EINFEASIBLE;
        goto out;
    }
    double worst = 0;
    for (uint32_t i = 0; i < P; i++) {
        uint32_t q = queue[i];
        double in = 0;
        for (uint32_t j = e.off[q]; j < e.off[q + 1]; j++) {
            uint32_t p = e.src[j];
            double comm = same_devices(l, p, q)
                              ? 0.0
                              : (double)e.bytes[j] / req->options.transfer_bytes_per_sec;
            double x = best[p] + comm;
            if (x > in)
                in = x;
        }
        best[q] = in + lat[q];
        if (best[q] > worst)
            worst = best[q];
    }
    *sec = worst;
    rc = PARTD_OK;
out:
    free(dist);
    free(lat);
    free(best);
    free(indeg);
    free(queue);
    free(ch_off);
    free(ch);
    free(e.off);
    free(e.src);
    free(e.bytes);
    return rc;
}

int partd__fx_plan(const partd_request *req, partd_mode mode, const partd__fx_layout *l,
                   const int64_t *used, double sec, partd_plan **out)
{
    const partd_graph *g = &req->graph;
    partd_plan *plan = partd_plan_alloc(mode, l->n_parts);
    if (!plan)
        return PARTD_ENOMEM;
    int rc = PARTD_OK;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (l->part_of[v] != PARTD_NONE)
            plan->parts[l->part_of[v]].n_nodes++;
    for (uint32_t p = 0; p < l->n_parts && rc == PARTD_OK; p++) {
        partd_part *pt = &plan->parts[p];
        uint32_t nd = l->dev_off[p + 1] - l->dev_off[p];
        pt->nodes = malloc((pt->n_nodes ? pt->n_nodes : 1) * sizeof *pt->nodes);
        pt->devices = malloc((nd ? nd : 1) * sizeof *pt->devices);
        if (!pt->nodes || !pt->devices)
            rc = PARTD_ENOMEM;
        else
            memcpy(pt->devices, l->dev_idx + l->dev_off[p], nd * sizeof *pt->devices);
        pt->n_devices = nd;
        pt->n_nodes = 0;
        pt->memory_bytes = used[p];
    }
    for (uint32_t v = 0; v < g->n_nodes && rc == PARTD_OK; v++) {
        uint32_t p = l->part_of[v];
        if (p == PARTD_NONE)
            continue;
        partd_part *pt = &plan->parts[p];
        pt->nodes[pt->n_nodes++] = v;
        pt->param_bytes += g->param_bytes[v];
    }
    if (rc == PARTD_OK)
        rc = partd_plan_link(req, l->part_of, plan);
    if (rc != PARTD_OK) {
        partd_plan_free(plan);
        return rc;
    }
    partd_plan_fill_times(req, plan);
    plan->summary.optimal = 0; /* FX's heuristics, on purpose: no optimality claim */
    plan->summary.has_latency = 1;
    plan->summary.latency_ms = sec * 1000.0;
    *out = plan;
    return PARTD_OK;
}

int partd__fx_whole(const partd_request *req, partd_mode mode, partd_plan **out,
                    partd_problem *pb)
{
    const partd_graph *g = &req->graph;
    *out = NULL;
    int64_t total = 0, all = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (g->op[v] != PARTD_OP_OUTPUT)
            total += partd__fx_total(g, v);
    uint32_t largest = 0;
    for (uint32_t d = 0; d < req->n_devices; d++) {
        all += req->devices[d].memory_bytes;
        if (req->devices[d].memory_bytes > req->devices[largest].memory_bytes)
            largest = d;
    }
    if (total > req->devices[largest].memory_bytes) {
        if (total <= all)
            return PARTD_OK;
        char need[PARTD_PROBLEM_BYTES_CAP], has[PARTD_PROBLEM_BYTES_CAP];
        partd_problem_bytes(need, (double)total);
        partd_problem_bytes(has, (double)all);
        partd_problem_set(pb, 422, "infeasible", "No feasible plan",
                          "Devices have no enough memory for the module: the graph needs %s and "
                          "all devices together have %s",
                          need, has);
        partd_problem_set_shortfall(pb, total, all);
        partd_problem_add(pb, "/devices", "%s in all; the graph needs %s", has, need);
        return PARTD_EINFEASIBLE;
    }
    /* find_single_partition: used memory is the graph's total */
    uint32_t *part_of = malloc(((size_t)g->n_nodes + 1) * sizeof *part_of);
    if (!part_of)
        return PARTD_ENOMEM;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        part_of[v] = partd_op_is_operation(g->op[v]) ? 0 : PARTD_NONE;
    uint32_t dev_off[2] = {0, 1};
    partd__fx_layout l = {1, part_of, dev_off, &largest};
    double sec = 0;
    uint32_t cycle;
    int rc = partd__fx_latency(req, &l, &sec, &cycle);
    if (rc == PARTD_OK)
        rc = partd__fx_plan(req, mode, &l, &total, sec, out);
    free(part_of);
    return rc;
}

int partd__fx_map(const partd_request *req, const partd__fx_layout *l, const int64_t *used,
                  uint32_t *dev)
{
    const partd_graph *g = &req->graph;
    uint32_t D = req->n_devices, P = l->n_parts;
    int64_t *left = malloc(((size_t)D + 1) * sizeof *left);
    int64_t *credit = calloc((size_t)D + 1, sizeof *credit);
    uint32_t *order = malloc(((size_t)D + 1) * sizeof *order);
    uint32_t *n_on = calloc((size_t)D + 1, sizeof *n_on);
    uint32_t *op_off = calloc((size_t)P + 2, sizeof *op_off);
    uint32_t *ops = malloc(((size_t)g->n_ops + 1) * sizeof *ops);
    int found = -1;
    if (!left || !credit || !order || !n_on || !op_off || !ops)
        goto out;
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (l->part_of[v] != PARTD_NONE)
            op_off[l->part_of[v] + 2]++;
    for (uint32_t p = 0; p < P; p++)
        op_off[p + 2] += op_off[p + 1];
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (l->part_of[v] != PARTD_NONE)
            ops[op_off[l->part_of[v] + 1]++] = v;
    for (uint32_t d = 0; d < D; d++) {
        left[d] = req->devices[d].memory_bytes;
        order[d] = d;
    }
    for (uint32_t p = 0; p < P; p++)
        dev[p] = PARTD_NONE;
    found = 1;
    for (uint32_t p = 0; p < P; p++) {
        /* Python's sorted() is stable: the one device that lost memory moves
         * left past strictly larger ones only */
        for (uint32_t i = 1; i < D; i++) {
            uint32_t d = order[i], j = i;
            while (j > 0 && left[order[j - 1]] > left[d]) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = d;
        }
        /* the bytes of p's outside inputs each device already holds */
        for (uint32_t i = op_off[p]; i < op_off[p + 1]; i++) {
            uint32_t v = ops[i];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k], q = l->part_of[u];
                if (q != PARTD_NONE && q != p && dev[q] != PARTD_NONE)
                    credit[dev[q]] += partd__fx_output(g, u);
            }
        }
        uint32_t chosen = PARTD_NONE;
        int64_t extra = 0;
        for (uint32_t j = 0; j < D && chosen == PARTD_NONE; j++) {
            uint32_t d = order[j];
            extra = n_on[d] ? used[p] - credit[d] : used[p];
            if (extra < left[d])
                chosen = d;
        }
        for (uint32_t i = op_off[p]; i < op_off[p + 1]; i++) {
            uint32_t v = ops[i];
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t u = g->in_idx[k], q = l->part_of[u];
                if (q != PARTD_NONE && q != p && dev[q] != PARTD_NONE)
                    credit[dev[q]] = 0;
            }
        }
        if (chosen == PARTD_NONE) {
            found = 0;
            break;
        }
        dev[p] = chosen;
        left[chosen] -= extra;
        n_on[chosen]++;
    }
out:
    free(left);
    free(credit);
    free(order);
    free(n_on);
    free(op_off);
    free(ops);
    return found;
}

int partd__fx_edges(const partd_request *req, const partd__fx_layout *l, uint32_t **off,
                    uint32_t **src, int64_t **bytes)
{
    edges e = {0};
    int rc = build_edges(req, l, &e);
    if (rc != PARTD_OK) {
        free(e.off);
        free(e.src);
        free(e.bytes);
        return rc;
    }
    *off = e.off;
    *src = e.src;
    *bytes = e.bytes;
    return PARTD_OK;
}

int64_t partd__fx_union_bytes(const partd_graph *g, const uint32_t *a, uint32_t na,
                              const uint32_t *b, uint32_t nb, uint32_t *stamp, uint32_t *token)
{
    uint32_t t = ++*token;
    const uint32_t *ops[2] = {a, b};
    uint32_t n[2] = {na, nb};
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < n[k]; i++)
            stamp[ops[k][i]] = t;
    int64_t bytes = 0;
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < n[k]; i++) {
            uint32_t v = ops[k][i];
            bytes += partd__fx_total(g, v);
            for (uint32_t j = g->in_off[v]; j < g->in_off[v + 1]; j++) {
                uint32_t u = g->in_idx[j];
                if (stamp[u] == t)
                    continue;
                if (partd__fx_is_constant(g, u)) {
                    stamp[u] = t;
                    bytes += partd__fx_total(g, u);
                } else {
                    bytes += partd__fx_output(g, u);
                }
            }
        }
    return bytes;
}

int partd__fx_levels(const partd_graph *g, const uint32_t *part_of, uint32_t n_parts,
                     const uint32_t *order, uint32_t n_order, uint32_t *level)
{
    uint32_t R = n_parts;
    size_t E = g->in_off[g->n_nodes];
    uint32_t *indeg = calloc((size_t)R + 1, sizeof *indeg);
    uint32_t *off = calloc((size_t)R + 2, sizeof *off);
    uint32_t *queue = malloc(((size_t)R + 1) * sizeof *queue);
    uint32_t *ch = malloc((E + 1) * sizeof *ch);
    int rc = PARTD_ENOMEM;
    if (!indeg || !off || !queue || !ch)
        goto out;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            uint32_t r = part_of[v];
            if (r == PARTD_NONE)
                continue;
            for (uint32_t k = g->in_off[v]; k < g->in_off[v + 1]; k++) {
                uint32_t q = part_of[g->in_idx[k]];
                if (q == PARTD_NONE || q == r)
                    continue;
                if (pass == 0) {
                    off[q + 2]++;
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
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n_order; i++) {
        uint32_t r = order[i];
        level[r] = 0;
        if (!indeg[r])
            queue[tail++] = r;
    }
    while (head < tail) {
        uint32_t r = queue[head++];
        for (uint32_t j = off[r]; j < off[r + 1]; j++) {
            uint32_t c = ch[j];
            if (level[c] < level[r] + 1)
                level[c] = level[r] + 1;
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    rc = tail == n_order ? PARTD_OK : PARTD_EINTERNAL;
out:
    free(indeg);
    free(off);
    free(queue);
    free(ch);
    return rc;
}
