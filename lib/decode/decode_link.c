/*
 * decode_link.c - the reference passes over the decoded nodes; see
 * decode_internal.h.
 *
 *   1. names unique, one output node at most, at least one operation,
 *      total bytes bounded;
 *   2. inputs resolved to nodes, repeats removed;
 *   3. a cycle check and a stable topological order (the given order when
 *      it already is one), then the CSR arrays of model.h in planning order
 *      and the distinct parameters.
 * Every violation is added to the problem (up to its cap).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "partd/enums.h"
#include "partd/partd.h"

/* Names unique, one output node at most, at least one operation, total bytes
 * bounded. name_node maps string id -> request index. */
static void check_nodes(partd_dec *d, uint32_t *name_node)
{
    partd_graph *g = &d->req->graph;
    char ptr[PARTD_POINTER_CAP];
    uint32_t first_output = PARTD_NONE;
    int64_t total = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t id = g->name[i];
        if (id != PARTD_STR_NONE) {
            if (name_node[id] != PARTD_NONE) {
                partd_pointer_index(ptr, "/graph/nodes", i);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "name");
                partd_problem_add(d->r.pb, ptr,
                                  "duplicate node name \"%s\" (first at /graph/nodes/%u)",
                                  partd_str(&d->req->strings, id), name_node[id]);
            } else {
                name_node[id] = i;
            }
        }
        if (g->op[i] == PARTD_OP_OUTPUT) {
            if (first_output != PARTD_NONE) {
                partd_pointer_index(ptr, "/graph/nodes", i);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "op");
                partd_problem_add(d->r.pb, ptr,
                                  "more than one output node (first at /graph/nodes/%u)",
                                  first_output);
            } else {
                first_output = i;
            }
        }
        if (partd_op_is_operation(g->op[i]))
            g->n_ops++;
        const char *member = NULL;
        if (total >= 0 && partd__decode_add_bytes(&total, g->output_bytes[i]))
            member = "output_bytes";
        else if (total >= 0 && partd__decode_add_bytes(&total, g->param_bytes[i]))
            member = g->has_params[i] ? "params" : "param_bytes";
        if (member) {
            partd_pointer_index(ptr, "/graph/nodes", i);
            partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, member);
            partd__decode_add(d, ptr, "the nodes' output_bytes and parameter bytes add up to more than "
                        "2^53 here");
            total = -1; /* reported once */
        }
    }
    if (g->n_nodes && g->n_ops == 0)
        partd__decode_add(d, "/graph/nodes",
            "the graph has no operation node (call_module, call_function or call_method)");
}

/* Resolves input names to request indices (in place in d->in_name) and
 * removes repeats. */
static void resolve_inputs(partd_dec *d, const uint32_t *name_node, uint32_t *seen)
{
    partd_graph *g = &d->req->graph;
    char ptr[PARTD_POINTER_CAP];
    for (uint32_t i = 0; i < g->n_nodes; i++)
        seen[i] = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        uint32_t w = d->in_name_off[i];
        for (uint32_t k = d->in_name_off[i]; k < d->in_name_off[i + 1]; k++) {
            uint32_t target = name_node[d->in_name[k]];
            if (target == PARTD_NONE) {
                partd_pointer_index(ptr, "/graph/nodes", i);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
                partd_problem_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->in_name_off[i]);
                partd_problem_add(d->r.pb, ptr, "names no node: \"%s\"",
                                  partd_str(&d->req->strings, d->in_name[k]));
                continue;
            }
            if (g->op[target] == PARTD_OP_OUTPUT) {
                partd_pointer_index(ptr, "/graph/nodes", i);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
                partd_problem_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->in_name_off[i]);
                partd_problem_add(d->r.pb, ptr, "reads the output node \"%s\"",
                                  partd_str(&d->req->strings, d->in_name[k]));
                continue;
            }
            /* seen[target] == i + 1: node i already reads target. */
            if (seen[target] != i + 1) {
                seen[target] = i + 1;
                d->in_name[w++] = target;
            }
        }
        /* Compact: later nodes' entries start at their own offsets, so keep
         * the end marker by filling the gap with a sentinel. */
        for (uint32_t k = w; k < d->in_name_off[i + 1]; k++)
            d->in_name[k] = PARTD_NONE;
    }
}

/* ---- order --------------------------------------------------------------- */

/* Binary min-heap of request indices (Kahn's ready set): picking the ready
 * node that came first in the request keeps the order stable. */
typedef struct heap {
    uint32_t *a;
    uint32_t n;
} heap;

static void heap_push(heap *h, uint32_t x)
{
    uint32_t i = h->n++;
    while (i && h->a[(i - 1) / 2] > x) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

static uint32_t heap_pop(heap *h)
{
    uint32_t top = h->a[0], x = h->a[--h->n], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1] < h->a[c])
            c++;
        if (h->a[c] >= x)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = x;
    return top;
}

static int given_order_is_topological(const partd_dec *d)
{
    for (uint32_t i = 0; i < d->req->graph.n_nodes; i++)
        for (uint32_t k = d->in_name_off[i]; k < d->in_name_off[i + 1]; k++)
            if (d->in_name[k] != PARTD_NONE && d->in_name[k] >= i)
                return 0;
    return 1;
}

/* Users CSR in request order, from the resolved inputs. */
static int build_users(const partd_dec *d, uint32_t n, uint32_t **off_out, uint32_t **idx_out)
{
    uint32_t *off = calloc((size_t)n + 1, sizeof *off);
    uint32_t total = d->in_name_off[n];
    uint32_t *idx = calloc(total ? total : 1, sizeof *idx);
    uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!off || !idx || !fill) {
        free(off);
        free(idx);
        free(fill);
        return -1;
    }
    for (uint32_t k = 0; k < total; k++)
        if (d->in_name[k] != PARTD_NONE)
            off[d->in_name[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        off[i + 1] += off[i];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = d->in_name_off[i]; k < d->in_name_off[i + 1]; k++) {
            uint32_t src = d->in_name[k];
            if (src != PARTD_NONE)
                idx[off[src] + fill[src]++] = i;
        }
    free(fill);
    *off_out = off;
    *idx_out = idx;
    return 0;
}

/* Reports one cycle among the nodes Kahn's algorithm could not order: walk
 * backwards along unordered inputs until a node repeats. */
static void report_cycle(partd_dec *d, const uint32_t *indegree)
{
    uint32_t n = d->req->graph.n_nodes;
    uint32_t start = PARTD_NONE;
    for (uint32_t i = 0; i < n && start == PARTD_NONE; i++)
        if (indegree[i])
            start = i;
    uint32_t *seen_at = malloc((size_t)n * sizeof *seen_at);
    uint32_t *path = malloc((size_t)n * sizeof *path);
    if (!seen_at || !path) {
        free(seen_at);
        free(path);
        partd__decode_oom(d, "/graph/nodes");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        seen_at[i] = PARTD_NONE;
    uint32_t len = 0, cur = start;
    while (seen_at[cur] == PARTD_NONE) {
        seen_at[cur] = len;
        path[len++] = cur;
        uint32_t next = PARTD_NONE;
        for (uint32_t k = d->in_name_off[cur]; k < d->in_name_off[cur + 1]; k++) {
            uint32_t src = d->in_name[k];
            if (src != PARTD_NONE && indegree[src]) {
                next = src;
                break;
            }
        }
        cur = next; /* an unordered node always has an unordered input */
    }
    /* path[seen_at[cur] .. len) is the cycle, walked against the edges:
     * print it forwards from cur, which is on it. */
    const partd_strtab *st = &d->req->strings;
    const uint32_t *names = d->req->graph.name;
    size_t cap = 4096, used = 0;
    char *msg = malloc(cap);
    if (msg) {
        used = (size_t)snprintf(msg, cap, "cycle: \"%s\"", partd_str(st, names[cur]));
        for (uint32_t k = len; k-- > seen_at[cur] + 1 && used + 8 < cap;)
            used += (size_t)snprintf(msg + used, cap - used, " -> \"%s\"",
                                     partd_str(st, names[path[k]]));
        if (used + 8 < cap)
            snprintf(msg + used, cap - used, " -> \"%s\"", partd_str(st, names[cur]));
        char ptr[PARTD_POINTER_CAP];
        partd_pointer_index(ptr, "/graph/nodes", cur);
        partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
        partd__decode_add(d, ptr, msg);
        free(msg);
    } else {
        partd__decode_oom(d, "/graph/nodes");
    }
    free(seen_at);
    free(path);
}

/* Computes order[plan] = request index. Returns 0, or -1 with a cycle
 * reported (or on ENOMEM). */
static int topological_order(partd_dec *d, uint32_t *order)
{
    uint32_t n = d->req->graph.n_nodes;
    if (given_order_is_topological(d)) {
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        d->req->graph.order_was_topological = 1;
        return 0;
    }
    uint32_t *uoff, *uidx;
    if (build_users(d, n, &uoff, &uidx) != 0) {
        partd__decode_oom(d, "/graph/nodes");
        return -1;
    }
    uint32_t *indegree = calloc(n, sizeof *indegree);
    heap h = {malloc((size_t)n * sizeof(uint32_t)), 0};
    int rc = -1;
    if (!indegree || !h.a) {
        partd__decode_oom(d, "/graph/nodes");
        goto out;
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = d->in_name_off[i]; k < d->in_name_off[i + 1]; k++)
            if (d->in_name[k] != PARTD_NONE)
                indegree[i]++;
    for (uint32_t i = 0; i < n; i++)
        if (!indegree[i])
            heap_push(&h, i);
    uint32_t done = 0;
    while (h.n) {
        uint32_t v = heap_pop(&h);
        order[done++] = v;
        for (uint32_t k = uoff[v]; k < uoff[v + 1]; k++)
            if (--indegree[uidx[k]] == 0)
                heap_push(&h, uidx[k]);
    }
    if (done == n)
        rc = 0;
    else
        report_cycle(d, indegree);
out:
    free(uoff);
    free(uidx);
    free(indegree);
    free(h.a);
    return rc;
}

/* ---- building the model in planning order -------------------------------- */

/* Reorders one per-node array (elements of `size` bytes) into planning
 * order: out[p] = in[order[p]]. */
static int permute(void *array_ptr, size_t size, const uint32_t *order, uint32_t n)
{
    char **array = array_ptr;
    char *b = malloc((size_t)(n ? n : 1) * size);
    if (!b)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        memcpy(b + (size_t)i * size, *array + (size_t)order[i] * size, size);
    free(*array);
    *array = b;
    return 0;
}

static int build_inputs_csr(partd_dec *d, const uint32_t *order, const uint32_t *rank)
{
    partd_graph *g = &d->req->graph;
    uint32_t n = g->n_nodes;
    g->in_off = calloc((size_t)n + 1, sizeof *g->in_off);
    if (!g->in_off)
        return -1;
    for (uint32_t p = 0; p < n; p++) {
        uint32_t r = order[p], c = 0;
        for (uint32_t k = d->in_name_off[r]; k < d->in_name_off[r + 1]; k++)
            c += d->in_name[k] != PARTD_NONE;
        g->in_off[p + 1] = g->in_off[p] + c;
    }
    g->in_idx = malloc((size_t)(g->in_off[n] ? g->in_off[n] : 1) * sizeof *g->in_idx);
    if (!g->in_idx)
        return -1;
    for (uint32_t p = 0; p < n; p++) {
        uint32_t r = order[p], w = g->in_off[p];
        for (uint32_t k = d->in_name_off[r]; k < d->in_name_off[r + 1]; k++)
            if (d->in_name[k] != PARTD_NONE)
                g->in_idx[w++] = rank[d->in_name[k]];
    }
    /* Users in planning order: ascending because p increases. */
    g->user_off = calloc((size_t)n + 1, sizeof *g->user_off);
    g->user_idx = malloc((size_t)(g->in_off[n] ? g->in_off[n] : 1) * sizeof *g->user_idx);
    uint32_t *fill = calloc(n ? n : 1, sizeof *fill);
    if (!g->user_off || !g->user_idx || !fill) {
        free(fill);
        return -1;
    }
    for (uint32_t k = 0; k < g->in_off[n]; k++)
        g->user_off[g->in_idx[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        g->user_off[i + 1] += g->user_off[i];
    for (uint32_t p = 0; p < n; p++)
        for (uint32_t k = g->in_off[p]; k < g->in_off[p + 1]; k++) {
            uint32_t src = g->in_idx[k];
            g->user_idx[g->user_off[src] + fill[src]++] = p;
        }
    free(fill);
    return 0;
}

/* Distinct named parameters; the same name with different sizes is an error. */
static int build_params(partd_dec *d, const uint32_t *order)
{
    partd_graph *g = &d->req->graph;
    partd_strtab *st = &d->req->strings;
    uint32_t n = g->n_nodes;
    uint32_t *param_of_name = malloc((size_t)(st->count ? st->count : 1) * sizeof(uint32_t));
    uint32_t *first_node = malloc((size_t)(d->n_par_names ? d->n_par_names : 1) * sizeof(uint32_t));
    g->param_name = malloc((size_t)(d->n_par_names ? d->n_par_names : 1) * sizeof(uint32_t));
    g->param_size = malloc((size_t)(d->n_par_names ? d->n_par_names : 1) * sizeof(int64_t));
    g->par_off = calloc((size_t)n + 1, sizeof *g->par_off);
    g->par_idx = malloc((size_t)(d->n_par_names ? d->n_par_names : 1) * sizeof(uint32_t));
    int rc = -1;
    if (!param_of_name || !first_node || !g->param_name || !g->param_size || !g->par_off ||
        !g->par_idx)
        goto out;
    for (uint32_t s = 0; s < st->count; s++)
        param_of_name[s] = PARTD_NONE;
    /* Parameter ids are assigned in request order so they do not depend on
     * how the order was repaired. */
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t k = d->par_name_off[r]; k < d->par_name_off[r + 1]; k++) {
            uint32_t name = d->par_name[k];
            uint32_t id = param_of_name[name];
            if (id == PARTD_NONE) {
                id = param_of_name[name] = g->n_params++;
                g->param_name[id] = name;
                g->param_size[id] = d->par_bytes[k];
                first_node[id] = r;
            } else if (g->param_size[id] != d->par_bytes[k]) {
                char ptr[PARTD_POINTER_CAP];
                partd_pointer_index(ptr, "/graph/nodes", r);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "params");
                partd_problem_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->par_name_off[r]);
                partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "bytes");
                partd_problem_add(d->r.pb, ptr,
                                  "parameter \"%s\" has %lld bytes here but %lld at "
                                  "/graph/nodes/%u",
                                  partd_str(st, name), (long long)d->par_bytes[k],
                                  (long long)g->param_size[id], first_node[id]);
            }
        }
    for (uint32_t p = 0; p < n; p++) {
        uint32_t r = order[p];
        g->par_off[p + 1] = g->par_off[p] + (d->par_name_off[r + 1] - d->par_name_off[r]);
        for (uint32_t k = d->par_name_off[r], w = g->par_off[p]; k < d->par_name_off[r + 1]; k++)
            g->par_idx[w++] = param_of_name[d->par_name[k]];
    }
    rc = 0;
out:
    free(param_of_name);
    free(first_node);
    return rc;
}

static int build_planning_order(partd_dec *d, const uint32_t *order)
{
    partd_graph *g = &d->req->graph;
    uint32_t n = g->n_nodes;
    uint32_t *rank = malloc((size_t)(n ? n : 1) * sizeof *rank);
    if (!rank)
        return -1;
    for (uint32_t p = 0; p < n; p++)
        rank[order[p]] = p;
    int rc = build_inputs_csr(d, order, rank);
    if (rc == 0)
        rc = build_params(d, order);
    for (uint32_t p = 0; p < n; p++)
        g->request_index[p] = order[p];
    if (rc == 0 && !g->order_was_topological)
        rc = permute(&g->op, sizeof *g->op, order, n) |
             permute(&g->has_params, sizeof *g->has_params, order, n) |
             permute(&g->name, sizeof *g->name, order, n) |
             permute(&g->target, sizeof *g->target, order, n) |
             permute(&g->module, sizeof *g->module, order, n) |
             permute(&g->module_type, sizeof *g->module_type, order, n) |
             permute(&g->output_bytes, sizeof *g->output_bytes, order, n) |
             permute(&g->param_bytes, sizeof *g->param_bytes, order, n) |
             permute(&g->latency_ms, sizeof *g->latency_ms, order, n) |
             permute(&g->mem_latency_ms, sizeof *g->mem_latency_ms, order, n) |
             permute(&g->backward_ms, sizeof *g->backward_ms, order, n) |
             permute(&g->has_backward, sizeof *g->has_backward, order, n) |
             permute(&g->weight_grad_ms, sizeof *g->weight_grad_ms, order, n) |
             permute(&g->has_weight_grad, sizeof *g->has_weight_grad, order, n);
    g->output_node = PARTD_NONE;
    for (uint32_t p = 0; p < n; p++)
        if (g->op[p] == PARTD_OP_OUTPUT)
            g->output_node = p;
    free(rank);
    return rc;
}

/* Runs the reference passes once every node has decoded. Failures are
 * reported in the problem (d->r.oom set when an allocation failed). */
void partd__decode_link(partd_dec *d)
{
    partd_graph *g = &d->req->graph;
    uint32_t n = g->n_nodes;
    partd_strtab *st = &d->req->strings;
    uint32_t *name_node = malloc((size_t)(st->count ? st->count : 1) * sizeof *name_node);
    uint32_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!name_node || !order) {
        partd__decode_oom(d, "/graph/nodes");
        goto out;
    }
    for (uint32_t s = 0; s < st->count; s++)
        name_node[s] = PARTD_NONE;
    check_nodes(d, name_node);
    resolve_inputs(d, name_node, order); /* order is scratch until sorted */
    if (d->r.pb->n_errors || d->r.pb->dropped)
        goto out; /* an order of a graph with unknown references means nothing */
    if (topological_order(d, order) == 0 && build_planning_order(d, order) != 0)
        partd__decode_oom(d, "/graph/nodes");
out:
    free(name_node);
    free(order);
}

