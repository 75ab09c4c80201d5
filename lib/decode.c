/*
 * decode.c - request JSON -> partd_request; see decode.h.
 *
 * Three passes over the parsed tree:
 *   1. shape: every member's type and range, unknown members, names interned,
 *      per-node inputs kept as name ids (request order);
 *   2. references: inputs resolved to nodes, duplicates, parameters;
 *   3. order: cycle check and a stable topological order, then the CSR
 *      arrays of model.h are built in planning order.
 * Every violation is added to the problem (up to its cap) and decoding goes
 * on, so a client sees all of its mistakes at once. Values are read with
 * json_read.h, which words the type and range errors; this file keeps what
 * the members mean.
 */
#include "decode.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enums.h"
#include "decode_training.h"
#include "hash.h"
#include "json_guard.h"
#include "json_read.h"
#include "modules.h"
#include "partd.h"
#include "validate.h"

/* Bounds proven here and relied on by the planners (contract: bytes and
 * every sum partd forms from them are at most 2^53):
 *   - each node's params add up to at most 2^53 (decode_params);
 *   - the output_bytes and param_bytes of all nodes add up to at most 2^53
 *     (check_nodes), so every partition's memory, parameters, received and
 *     boundary bytes, each a sum of distinct nodes' figures, fits too;
 *   - the devices' memory_bytes add up to at most 2^53 (decode_devices).
 * A planner that multiplies a sum by microbatches (<= MAX_MICROBATCHES) or
 * param_factor (<= MAX_PARAM_FACTOR) stays below 2^69 and computes it in
 * 128 bits (pipeline_model.h). Times: every latency is at most
 * MAX_LATENCY_MS, speeds lie in [MIN_SPEED, MAX_SPEED] and the transfer
 * rate is at least MIN_RATE, so a sum of 2^32 nodes' times divided by a
 * speed, and 1000 * 2^53 bytes / rate, stay far below DBL_MAX. */
#define MAX_GRAPH_BYTES PARTD_MAX_BYTES
#define MAX_MICROBATCHES 1024
#define MAX_PARAM_FACTOR 64.0
#define MAX_TIME_LIMIT_MS 86400000.0
#define MAX_LATENCY_MS 1e12
#define MIN_SPEED 1e-9
#define MAX_SPEED 1e9
#define MIN_RATE 1.0
#define MAX_RATE 1e18

typedef struct decoder {
    partd_request *req;
    partd_reader r; /* problem and string table of this request */
    /* request order, per node */
    uint32_t n;
    uint32_t *in_name_off;  /* n + 1 */
    uint32_t *in_name;      /* input name ids as given */
    uint32_t n_in_names;
    uint32_t *par_name_off; /* n + 1 */
    uint32_t *par_name;     /* param name ids */
    int64_t *par_bytes;
    uint32_t n_par_names;
    /* par_seen[string id] = node index + 1 of the last node that named the
     * parameter: the repeat check is one lookup per parameter. */
    uint32_t *par_seen;
    uint32_t par_seen_cap;
    char *modules_canonical;
} decoder;

/* ---- small helpers ------------------------------------------------------ */

static void add(decoder *d, const char *ptr, const char *msg)
{
    partd_problem_add(d->r.pb, ptr, "%s", msg);
}

/* An allocation failed: the request fails with ENOMEM (503, exit 1), never
 * with a 422 nor, worse, as a request decoded without the part that failed. */
static void oom(decoder *d, const char *ptr)
{
    d->r.oom = 1;
    add(d, ptr, "out of memory");
}

/* first[i] = the smallest index whose key equals keys[i] (i itself for a
 * first occurrence). Keys < 0 are "absent" and never repeat. Sorting keeps
 * this O(n log n): lists and device inventories come from clients. */
typedef struct keyed {
    int64_t key;
    uint32_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int first_occurrences(const int64_t *keys, uint32_t n, uint32_t *first)
{
    keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        k[i] = (keyed){keys[i], i};
        first[i] = i;
    }
    if (n)
        qsort(k, n, sizeof *k, cmp_keyed);
    for (uint32_t i = 1; i < n; i++)
        if (k[i].key >= 0 && k[i].key == k[i - 1].key)
            first[k[i].index] = first[k[i - 1].index];
    free(k);
    return 0;
}

/* A list of names (for cut_after, ac_units, fsdp_units): string ids in a new
 * array, duplicates reported. */
static int get_name_list(decoder *d, json_t *v, const char *ptr, uint32_t max,
                         uint32_t **out, uint32_t *n_out)
{
    if (partd_read_array(&d->r, v, ptr, NULL) != 0)
        return -1;
    size_t n = json_array_size(v);
    if (n > max) {
        partd_problem_add(d->r.pb, ptr, "has %zu entries; at most %u are allowed", n, max);
        return -1;
    }
    uint32_t *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids) {
        oom(d, ptr);
        return -1;
    }
    int bad = 0;
    char p[PARTD_POINTER_CAP];
    int64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    uint32_t *first = malloc((n ? n : 1) * sizeof *first);
    for (size_t i = 0; i < n; i++) {
        partd_pointer_index(p, ptr, i);
        ids[i] = partd_read_name(&d->r, json_array_get(v, i), p);
        bad |= ids[i] == PARTD_STR_NONE;
        if (keys)
            keys[i] = ids[i] == PARTD_STR_NONE ? -1 : (int64_t)ids[i];
    }
    if (!keys || !first || first_occurrences(keys, (uint32_t)n, first) != 0) {
        oom(d, ptr);
        bad = 1;
    } else {
        for (size_t i = 0; i < n; i++)
            if (first[i] != i) {
                partd_pointer_index(p, ptr, i);
                partd_problem_add(d->r.pb, p, "repeats entry %u", first[i]);
                bad = 1;
            }
    }
    free(keys);
    free(first);
    *out = ids;
    *n_out = (uint32_t)n;
    return bad ? -1 : 0;
}

/* ---- nodes --------------------------------------------------------------- */

static int alloc_graph(decoder *d, uint32_t n)
{
    partd_graph *g = &d->req->graph;
    g->n_nodes = n;
    size_t k = n ? n : 1;
    g->op = calloc(k, 1);
    g->has_params = calloc(k, 1);
    g->name = calloc(k, sizeof *g->name);
    g->target = calloc(k, sizeof *g->target);
    g->module = calloc(k, sizeof *g->module);
    g->request_index = calloc(k, sizeof *g->request_index);
    g->output_bytes = calloc(k, sizeof *g->output_bytes);
    g->param_bytes = calloc(k, sizeof *g->param_bytes);
    g->latency_ms = calloc(k, sizeof *g->latency_ms);
    g->mem_latency_ms = calloc(k, sizeof *g->mem_latency_ms);
    g->backward_ms = calloc(k, sizeof *g->backward_ms);
    g->has_backward = calloc(k, 1);
    d->in_name_off = calloc(k + 1, sizeof *d->in_name_off);
    d->par_name_off = calloc(k + 1, sizeof *d->par_name_off);
    return g->op && g->has_params && g->name && g->target && g->module &&
                   g->request_index && g->output_bytes && g->param_bytes &&
                   g->latency_ms && g->mem_latency_ms && g->backward_ms &&
                   g->has_backward && d->in_name_off &&
                   d->par_name_off
               ? 0
               : -1;
}

/* Counts inputs and params over all nodes so the flat arrays are allocated
 * once; non-arrays count as zero (reported later). */
static int alloc_flat(decoder *d, json_t *nodes)
{
    size_t n_in = 0, n_par = 0;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *node = json_array_get(nodes, i);
        if (!json_is_object(node))
            continue;
        json_t *in = json_object_get(node, "inputs");
        json_t *par = json_object_get(node, "params");
        if (json_is_array(in))
            n_in += json_array_size(in);
        if (json_is_array(par))
            n_par += json_array_size(par);
    }
    if (n_in >= UINT32_MAX || n_par >= UINT32_MAX)
        return -1;
    d->in_name = calloc(n_in ? n_in : 1, sizeof *d->in_name);
    d->par_name = calloc(n_par ? n_par : 1, sizeof *d->par_name);
    d->par_bytes = calloc(n_par ? n_par : 1, sizeof *d->par_bytes);
    return d->in_name && d->par_name && d->par_bytes ? 0 : -1;
}

static void decode_inputs(decoder *d, json_t *v, const char *base)
{
    char ptr[PARTD_POINTER_CAP], p[PARTD_POINTER_CAP];
    partd_pointer_member(ptr, base, "inputs");
    if (partd_read_array(&d->r, v, ptr, "an array of node names") != 0)
        return;
    for (size_t k = 0; k < json_array_size(v); k++) {
        partd_pointer_index(p, ptr, k);
        uint32_t id = partd_read_name(&d->r, json_array_get(v, k), p);
        if (id != PARTD_STR_NONE)
            d->in_name[d->n_in_names++] = id;
    }
}

/* *total += b; 1 when the sum passes 2^53 (the contract's bound on every
 * sum of bytes), leaving *total unspecified. */
static int add_bytes(int64_t *total, int64_t b)
{
    return __builtin_add_overflow(*total, b, total) || *total > PARTD_MAX_BYTES;
}

/* 1 when the current node already named parameter `id`; records it
 * otherwise. An allocation failure is reported at ptr and counts as seen
 * (the request fails either way). */
static int param_seen(decoder *d, uint32_t id, const char *ptr)
{
    if (id >= d->par_seen_cap) {
        uint32_t cap = d->req->strings.count > id ? d->req->strings.count : id + 1;
        cap = cap < 1024 ? 1024 : cap + cap / 2;
        uint32_t *a = realloc(d->par_seen, (size_t)cap * sizeof *a);
        if (!a) {
            oom(d, ptr);
            return 1;
        }
        memset(a + d->par_seen_cap, 0, (size_t)(cap - d->par_seen_cap) * sizeof *a);
        d->par_seen = a;
        d->par_seen_cap = cap;
    }
    if (d->par_seen[id] == d->n + 1)
        return 1;
    d->par_seen[id] = d->n + 1;
    return 0;
}

static int64_t decode_params(decoder *d, json_t *v, const char *base)
{
    char ptr[PARTD_POINTER_CAP], p[PARTD_POINTER_CAP], q[PARTD_POINTER_CAP];
    static const char *const param_members[] = {"name", "bytes", NULL};
    int64_t total = 0;
    partd_pointer_member(ptr, base, "params");
    if (partd_read_array(&d->r, v, ptr, "an array of {name, bytes}") != 0)
        return 0;
    for (size_t k = 0; k < json_array_size(v); k++) {
        json_t *e = json_array_get(v, k);
        partd_pointer_index(p, ptr, k);
        if (partd_read_object(&d->r, e, p, "an object {name, bytes}") != 0)
            continue;
        partd_read_reject_unknown(&d->r, e, p, param_members, 0);
        json_t *m;
        uint32_t id = PARTD_STR_NONE;
        if ((m = partd_read_required(&d->r, e, p, "name", q)))
            id = partd_read_name(&d->r, m, q);
        int64_t b = 0;
        int ok = 0;
        if ((m = partd_read_required(&d->r, e, p, "bytes", q)))
            ok = partd_read_bytes(&d->r, m, q, 0, &b) == 0;
        if (id != PARTD_STR_NONE && param_seen(d, id, p)) {
            partd_pointer_member(q, p, "name");
            partd_problem_add(d->r.pb, q, "names parameter \"%s\" twice",
                              partd_str(&d->req->strings, id));
            id = PARTD_STR_NONE;
        }
        if (id != PARTD_STR_NONE && ok) {
            d->par_name[d->n_par_names] = id;
            d->par_bytes[d->n_par_names++] = b;
            if (total >= 0 && add_bytes(&total, b)) {
                partd_pointer_member(q, p, "bytes");
                add(d, q, "the node's parameters add up to more than 2^53 bytes here");
                total = -1; /* reported once; the request is rejected */
            }
        }
    }
    return total < 0 ? 0 : total;
}

typedef enum node_member {
    M_UNKNOWN, M_NAME, M_OP, M_TARGET, M_INPUTS, M_OUTPUT_BYTES, M_PARAM_BYTES, M_PARAMS,
    M_LATENCY, M_MEM_LATENCY, M_BACKWARD, M_MODULE, M_META
} node_member;

/* One comparison per member instead of a lookup per possible member: nodes
 * are the bulk of every request. */
static node_member classify_node_member(const char *key)
{
    switch (key[0]) {
    case 'n': return strcmp(key, "name") == 0 ? M_NAME : M_UNKNOWN;
    case 'o':
        if (strcmp(key, "op") == 0)
            return M_OP;
        return strcmp(key, "output_bytes") == 0 ? M_OUTPUT_BYTES : M_UNKNOWN;
    case 't': return strcmp(key, "target") == 0 ? M_TARGET : M_UNKNOWN;
    case 'i': return strcmp(key, "inputs") == 0 ? M_INPUTS : M_UNKNOWN;
    case 'p':
        if (strcmp(key, "param_bytes") == 0)
            return M_PARAM_BYTES;
        return strcmp(key, "params") == 0 ? M_PARAMS : M_UNKNOWN;
    case 'l': return strcmp(key, "latency_ms") == 0 ? M_LATENCY : M_UNKNOWN;
    case 'b': return strcmp(key, "backward_ms") == 0 ? M_BACKWARD : M_UNKNOWN;
    case 'm':
        if (strcmp(key, "mem_latency_ms") == 0)
            return M_MEM_LATENCY;
        if (strcmp(key, "module") == 0)
            return M_MODULE;
        return strcmp(key, "meta") == 0 ? M_META : M_UNKNOWN;
    }
    return M_UNKNOWN;
}

static void decode_node(decoder *d, json_t *node, size_t i)
{
    partd_graph *g = &d->req->graph;
    partd_reader *r = &d->r;
    char base[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    partd_pointer_index(base, "/graph/nodes", i);
    d->n = (uint32_t)i;
    d->in_name_off[i] = d->n_in_names;
    d->par_name_off[i] = d->n_par_names;
    g->name[i] = g->target[i] = g->module[i] = PARTD_STR_NONE;
    g->op[i] = PARTD_OP_CALL_FUNCTION;
    if (partd_read_object(r, node, base, NULL) != 0)
        goto done;
    const char *key;
    json_t *v, *name = NULL, *op = NULL, *param_bytes = NULL, *params = NULL;
    json_object_foreach(node, key, v) {
        node_member m = classify_node_member(key);
        if (m != M_NAME && m != M_OP && m != M_INPUTS)
            partd_pointer_member(ptr, base, key);
        switch (m) {
        case M_NAME: name = v; break;
        case M_OP: op = v; break;
        case M_PARAM_BYTES: param_bytes = v; break;
        case M_PARAMS: params = v; break;
        case M_TARGET: g->target[i] = partd_read_name(r, v, ptr); break;
        case M_MODULE: g->module[i] = partd_read_name(r, v, ptr); break;
        case M_INPUTS: decode_inputs(d, v, base); break;
        case M_OUTPUT_BYTES: partd_read_bytes(r, v, ptr, 0, &g->output_bytes[i]); break;
        case M_LATENCY: partd_read_number(r, v, ptr, 0, 0, MAX_LATENCY_MS, &g->latency_ms[i]); break;
        case M_MEM_LATENCY: partd_read_number(r, v, ptr, 0, 0, MAX_LATENCY_MS, &g->mem_latency_ms[i]); break;
        case M_BACKWARD:
            g->has_backward[i] =
                partd_read_number(r, v, ptr, 0, 0, MAX_LATENCY_MS, &g->backward_ms[i]) == 0;
            break;
        case M_META: partd_read_object(r, v, ptr, NULL); break;
        case M_UNKNOWN: add(d, ptr, "unknown member"); break;
        }
    }
    partd_pointer_member(ptr, base, "name");
    if (!name)
        add(d, ptr, "is required");
    else
        g->name[i] = partd_read_name(r, name, ptr);
    partd_pointer_member(ptr, base, "op");
    int op_code = PARTD_OP_CALL_FUNCTION;
    if (!op)
        add(d, ptr, "is required");
    else
        partd_read_enum(r, op, ptr, partd_op_table.names, &op_code);
    g->op[i] = (uint8_t)op_code;
    if (param_bytes && params) {
        partd_pointer_member(ptr, base, "params");
        add(d, ptr, "give either param_bytes or params, not both");
    } else if (param_bytes) {
        partd_pointer_member(ptr, base, "param_bytes");
        partd_read_bytes(r, param_bytes, ptr, 0, &g->param_bytes[i]);
    } else if (params) {
        g->has_params[i] = 1;
        g->param_bytes[i] = decode_params(d, params, base);
    }
    if ((op_code == PARTD_OP_PLACEHOLDER || op_code == PARTD_OP_GET_ATTR) &&
        d->n_in_names > d->in_name_off[i]) {
        partd_pointer_member(ptr, base, "inputs");
        partd_problem_add(r->pb, ptr, "a %s node reads no other node", partd_op_name((partd_op)op_code));
    }
done:
    d->in_name_off[i + 1] = d->n_in_names;
    d->par_name_off[i + 1] = d->n_par_names;
}

/* Names unique, one output node at most, at least one operation, total bytes
 * bounded. name_node maps string id -> request index. */
static void check_nodes(decoder *d, uint32_t *name_node)
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
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "name");
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
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "op");
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
        if (total >= 0 && add_bytes(&total, g->output_bytes[i]))
            member = "output_bytes";
        else if (total >= 0 && add_bytes(&total, g->param_bytes[i]))
            member = g->has_params[i] ? "params" : "param_bytes";
        if (member) {
            partd_pointer_index(ptr, "/graph/nodes", i);
            partd_pointer_append(ptr, PARTD_POINTER_CAP, member);
            add(d, ptr, "the nodes' output_bytes and parameter bytes add up to more than "
                        "2^53 here");
            total = -1; /* reported once */
        }
    }
    if (g->n_nodes && g->n_ops == 0)
        add(d, "/graph/nodes",
            "the graph has no operation node (call_module, call_function or call_method)");
}

/* Resolves input names to request indices (in place in d->in_name) and
 * removes repeats. */
static void resolve_inputs(decoder *d, const uint32_t *name_node, uint32_t *seen)
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
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
                partd_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->in_name_off[i]);
                partd_problem_add(d->r.pb, ptr, "names no node: \"%s\"",
                                  partd_str(&d->req->strings, d->in_name[k]));
                continue;
            }
            if (g->op[target] == PARTD_OP_OUTPUT) {
                partd_pointer_index(ptr, "/graph/nodes", i);
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
                partd_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->in_name_off[i]);
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

static int given_order_is_topological(const decoder *d)
{
    for (uint32_t i = 0; i < d->req->graph.n_nodes; i++)
        for (uint32_t k = d->in_name_off[i]; k < d->in_name_off[i + 1]; k++)
            if (d->in_name[k] != PARTD_NONE && d->in_name[k] >= i)
                return 0;
    return 1;
}

/* Users CSR in request order, from the resolved inputs. */
static int build_users(const decoder *d, uint32_t n, uint32_t **off_out, uint32_t **idx_out)
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
static void report_cycle(decoder *d, const uint32_t *indegree)
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
        oom(d, "/graph/nodes");
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
        partd_pointer_append(ptr, PARTD_POINTER_CAP, "inputs");
        add(d, ptr, msg);
        free(msg);
    } else {
        oom(d, "/graph/nodes");
    }
    free(seen_at);
    free(path);
}

/* Computes order[plan] = request index. Returns 0, or -1 with a cycle
 * reported (or on ENOMEM). */
static int topological_order(decoder *d, uint32_t *order)
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
        oom(d, "/graph/nodes");
        return -1;
    }
    uint32_t *indegree = calloc(n, sizeof *indegree);
    heap h = {malloc((size_t)n * sizeof(uint32_t)), 0};
    int rc = -1;
    if (!indegree || !h.a) {
        oom(d, "/graph/nodes");
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

static int build_inputs_csr(decoder *d, const uint32_t *order, const uint32_t *rank)
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
static int build_params(decoder *d, const uint32_t *order)
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
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "params");
                partd_pointer_append_index(ptr, PARTD_POINTER_CAP, k - d->par_name_off[r]);
                partd_pointer_append(ptr, PARTD_POINTER_CAP, "bytes");
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

static int build_planning_order(decoder *d, const uint32_t *order)
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
             permute(&g->output_bytes, sizeof *g->output_bytes, order, n) |
             permute(&g->param_bytes, sizeof *g->param_bytes, order, n) |
             permute(&g->latency_ms, sizeof *g->latency_ms, order, n) |
             permute(&g->mem_latency_ms, sizeof *g->mem_latency_ms, order, n) |
             permute(&g->backward_ms, sizeof *g->backward_ms, order, n) |
             permute(&g->has_backward, sizeof *g->has_backward, order, n);
    g->output_node = PARTD_NONE;
    for (uint32_t p = 0; p < n; p++)
        if (g->op[p] == PARTD_OP_OUTPUT)
            g->output_node = p;
    free(rank);
    return rc;
}

/* graph.modules is decoded by the SAC unit (modules.h). */
static void decode_modules(decoder *d, json_t *modules)
{
    int rc = partd_modules_decode(modules, &d->req->strings, d->r.pb, &d->req->modules,
                                  &d->modules_canonical);
    if (rc == PARTD_ENOMEM)
        oom(d, "/graph/modules");
}

static void decode_graph(decoder *d, json_t *graph, const partd_decode_limits *lim)
{
    static const char *const graph_members[] = {"name", "nodes", "modules", NULL};
    if (partd_read_object(&d->r, graph, "/graph", NULL) != 0)
        return;
    partd_read_reject_unknown(&d->r, graph, "/graph", graph_members, 1);
    json_t *name = json_object_get(graph, "name");
    if (name)
        partd_read_string(&d->r, name, "/graph/name");
    json_t *nodes = json_object_get(graph, "nodes");
    if (!nodes) {
        add(d, "/graph/nodes", "is required");
        return;
    }
    if (partd_read_array(&d->r, nodes, "/graph/nodes", NULL) != 0)
        return;
    size_t n = json_array_size(nodes);
    if (n == 0) {
        add(d, "/graph/nodes", "must have at least one node");
        return;
    }
    if (n >= UINT32_MAX / 2 || (lim && lim->max_nodes && n > lim->max_nodes)) {
        partd_problem_add(d->r.pb, "/graph/nodes", "has %zu nodes; this server takes at most %u",
                          n, lim && lim->max_nodes ? lim->max_nodes : UINT32_MAX / 2);
        return;
    }
    if (alloc_graph(d, (uint32_t)n) != 0 || alloc_flat(d, nodes) != 0) {
        oom(d, "/graph/nodes");
        return;
    }
    for (size_t i = 0; i < n; i++)
        decode_node(d, json_array_get(nodes, i), i);
    json_t *modules = json_object_get(graph, "modules");
    if (modules && partd_read_object(&d->r, modules, "/graph/modules", NULL) == 0)
        decode_modules(d, modules);
}

/* Runs the reference passes once every node has decoded. Failures are
 * reported in the problem (d->r.oom set when an allocation failed). */
static void link_graph(decoder *d)
{
    partd_graph *g = &d->req->graph;
    uint32_t n = g->n_nodes;
    partd_strtab *st = &d->req->strings;
    uint32_t *name_node = malloc((size_t)(st->count ? st->count : 1) * sizeof *name_node);
    uint32_t *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!name_node || !order) {
        oom(d, "/graph/nodes");
        goto out;
    }
    for (uint32_t s = 0; s < st->count; s++)
        name_node[s] = PARTD_NONE;
    check_nodes(d, name_node);
    resolve_inputs(d, name_node, order); /* order is scratch until sorted */
    if (d->r.pb->n_errors || d->r.pb->dropped)
        goto out; /* an order of a graph with unknown references means nothing */
    if (topological_order(d, order) == 0 && build_planning_order(d, order) != 0)
        oom(d, "/graph/nodes");
out:
    free(name_node);
    free(order);
}

/* ---- devices and options ------------------------------------------------- */

/* Duplicate device names and logical ids, each named with its first use. */
static void check_device_repeats(decoder *d)
{
    uint32_t n = d->req->n_devices;
    int64_t *keys = malloc(n * sizeof *keys);
    uint32_t *first_name = malloc(n * sizeof *first_name);
    uint32_t *first_id = malloc(n * sizeof *first_id);
    int ok = keys && first_name && first_id;
    for (uint32_t i = 0; ok && i < n; i++)
        keys[i] = d->req->devices[i].name == PARTD_STR_NONE ? -1 : (int64_t)d->req->devices[i].name;
    ok = ok && first_occurrences(keys, n, first_name) == 0;
    for (uint32_t i = 0; ok && i < n; i++)
        keys[i] = d->req->devices[i].logical_id;
    ok = ok && first_occurrences(keys, n, first_id) == 0;
    char ptr[PARTD_POINTER_CAP];
    for (uint32_t i = 0; ok && i < n; i++) {
        const partd_device *dev = &d->req->devices[i];
        if (first_name[i] != i) {
            partd_pointer_index(ptr, "/devices", i);
            partd_pointer_append(ptr, PARTD_POINTER_CAP, "name");
            partd_problem_add(d->r.pb, ptr, "duplicate device name \"%s\" (first at /devices/%u)",
                              partd_str(&d->req->strings, dev->name), first_name[i]);
        }
        if (first_id[i] != i) {
            partd_pointer_index(ptr, "/devices", i);
            partd_pointer_append(ptr, PARTD_POINTER_CAP, "logical_id");
            partd_problem_add(d->r.pb, ptr, "duplicate logical id %lld (also /devices/%u)",
                              (long long)dev->logical_id, first_id[i]);
        }
    }
    if (!ok)
        oom(d, "/devices");
    free(keys);
    free(first_name);
    free(first_id);
}

static void decode_devices(decoder *d, json_t *devices, const partd_decode_limits *lim)
{
    static const char *const device_members[] = {"name", "memory_bytes", "logical_id",
                                                 "speed", NULL};
    if (!devices) {
        add(d, "/devices", "is required");
        return;
    }
    if (partd_read_array(&d->r, devices, "/devices", NULL) != 0)
        return;
    size_t n = json_array_size(devices);
    if (n == 0) {
        add(d, "/devices", "at least one device is required");
        return;
    }
    uint32_t max = lim && lim->max_devices ? lim->max_devices : 65536;
    if (n > max) {
        partd_problem_add(d->r.pb, "/devices", "has %zu devices; at most %u are allowed", n, max);
        return;
    }
    d->req->devices = calloc(n, sizeof *d->req->devices);
    if (!d->req->devices) {
        oom(d, "/devices");
        return;
    }
    d->req->n_devices = (uint32_t)n;
    char base[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        partd_device *dev = &d->req->devices[i];
        json_t *o = json_array_get(devices, i), *v;
        dev->name = PARTD_STR_NONE;
        dev->logical_id = (int64_t)i;
        dev->speed = 1.0;
        partd_pointer_index(base, "/devices", i);
        if (partd_read_object(&d->r, o, base, NULL) != 0)
            continue;
        partd_read_reject_unknown(&d->r, o, base, device_members, 1);
        if ((v = partd_read_required(&d->r, o, base, "name", ptr)))
            dev->name = partd_read_name(&d->r, v, ptr);
        if ((v = partd_read_required(&d->r, o, base, "memory_bytes", ptr)) &&
            partd_read_bytes(&d->r, v, ptr, 1, &dev->memory_bytes) == 0 && total >= 0 &&
            add_bytes(&total, dev->memory_bytes)) {
            /* size_based sums every device's memory */
            add(d, ptr, "the devices' memory_bytes add up to more than 2^53 here");
            total = -1; /* reported once */
        }
        if ((v = json_object_get(o, "logical_id"))) {
            partd_pointer_member(ptr, base, "logical_id");
            partd_read_int(&d->r, v, ptr, 0, INT32_MAX, &dev->logical_id);
        }
        if ((v = json_object_get(o, "speed"))) {
            partd_pointer_member(ptr, base, "speed");
            partd_read_number(&d->r, v, ptr, MIN_SPEED, 0, MAX_SPEED, &dev->speed);
        }
    }
    check_device_repeats(d);
}

static void decode_pipeline_options(decoder *d, json_t *o, uint32_t default_stages)
{
    static const char *const members[] = {"stages", "balance_by", "cut_after", "schedule",
                                          "microbatches", "param_factor", NULL};
    partd_pipeline_options *po = &d->req->options.pipeline;
    partd_reader *r = &d->r;
    json_t *v;
    int e;
    int64_t x;
    if (!o)
        return;
    if (partd_read_object(r, o, "/options/pipeline", NULL) != 0)
        return;
    partd_read_reject_unknown(r, o, "/options/pipeline", members, 0);
    if ((v = json_object_get(o, "stages")) &&
        partd_read_int(r, v, "/options/pipeline/stages", INT64_MIN, INT64_MAX, &x) == 0) {
        if (x < 1 || x > default_stages)
            partd_problem_add(r->pb, "/options/pipeline/stages",
                              "must be between 1 and %u (the smaller of the number of "
                              "devices and of operation nodes), not %lld",
                              default_stages, (long long)x);
        else
            po->stages = (uint32_t)x;
    }
    if ((v = json_object_get(o, "balance_by")) &&
        partd_read_enum(r, v, "/options/pipeline/balance_by", partd_balance_by_table.names, &e) == 0)
        po->balance_by = (partd_balance_by)e;
    if ((v = json_object_get(o, "schedule")) &&
        partd_read_enum(r, v, "/options/pipeline/schedule", partd_schedule_table.names, &e) == 0)
        po->schedule = (partd_schedule)e;
    if ((v = json_object_get(o, "microbatches")) &&
        partd_read_int(r, v, "/options/pipeline/microbatches", 1, MAX_MICROBATCHES, &x) == 0)
        po->microbatches = (uint32_t)x;
    if ((v = json_object_get(o, "param_factor")))
        partd_read_number(r, v, "/options/pipeline/param_factor", 0, 1, MAX_PARAM_FACTOR,
                          &po->param_factor);
    if ((v = json_object_get(o, "cut_after")))
        get_name_list(d, v, "/options/pipeline/cut_after", 1u << 20, &po->cut_after,
                      &po->n_cut_after);
}

static void decode_sac_options(decoder *d, json_t *o)
{
    static const char *const members[] = {"memory_budget_bytes", "world_size", "ac_units",
                                          "fsdp_units", "op_level", "time_limit_ms",
                                          "relative_gap", "frontier_points", NULL};
    partd_sac_options *so = &d->req->options.sac;
    partd_reader *r = &d->r;
    json_t *v;
    int64_t x;
    if (!o)
        return;
    if (partd_read_object(r, o, "/options/sac", NULL) != 0)
        return;
    so->enabled = 1;
    partd_read_reject_unknown(r, o, "/options/sac", members, 0);
    if ((v = json_object_get(o, "memory_budget_bytes")))
        partd_read_bytes(r, v, "/options/sac/memory_budget_bytes", 1, &so->memory_budget_bytes);
    if ((v = json_object_get(o, "world_size")) &&
        partd_read_int(r, v, "/options/sac/world_size", 1, 1 << 20, &x) == 0)
        so->world_size = (uint32_t)x;
    if ((v = json_object_get(o, "ac_units")))
        so->has_ac_units = get_name_list(d, v, "/options/sac/ac_units", 1u << 20,
                                         &so->ac_units, &so->n_ac_units) == 0;
    if ((v = json_object_get(o, "fsdp_units")))
        so->has_fsdp_units = get_name_list(d, v, "/options/sac/fsdp_units", 1u << 20,
                                           &so->fsdp_units, &so->n_fsdp_units) == 0;
    if ((v = json_object_get(o, "op_level")))
        partd_read_bool(r, v, "/options/sac/op_level", &so->op_level);
    if ((v = json_object_get(o, "time_limit_ms")))
        partd_read_number(r, v, "/options/sac/time_limit_ms", 0, 1, MAX_TIME_LIMIT_MS,
                          &so->time_limit_ms);
    if ((v = json_object_get(o, "relative_gap")))
        partd_read_number(r, v, "/options/sac/relative_gap", 0, 0, 1, &so->relative_gap);
    if ((v = json_object_get(o, "frontier_points")) &&
        partd_read_int(r, v, "/options/sac/frontier_points", 2, 100, &x) == 0)
        so->frontier_points = (uint32_t)x;
}

/* options.result: only `detail`. */
static void decode_result_options(decoder *d, json_t *o)
{
    static const char *const members[] = {"detail", NULL};
    json_t *v;
    int e;
    if (!o || partd_read_object(&d->r, o, "/options/result", NULL) != 0)
        return;
    partd_read_reject_unknown(&d->r, o, "/options/result", members, 0);
    if ((v = json_object_get(o, "detail")) &&
        partd_read_enum(&d->r, v, "/options/result/detail", partd_result_detail_table.names,
                        &e) == 0)
        d->req->options.result_detail = (partd_result_detail)e;
}

static void set_default_options(partd_request *req)
{
    partd_options *o = &req->options;
    o->mode = PARTD_MODE_PIPELINE;
    o->transfer_bytes_per_sec = 1e10;
    o->pipeline.balance_by = PARTD_BALANCE_TIME;
    o->pipeline.schedule = PARTD_SCHEDULE_INFERENCE;
    o->pipeline.microbatches = 1;
    o->pipeline.param_factor = 1.0;
    o->sac.world_size = 1;
    o->sac.time_limit_ms = 10000;
    partd_training_defaults(&o->training);
    o->result_detail = PARTD_RESULT_DETAIL_FULL;
}

static void decode_options(decoder *d, json_t *o)
{
    static const char *const members[] = {"mode", "transfer_bytes_per_sec", "pipeline",
                                          "sac", "training", "result", NULL};
    partd_request *req = d->req;
    uint32_t default_stages = req->n_devices < req->graph.n_ops ? req->n_devices
                                                                  : req->graph.n_ops;
    if (default_stages == 0)
        default_stages = 1;
    if (o && partd_read_object(&d->r, o, "/options", NULL) != 0)
        o = NULL;
    if (o) {
        json_t *v;
        int e;
        partd_read_reject_unknown(&d->r, o, "/options", members, 0);
        if ((v = json_object_get(o, "mode")) &&
            partd_read_enum(&d->r, v, "/options/mode", partd_mode_table.names, &e) == 0)
            req->options.mode = (partd_mode)e;
        if ((v = json_object_get(o, "transfer_bytes_per_sec")))
            partd_read_number(&d->r, v, "/options/transfer_bytes_per_sec", MIN_RATE, 0, MAX_RATE,
                              &req->options.transfer_bytes_per_sec);
        decode_pipeline_options(d, json_object_get(o, "pipeline"), default_stages);
        decode_sac_options(d, json_object_get(o, "sac"));
        partd_decode_training_options(&d->r, json_object_get(o, "training"), req);
        decode_result_options(d, json_object_get(o, "result"));
    }
    partd_training_fill_defaults(req);
    if (!req->options.pipeline.stages)
        req->options.pipeline.stages = default_stages;
    if (req->options.sac.enabled && !req->options.sac.memory_budget_bytes) {
        int64_t m = INT64_MAX;
        for (uint32_t i = 0; i < req->n_devices; i++)
            if (req->devices[i].memory_bytes < m)
                m = req->devices[i].memory_bytes;
        req->options.sac.memory_budget_bytes = m == INT64_MAX ? 0 : m;
    }
}

/* ---- entry point --------------------------------------------------------- */

void partd_request_free(partd_request *req)
{
    if (!req)
        return;
    partd_graph *g = &req->graph;
    free(g->op);
    free(g->has_params);
    free(g->name);
    free(g->target);
    free(g->module);
    free(g->request_index);
    free(g->output_bytes);
    free(g->param_bytes);
    free(g->latency_ms);
    free(g->mem_latency_ms);
    free(g->backward_ms);
    free(g->has_backward);
    free(g->in_off);
    free(g->in_idx);
    free(g->user_off);
    free(g->user_idx);
    free(g->par_off);
    free(g->par_idx);
    free(g->param_name);
    free(g->param_size);
    free(req->devices);
    free(req->options.pipeline.cut_after);
    free(req->options.sac.ac_units);
    free(req->options.sac.fsdp_units);
    partd_modules_free(req->modules);
    partd_strtab_free(&req->strings);
    free(req);
}

uint64_t partd_request_model_bytes(const partd_request *req)
{
    const partd_graph *g = &req->graph;
    uint64_t per_node = 3 + 5 * sizeof(uint32_t) + 5 * 8 + 3 * sizeof(uint32_t);
    return (uint64_t)g->n_nodes * per_node +
           (uint64_t)(g->in_off ? g->in_off[g->n_nodes] : 0) * 2 * sizeof(uint32_t) +
           (uint64_t)g->n_params * 12 + req->strings.cap +
           (uint64_t)req->strings.offset_cap * 8 + (uint64_t)req->strings.n_slots * 4 +
           (uint64_t)req->n_devices * sizeof(partd_device);
}

/* Estimate from the parsed tree before converting, so an oversized request
 * is refused before its model is allocated. */
static uint64_t estimate_model_bytes(json_t *root)
{
    json_t *nodes = json_object_get(json_object_get(root, "graph"), "nodes");
    if (!json_is_array(nodes))
        return 0;
    uint64_t bytes = 0;
    size_t n = json_array_size(nodes);
    for (size_t i = 0; i < n; i++) {
        json_t *node = json_array_get(nodes, i);
        json_t *in = json_object_get(node, "inputs");
        json_t *name = json_object_get(node, "name");
        bytes += 120 + (json_is_array(in) ? json_array_size(in) * 12 : 0) +
                 (json_is_string(name) ? json_string_length(name) + 16 : 0);
    }
    return bytes;
}

static void decoder_free(decoder *d)
{
    free(d->in_name_off);
    free(d->in_name);
    free(d->par_name_off);
    free(d->par_name);
    free(d->par_bytes);
    free(d->par_seen);
    free(d->modules_canonical);
}

static int decode_root(decoder *d, json_t *root, const partd_decode_limits *lim)
{
    static const char *const root_members[] = {"graph", "devices", "options", NULL};
    if (!json_is_object(root)) {
        partd_problem_add(d->r.pb, "", "the request must be a JSON object, not %s",
                          partd_json_type_name(root));
        return PARTD_EINVALID;
    }
    if (lim && lim->max_model_bytes) {
        uint64_t est = estimate_model_bytes(root);
        if (est > lim->max_model_bytes) {
            partd_problem_set(d->r.pb, 422, "model-too-large", "Model too large",
                              "the decoded model would take about %llu bytes; this server "
                              "takes at most %llu (--max-model-bytes)",
                              (unsigned long long)est,
                              (unsigned long long)lim->max_model_bytes);
            partd_problem_add(d->r.pb, "/graph/nodes", "about %llu bytes when decoded",
                              (unsigned long long)est);
            return PARTD_ETOOBIG;
        }
    }
    partd_read_reject_unknown(&d->r, root, "", root_members, 1);
    json_t *graph = json_object_get(root, "graph");
    if (!graph)
        add(d, "/graph", "is required");
    else
        decode_graph(d, graph, lim);
    decode_devices(d, json_object_get(root, "devices"), lim);
    if (d->req->graph.n_nodes && !d->r.oom) /* a failed allocation leaves arrays NULL */
        link_graph(d);
    decode_options(d, json_object_get(root, "options"));
    if (d->r.oom)
        return PARTD_ENOMEM;
    if (d->r.pb->n_errors || d->r.pb->dropped)
        return PARTD_EINVALID;
    /* The request is well formed: the checks that need all of it. */
    return partd_request_validate(d->req, d->r.pb);
}

/* The parsed body, or NULL with err filled; err says out of memory when an
 * allocation failed anywhere in the parse (jansson itself reports some of
 * them as syntax errors, and must not go on after one: json_guard.h). */
static json_t *parse_body(const char *body, size_t len, json_error_t *err)
{
    partd_json_guard_begin();
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, err);
    if (partd_json_guard_end()) {
        json_decref(root);
        root = NULL;
        err->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
    }
    return root;
}

int partd_request_decode(const char *body, size_t len, const partd_decode_limits *lim,
                         partd_request **out, partd_problem *pb)
{
    *out = NULL;
    json_error_t err;
    json_t *root = parse_body(body, len, &err);
    if (!root && json_error_code(&err) == json_error_out_of_memory) {
        partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                          "the server ran out of memory parsing the request");
        return PARTD_ENOMEM;
    }
    if (!root) {
        partd_problem_set(pb, 400, "malformed-json", "Malformed JSON",
                          "the body is not valid JSON: %s (line %d, column %d, byte %d)",
                          err.text, err.line, err.column, err.position);
        return PARTD_EMALFORMED;
    }
    partd_request *req = calloc(1, sizeof *req);
    if (!req) {
        json_decref(root);
        partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                          "the server ran out of memory decoding the request");
        return PARTD_ENOMEM;
    }
    partd_strtab_init(&req->strings);
    set_default_options(req);
    req->graph.output_node = PARTD_NONE;
    decoder d = {.req = req, .r = {.pb = pb, .strings = &req->strings}};
    int rc = decode_root(&d, root, lim);
    json_decref(root);
    if (rc == PARTD_OK && partd_request_hash(req, d.modules_canonical) != PARTD_OK)
        rc = PARTD_ENOMEM;
    decoder_free(&d);
    if (rc != PARTD_OK) {
        if (rc == PARTD_EINVALID)
            partd_problem_set(pb, 422, "invalid-request", "Invalid request",
                              "the request has %u error%s%s", pb->n_errors + pb->dropped,
                              pb->n_errors + pb->dropped == 1 ? "" : "s",
                              pb->dropped ? " (the first 100 are listed)" : "");
        else if (rc == PARTD_ENOMEM)
            partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                              "the server ran out of memory decoding the request");
        partd_request_free(req);
        return rc;
    }
    *out = req;
    return PARTD_OK;
}

/* ---- temporary buffering decoder (replaced by the streaming one) -------- */

struct partd_decoder {
    partd_decode_limits limits;
    int has_limits;
    partd_problem *pb;
    char *buf;
    size_t len, cap;
    int rc;
};

partd_decoder *partd_decoder_new(const partd_decode_limits *limits, partd_problem *problem)
{
    partd_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    if (limits) {
        d->limits = *limits;
        d->has_limits = 1;
    }
    d->pb = problem;
    return d;
}

int partd_decoder_feed(partd_decoder *d, const char *chunk, size_t len)
{
    if (d->rc)
        return d->rc;
    if (d->len + len + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4096;
        while (cap < d->len + len + 1)
            cap *= 2;
        char *p = realloc(d->buf, cap);
        if (!p)
            return d->rc = PARTD_ENOMEM;
        d->buf = p;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, chunk, len);
    d->len += len;
    return PARTD_OK;
}

int partd_decoder_finish(partd_decoder *d, partd_request **out)
{
    *out = NULL;
    if (d->rc)
        return d->rc;
    return partd_request_decode(d->buf ? d->buf : "", d->len, d->has_limits ? &d->limits : NULL,
                                out, d->pb);
}

void partd_decoder_free(partd_decoder *d)
{
    if (d)
        free(d->buf);
    free(d);
}
