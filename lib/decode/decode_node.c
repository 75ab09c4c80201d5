/*
 * decode_node.c - the nodes of graph.nodes, decoded from the parser's
 * events; see decode_graph.h.
 *
 * graph.nodes is the bulk of every request and never becomes a tree: each
 * member of a node is checked as its value arrives and written to the
 * tables of model.h. The checks and their words are those of the tree
 * decoder this replaced, in the same order: the node's members in document
 * order (target, module, inputs, bytes, times, meta, unknown members), then
 * name, op and params or param_bytes. Names are interned in that order too
 * (name after the members, parameter names last), so string ids match.
 * For that, name, op, param_bytes and params are kept (small) until the
 * node ends. Once a limit is passed the nodes are only counted (the
 * request is refused with one error that names the total).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_graph.h"
#include "partd/enums.h"
#include "partd/partd.h"

static const char *const member_names[] = {
    [PARTD_GM_M_TARGET] = "target", [PARTD_GM_M_MODULE] = "module", [PARTD_GM_M_INPUTS] = "inputs",
    [PARTD_GM_M_OUTPUT_BYTES] = "output_bytes", [PARTD_GM_M_LATENCY] = "latency_ms",
    [PARTD_GM_M_MEM_LATENCY] = "mem_latency_ms", [PARTD_GM_M_BACKWARD] = "backward_ms",
    [PARTD_GM_M_WEIGHT_GRAD] = "weight_grad_ms", [PARTD_GM_M_META] = "meta",
    [PARTD_GM_M_MODULE_TYPE] = "module_type",
};

/* ---- small helpers ------------------------------------------------------ */

static int grow(void *array_ptr, size_t size, uint32_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    if (c > UINT32_MAX)
        return -1;
    void **a = array_ptr;
    void *p = realloc(*a, c * size);
    if (!p)
        return -1;
    *a = p;
    *cap = (uint32_t)c;
    return 0;
}

/* Copies len bytes (at most keep) to the scratch, NUL-terminated. */
static int keep(partd_gstream *gs, const char *s, size_t len, size_t keep_max, uint32_t *off)
{
    size_t n = len < keep_max ? len : keep_max;
    if (gs->scratch_used + n + 1 > gs->scratch_cap) {
        size_t cap = gs->scratch_cap ? gs->scratch_cap : 4096;
        while (cap < gs->scratch_used + n + 1)
            cap *= 2;
        char *p = realloc(gs->scratch, cap);
        if (!p)
            return -1;
        gs->scratch = p;
        gs->scratch_cap = cap;
    }
    *off = (uint32_t)gs->scratch_used;
    memcpy(gs->scratch + gs->scratch_used, s, n);
    gs->scratch[gs->scratch_used + n] = '\0';
    gs->scratch_used += n + 1;
    return 0;
}

/* A name longer than names can be is kept only by its length (the error
 * says how long it is); an enum's value is kept up to keep_max bytes (the
 * error quotes that much of it). */
static int capture_value(partd_gstream *gs, const partd_scalar *v, size_t keep_max, partd_capture *c)
{
    *c = (partd_capture){.type = v->type, .len = v->len, .i = v->i, .d = v->d, .off = UINT32_MAX};
    if (v->type == JSON_STRING && (v->len <= keep_max || keep_max < PARTD_NAME_MAX_BYTES))
        return keep(gs, v->s, v->len, keep_max, &c->off);
    return 0;
}

/* A name kept until its node ends, when it is interned: its index entry
 * is fetched meanwhile. */
static int capture_name(partd_gstream *gs, const partd_scalar *v, partd_capture *c)
{
    if (capture_value(gs, v, PARTD_NAME_MAX_BYTES, c) != 0)
        return -1;
    if (c->off != UINT32_MAX)
        c->hint = partd_strtab_prefetch(&gs->d->req->strings, v->s, v->len);
    return 0;
}

static void scalar_of(const partd_gstream *gs, const partd_capture *c, partd_scalar *v)
{
    *v = (partd_scalar){.type = c->type, .len = c->len, .i = c->i, .d = c->d};
    if (c->type == JSON_STRING)
        v->s = c->off == UINT32_MAX ? "" : gs->scratch + c->off;
}

/* key (len bytes) is the literal: a compare the compiler inlines. */
#define IS(lit) (len == sizeof lit - 1 && memcmp(key, lit, sizeof lit - 1) == 0)

/* Every key partd__decode_node_classify knows: the hint of an unknown one. */
const char *const partd__decode_node_members[] = {
    "name", "op", "target", "inputs", "output_bytes", "param_bytes", "params", "latency_ms",
    "mem_latency_ms", "backward_ms", "weight_grad_ms", "module", "module_type", "meta", NULL};

partd_gmember partd__decode_node_classify(const char *key, size_t len)
{
    switch (key[0]) {
    case 'n': return IS("name") ? PARTD_GM_M_NAME : PARTD_GM_M_UNKNOWN;
    case 'o': return IS("op") ? PARTD_GM_M_OP : IS("output_bytes") ? PARTD_GM_M_OUTPUT_BYTES
                                                                  : PARTD_GM_M_UNKNOWN;
    case 't': return IS("target") ? PARTD_GM_M_TARGET : PARTD_GM_M_UNKNOWN;
    case 'i': return IS("inputs") ? PARTD_GM_M_INPUTS : PARTD_GM_M_UNKNOWN;
    case 'p': return IS("param_bytes") ? PARTD_GM_M_PARAM_BYTES
                     : IS("params")    ? PARTD_GM_M_PARAMS
                                       : PARTD_GM_M_UNKNOWN;
    case 'l': return IS("latency_ms") ? PARTD_GM_M_LATENCY : PARTD_GM_M_UNKNOWN;
    case 'w': return IS("weight_grad_ms") ? PARTD_GM_M_WEIGHT_GRAD : PARTD_GM_M_UNKNOWN;
    case 'b': return IS("backward_ms") ? PARTD_GM_M_BACKWARD : PARTD_GM_M_UNKNOWN;
    case 'm': return IS("mem_latency_ms") ? PARTD_GM_M_MEM_LATENCY
                     : IS("module")       ? PARTD_GM_M_MODULE
                     : IS("module_type")  ? PARTD_GM_M_MODULE_TYPE
                     : IS("meta")         ? PARTD_GM_M_META
                                          : PARTD_GM_M_UNKNOWN;
    }
    return PARTD_GM_M_UNKNOWN;
}

#undef IS

/* ---- node tables ---------------------------------------------------------- */

static int resize(void *array_ptr, size_t size, size_t count)
{
    void **a = array_ptr;
    void *p = realloc(*a, count * size);
    if (!p)
        return -1;
    *a = p;
    return 0;
}

/* Room for `need` nodes in every per-node array. */
static int grow_nodes(partd_gstream *gs, uint32_t need)
{
    if (need <= gs->cap)
        return 0;
    size_t c = gs->cap ? gs->cap : 1024;
    while (c < need)
        c *= 2;
    partd_graph *g = &gs->d->req->graph;
    partd_dec *d = gs->d;
#define RESIZE(a, extra) resize(&(a), sizeof *(a), c + (extra))
    if (RESIZE(g->op, 0) || RESIZE(g->has_params, 0) || RESIZE(g->name, 0) ||
        RESIZE(g->target, 0) || RESIZE(g->module, 0) || RESIZE(g->module_type, 0) || RESIZE(g->request_index, 0) ||
        RESIZE(g->output_bytes, 0) || RESIZE(g->param_bytes, 0) || RESIZE(g->latency_ms, 0) ||
        RESIZE(g->mem_latency_ms, 0) || RESIZE(g->backward_ms, 0) ||
        RESIZE(g->has_backward, 0) || RESIZE(g->weight_grad_ms, 0) ||
        RESIZE(g->has_weight_grad, 0) || RESIZE(d->in_name_off, 1) || RESIZE(d->par_name_off, 1))
        return -1;
#undef RESIZE
    gs->cap = (uint32_t)c;
    return 0;
}

/* A limit was passed: the request will be refused with one error, so the
 * nodes are only counted from here on. */
static void stop_storing(partd_gstream *gs)
{
    partd_graph *g = &gs->d->req->graph;
    gs->storing = 0;
    partd_problem_free(&gs->pb_nodes);
    partd_problem_init(&gs->pb_nodes);
    void *arrays[] = {g->op, g->has_params, g->name, g->target, g->module, g->module_type,
                      g->request_index,
                      g->output_bytes, g->param_bytes, g->latency_ms, g->mem_latency_ms,
                      g->backward_ms, g->has_backward, g->weight_grad_ms, g->has_weight_grad};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++)
        free(arrays[k]);
    g->op = g->has_params = g->has_backward = g->has_weight_grad = NULL;
    g->name = g->target = g->module = g->module_type = g->request_index = NULL;
    g->output_bytes = g->param_bytes = NULL;
    g->latency_ms = g->mem_latency_ms = g->backward_ms = g->weight_grad_ms = NULL;
    partd__decode_release(gs->d);
    gs->cap = gs->in_cap = gs->par_cap = 0;
}

static int over_limits(const partd_gstream *gs)
{
    const partd_decode_limits *lim = gs->lim;
    return gs->n >= UINT32_MAX / 2 || (lim && lim->max_nodes && gs->n > lim->max_nodes) ||
           (lim && lim->max_model_bytes && gs->estimate > lim->max_model_bytes);
}

/* Node gs->n - 1 starts (its value is v). */
partd_js_action partd__decode_node_start(partd_gstream *gs, const partd_scalar *v)
{
    partd_dec *d = gs->d;
    gs->n++;
    gs->estimate += 120;
    if (gs->storing && over_limits(gs))
        stop_storing(gs);
    gs->has_name_m = gs->has_op = gs->has_pb = gs->has_params = gs->inputs_array = 0;
    gs->n_inputs = 0;
    gs->scratch_used = 0;
    gs->n_pe = gs->n_unk = 0;
    if (!gs->storing)
        return v->type == JSON_OBJECT ? partd_gs_push(gs, PARTD_GCTX_NODE) : PARTD_JS_SKIP;
    uint32_t i = (uint32_t)(gs->n - 1);
    if (grow_nodes(gs, i + 1) != 0)
        return PARTD_JS_NOMEM;
    partd_graph *g = &d->req->graph;
    d->n = i;
    d->in_name_off[i] = d->n_in_names;
    d->par_name_off[i] = d->n_par_names;
    g->name[i] = g->target[i] = g->module[i] = g->module_type[i] = PARTD_STR_NONE;
    g->op[i] = PARTD_OP_CALL_FUNCTION;
    g->has_params[i] = g->has_backward[i] = g->has_weight_grad[i] = 0;
    g->output_bytes[i] = g->param_bytes[i] = 0;
    g->latency_ms[i] = g->mem_latency_ms[i] = g->backward_ms[i] = g->weight_grad_ms[i] = 0;
    g->request_index[i] = 0;
    if (v->type == JSON_OBJECT)
        return partd_gs_push(gs, PARTD_GCTX_NODE);
    char ptr[PARTD_POINTER_CAP];
    partd_node_pointer(gs, ptr, NULL);
    partd__json_read_scalar_expect(&d->r, v, ptr, JSON_OBJECT, "an object");
    d->in_name_off[i + 1] = d->n_in_names;
    d->par_name_off[i + 1] = d->n_par_names;
    return PARTD_JS_SKIP;
}

/* Fast paths: what the partd_scalar_* getters give for a value they
 * accept, without the pointer they would report at (built only when a
 * value is refused, by the getter itself). */
static int fast_name(partd_gstream *gs, const partd_capture *c, uint32_t *id)
{
    if (c->type != JSON_STRING || c->off == UINT32_MAX || c->len == 0)
        return 0;
    /* kept, so at most PARTD_NAME_MAX_BYTES; a NUL never gets here */
    *id = partd_strtab_intern_hinted(&gs->d->req->strings, gs->scratch + c->off, c->len,
                                     c->hint);
    if (*id == PARTD_STR_NONE)
        gs->d->r.oom = 1;
    return 1;
}

static int fast_bytes(const partd_capture *c, int64_t *out)
{
    if (c->type != JSON_INTEGER || c->i < 0 || c->i > PARTD_MAX_BYTES)
        return 0;
    *out = c->i;
    return 1;
}

static int fast_time(const partd_scalar *v, double *out)
{
    double x = v->type == JSON_INTEGER ? (double)v->i : v->type == JSON_REAL ? v->d : -1;
    if (!(x >= 0 && x <= PARTD_DECODE_MAX_LATENCY_MS))
        return 0;
    *out = x;
    return 1;
}

static int fast_op(const partd_gstream *gs, int *op)
{
    if (gs->op.type != JSON_STRING || gs->op.off == UINT32_MAX)
        return 0;
    const char *s = gs->scratch + gs->op.off;
    for (int k = 0; partd_enums_op_table.names[k]; k++)
        if (partd_enums_op_table.names[k][0] == s[0] && strcmp(partd_enums_op_table.names[k], s) == 0) {
            *op = k;
            return 1;
        }
    return 0;
}

/* A member value the getters would accept, stored without a pointer: 1,
 * or 0 for the getter (which words the error). */
static int member_fast(partd_gstream *gs, partd_gmember m, const partd_scalar *v, uint32_t i)
{
    partd_graph *g = &gs->d->req->graph;
    switch (m) {
    case PARTD_GM_M_TARGET:
    case PARTD_GM_M_MODULE:
    case PARTD_GM_M_MODULE_TYPE:
        if (v->type != JSON_STRING || v->len == 0 || v->len > PARTD_NAME_MAX_BYTES)
            return 0;
        uint32_t id = partd_strtab_intern(&gs->d->req->strings, v->s, v->len);
        gs->d->r.oom |= id == PARTD_STR_NONE;
        *(m == PARTD_GM_M_TARGET ? &g->target[i]
          : m == PARTD_GM_M_MODULE ? &g->module[i]
                                   : &g->module_type[i]) = id;
        return 1;
    case PARTD_GM_M_OUTPUT_BYTES:
        if (v->type != JSON_INTEGER || v->i < 0 || v->i > PARTD_MAX_BYTES)
            return 0;
        g->output_bytes[i] = v->i;
        return 1;
    case PARTD_GM_M_LATENCY: return fast_time(v, &g->latency_ms[i]);
    case PARTD_GM_M_MEM_LATENCY: return fast_time(v, &g->mem_latency_ms[i]);
    case PARTD_GM_M_BACKWARD: return (g->has_backward[i] = (uint8_t)fast_time(v, &g->backward_ms[i]));
    case PARTD_GM_M_WEIGHT_GRAD:
        return (g->has_weight_grad[i] = (uint8_t)fast_time(v, &g->weight_grad_ms[i]));
    case PARTD_GM_M_META: return v->type == JSON_OBJECT;
    default: return 0;
    }
}

/* 1 when the current node already named parameter `id`; records it
 * otherwise. An allocation failure counts as seen (the request fails). */
static int param_seen(partd_dec *d, uint32_t id)
{
    if (id >= d->par_seen_cap) {
        uint32_t cap = d->req->strings.count > id ? d->req->strings.count : id + 1;
        cap = cap < 1024 ? 1024 : cap + cap / 2;
        uint32_t *a = realloc(d->par_seen, (size_t)cap * sizeof *a);
        if (!a) {
            d->r.oom = 1;
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

/* The kept params of the node, as the tree decoder read them. */
static int64_t decode_params(partd_gstream *gs)
{
    partd_dec *d = gs->d;
    char ptr[PARTD_POINTER_CAP], p[PARTD_POINTER_CAP], q[PARTD_POINTER_CAP];
    int64_t total = 0;
    partd_node_pointer(gs, ptr, "params");
    partd_scalar sv = {.type = gs->params_type};
    if (partd__json_read_scalar_expect(&d->r, &sv, ptr, JSON_ARRAY, "an array of {name, bytes}") != 0)
        return 0;
    size_t need = (size_t)d->n_par_names + gs->n_pe;
    if (need > gs->par_cap) {
        size_t c = gs->par_cap ? gs->par_cap : 1024;
        while (c < need)
            c *= 2;
        if (c >= UINT32_MAX || resize(&d->par_name, sizeof *d->par_name, c) ||
            resize(&d->par_bytes, sizeof *d->par_bytes, c)) {
            d->r.oom = 1;
            return 0;
        }
        gs->par_cap = (uint32_t)c;
    }
    for (uint32_t k = 0; k < gs->n_pe; k++) {
        const partd_param_entry *e = &gs->pe[k];
        uint32_t id;
        int64_t b;
        if (e->type == JSON_OBJECT && !e->n_unk && e->has_name && e->has_bytes &&
            fast_bytes(&e->bytes, &b) && fast_name(gs, &e->name, &id)) {
            if (id == PARTD_STR_NONE)
                return 0; /* out of memory */
            if (!param_seen(d, id)) {
                d->par_name[d->n_par_names] = id;
                d->par_bytes[d->n_par_names++] = b;
                if (total < 0 || !partd__decode_add_bytes(&total, b))
                    continue;
                total = -1; /* reported once; the request is rejected */
            }
            if (d->r.oom)
                return 0;
            /* a repeat or a sum too large: the words of the slow path */
            partd_pointer_index(p, ptr, k);
            partd_pointer_member(q, p, total < 0 ? "bytes" : "name");
            if (total < 0)
                partd__decode_add(d, q, "the node's parameters add up to more than 2^53 bytes here");
            else
                partd_problem_add(d->r.pb, q, "names parameter \"%s\" twice",
                                  partd_str(&d->req->strings, id));
            continue;
        }
        partd_pointer_index(p, ptr, k);
        sv = (partd_scalar){.type = e->type};
        if (partd__json_read_scalar_expect(&d->r, &sv, p, JSON_OBJECT, "an object {name, bytes}") != 0)
            continue;
        for (uint32_t u = 0; u < e->n_unk; u++) {
            static const char *const members[] = {"name", "bytes", NULL};
            const char *key = gs->scratch + gs->unk[e->unk_first + u];
            partd_pointer_member(q, p, key);
            partd_json_read_unknown(d->r.pb, q, key, members);
        }
        id = PARTD_STR_NONE;
        partd_pointer_member(q, p, "name");
        if (!e->has_name)
            partd_problem_add(d->r.pb, q, "is required");
        else {
            scalar_of(gs, &e->name, &sv);
            id = partd__json_read_scalar_name(&d->r, &sv, q);
        }
        b = 0;
        int ok = 0;
        partd_pointer_member(q, p, "bytes");
        if (!e->has_bytes)
            partd_problem_add(d->r.pb, q, "is required");
        else {
            scalar_of(gs, &e->bytes, &sv);
            ok = partd__json_read_scalar_bytes(&d->r, &sv, q, 0, &b) == 0;
        }
        if (id != PARTD_STR_NONE && param_seen(d, id)) {
            partd_pointer_member(q, p, "name");
            partd_problem_add(d->r.pb, q, "names parameter \"%s\" twice",
                              partd_str(&d->req->strings, id));
            id = PARTD_STR_NONE;
        }
        if (id != PARTD_STR_NONE && ok) {
            d->par_name[d->n_par_names] = id;
            d->par_bytes[d->n_par_names++] = b;
            if (total >= 0 && partd__decode_add_bytes(&total, b)) {
                partd_pointer_member(q, p, "bytes");
                partd__decode_add(d, q, "the node's parameters add up to more than 2^53 bytes here");
                total = -1; /* reported once; the request is rejected */
            }
        }
    }
    return total < 0 ? 0 : total;
}

/* The node's object ended: what needed all of its members. */
int partd__decode_node_end(partd_gstream *gs)
{
    gs->estimate += gs->inputs_array ? gs->n_inputs * 12 : 0;
    gs->estimate += gs->has_name_m && gs->name.type == JSON_STRING ? gs->name.len + 16 : 0;
    if (!gs->storing)
        return 0;
    partd_dec *d = gs->d;
    partd_graph *g = &d->req->graph;
    partd_reader *r = &d->r;
    uint32_t i = d->n;
    char ptr[PARTD_POINTER_CAP];
    partd_scalar sv;
    if (!gs->has_name_m) {
        partd_node_pointer(gs, ptr, "name");
        partd__decode_add(d, ptr, "is required");
    } else if (!fast_name(gs, &gs->name, &g->name[i])) {
        partd_node_pointer(gs, ptr, "name");
        scalar_of(gs, &gs->name, &sv);
        g->name[i] = partd__json_read_scalar_name(r, &sv, ptr);
    }
    int op_code = PARTD_OP_CALL_FUNCTION;
    if (!gs->has_op) {
        partd_node_pointer(gs, ptr, "op");
        partd__decode_add(d, ptr, "is required");
    } else if (!fast_op(gs, &op_code)) {
        partd_node_pointer(gs, ptr, "op");
        scalar_of(gs, &gs->op, &sv);
        partd__json_read_scalar_enum(r, &sv, ptr, partd_enums_op_table.names, &op_code);
    }
    g->op[i] = (uint8_t)op_code;
    if (gs->has_pb && gs->has_params) {
        partd_node_pointer(gs, ptr, "params");
        partd__decode_add(d, ptr, "give either param_bytes or params, not both");
    } else if (gs->has_pb && !fast_bytes(&gs->param_bytes, &g->param_bytes[i])) {
        partd_node_pointer(gs, ptr, "param_bytes");
        scalar_of(gs, &gs->param_bytes, &sv);
        partd__json_read_scalar_bytes(r, &sv, ptr, 0, &g->param_bytes[i]);
    } else if (gs->has_params) {
        g->has_params[i] = 1;
        g->param_bytes[i] = decode_params(gs);
    }
    if ((op_code == PARTD_OP_PLACEHOLDER || op_code == PARTD_OP_GET_ATTR) &&
        d->n_in_names > d->in_name_off[i]) {
        partd_node_pointer(gs, ptr, "inputs");
        partd_problem_add(r->pb, ptr, "a %s node reads no other node",
                          partd_op_name((partd_op)op_code));
    }
    d->in_name_off[i + 1] = d->n_in_names;
    d->par_name_off[i + 1] = d->n_par_names;
    return r->oom ? -1 : 0;
}

/* ---- member events --------------------------------------------------------------- */

partd_js_action partd__decode_node_member(partd_gstream *gs, const partd_scalar *v)
{
    partd_dec *d = gs->d;
    partd_reader *r = &d->r;
    partd_graph *g = &d->req->graph;
    uint32_t i = d->n;
    partd_gmember m = gs->next;
    char ptr[PARTD_POINTER_CAP];
    if (m == PARTD_GM_M_NAME) {
        gs->has_name_m = 1;
        if (!gs->storing) {
            gs->name = (partd_capture){.type = v->type, .len = v->len};
            return PARTD_JS_SKIP;
        }
        return capture_name(gs, v, &gs->name) ? PARTD_JS_NOMEM : PARTD_JS_SKIP;
    }
    if (m == PARTD_GM_M_INPUTS && v->type == JSON_ARRAY) {
        gs->inputs_array = 1;
        return partd_gs_push(gs, PARTD_GCTX_INPUTS);
    }
    if (!gs->storing)
        return PARTD_JS_SKIP;
    switch (m) {
    case PARTD_GM_M_OP:
        gs->has_op = 1;
        return capture_value(gs, v, 64, &gs->op) ? PARTD_JS_NOMEM : PARTD_JS_SKIP;
    case PARTD_GM_M_PARAM_BYTES:
        gs->has_pb = 1;
        gs->param_bytes = (partd_capture){.type = v->type, .i = v->i, .d = v->d};
        return PARTD_JS_SKIP;
    case PARTD_GM_M_PARAMS:
        gs->has_params = 1;
        gs->params_type = v->type;
        return v->type == JSON_ARRAY ? partd_gs_push(gs, PARTD_GCTX_PARAMS) : PARTD_JS_SKIP;
    case PARTD_GM_M_UNKNOWN:
    case PARTD_GM_M_NAME:
        return PARTD_JS_SKIP; /* reported with its key */
    default:
        break;
    }
    if (member_fast(gs, m, v, i))
        return d->r.oom ? PARTD_JS_NOMEM : PARTD_JS_SKIP;
    partd_node_pointer(gs, ptr, member_names[m]);
    switch (m) {
    case PARTD_GM_M_TARGET: g->target[i] = partd__json_read_scalar_name(r, v, ptr); break;
    case PARTD_GM_M_MODULE: g->module[i] = partd__json_read_scalar_name(r, v, ptr); break;
    case PARTD_GM_M_MODULE_TYPE: g->module_type[i] = partd__json_read_scalar_name(r, v, ptr); break;
    case PARTD_GM_M_INPUTS: partd__json_read_scalar_expect(r, v, ptr, JSON_ARRAY, "an array of node names"); break;
    case PARTD_GM_M_OUTPUT_BYTES: partd__json_read_scalar_bytes(r, v, ptr, 0, &g->output_bytes[i]); break;
    case PARTD_GM_M_LATENCY: partd__json_read_scalar_number(r, v, ptr, 0, 0, PARTD_DECODE_MAX_LATENCY_MS, &g->latency_ms[i]); break;
    case PARTD_GM_M_MEM_LATENCY:
        partd__json_read_scalar_number(r, v, ptr, 0, 0, PARTD_DECODE_MAX_LATENCY_MS, &g->mem_latency_ms[i]);
        break;
    case PARTD_GM_M_BACKWARD:
        g->has_backward[i] =
            partd__json_read_scalar_number(r, v, ptr, 0, 0, PARTD_DECODE_MAX_LATENCY_MS, &g->backward_ms[i]) == 0;
        break;
    case PARTD_GM_M_WEIGHT_GRAD:
        g->has_weight_grad[i] = partd__json_read_scalar_number(r, v, ptr, 0, 0, PARTD_DECODE_MAX_LATENCY_MS,
                                                               &g->weight_grad_ms[i]) == 0;
        break;
    case PARTD_GM_M_META: partd__json_read_scalar_expect(r, v, ptr, JSON_OBJECT, "an object"); break;
    default: break;
    }
    return r->oom ? PARTD_JS_NOMEM : PARTD_JS_SKIP;
}

partd_js_action partd__decode_node_input(partd_gstream *gs, const partd_scalar *v)
{
    uint64_t k = gs->n_inputs++;
    if (!gs->storing)
        return PARTD_JS_SKIP;
    partd_dec *d = gs->d;
    uint32_t id;
    if (v->type == JSON_STRING && v->len && v->len <= PARTD_NAME_MAX_BYTES) {
        /* the common case, without a pointer (\u0000 never gets here) */
        id = partd_strtab_intern(&d->req->strings, v->s, v->len);
        if (id == PARTD_STR_NONE)
            return PARTD_JS_NOMEM;
    } else {
        char ptr[PARTD_POINTER_CAP], p[PARTD_POINTER_CAP];
        partd_node_pointer(gs, ptr, "inputs");
        partd_pointer_index(p, ptr, (size_t)k);
        id = partd__json_read_scalar_name(&d->r, v, p);
        if (d->r.oom)
            return PARTD_JS_NOMEM;
        if (id == PARTD_STR_NONE)
            return PARTD_JS_SKIP;
    }
    if (grow(&d->in_name, sizeof *d->in_name, &gs->in_cap, (size_t)d->n_in_names + 1) != 0 ||
        d->n_in_names == UINT32_MAX - 1)
        return PARTD_JS_NOMEM;
    d->in_name[d->n_in_names++] = id;
    return PARTD_JS_SKIP;
}

partd_js_action partd__decode_node_param_start(partd_gstream *gs, const partd_scalar *v)
{
    if (grow(&gs->pe, sizeof *gs->pe, &gs->pe_cap, (size_t)gs->n_pe + 1) != 0)
        return PARTD_JS_NOMEM;
    gs->pe[gs->n_pe++] = (partd_param_entry){.type = v->type, .unk_first = gs->n_unk};
    return v->type == JSON_OBJECT ? partd_gs_push(gs, PARTD_GCTX_PARAM) : PARTD_JS_SKIP;
}

partd_js_action partd__decode_node_param_member(partd_gstream *gs, const partd_scalar *v)
{
    partd_param_entry *e = &gs->pe[gs->n_pe - 1];
    if (gs->next == PARTD_GM_P_NAME) {
        e->has_name = 1;
        if (capture_name(gs, v, &e->name) != 0)
            return PARTD_JS_NOMEM;
    } else if (gs->next == PARTD_GM_P_BYTES) {
        e->has_bytes = 1;
        e->bytes = (partd_capture){.type = v->type, .i = v->i, .d = v->d};
    }
    return PARTD_JS_SKIP;
}


int partd__decode_node_param_key(partd_gstream *gs, const char *key, size_t len)
{
    gs->next = strcmp(key, "name") == 0 ? PARTD_GM_P_NAME : strcmp(key, "bytes") == 0 ? PARTD_GM_P_BYTES
                                                                             : PARTD_GM_M_UNKNOWN;
    if (gs->next != PARTD_GM_M_UNKNOWN)
        return 0;
    uint32_t off;
    if (grow(&gs->unk, sizeof *gs->unk, &gs->unk_cap, (size_t)gs->n_unk + 1) != 0 ||
        keep(gs, key, len, len, &off) != 0)
        return -1;
    gs->unk[gs->n_unk++] = off;
    gs->pe[gs->n_pe - 1].n_unk++;
    return 0;
}
