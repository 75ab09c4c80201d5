/*
 * decode_graph.c - `graph` of a request, decoded from the parser's events;
 * see decode_internal.h. The graph object's members are checked here,
 * graph.nodes goes to decode_node.c, graph.modules is small: built as a
 * tree and decoded by modules.h when the body has ended.
 */
#include <stdlib.h>
#include <string.h>

#include "decode_graph.h"
#include "modules.h"
#include "partd.h"

static partd_js_action graph_member(partd_gstream *gs, const partd_scalar *v)
{
    char ptr[PARTD_POINTER_CAP];
    switch (gs->next) {
    case G_NAME:
        gs->has_name = 1;
        gs->name_type = v->type;
        return PARTD_JS_SKIP;
    case G_NODES:
        gs->has_nodes = 1;
        gs->nodes_type = v->type;
        return v->type == JSON_ARRAY ? partd_gs_push(gs, CTX_NODES) : PARTD_JS_SKIP;
    case G_MODULES:
        return PARTD_JS_BUILD;
    case M_META:
        if (v->type != JSON_OBJECT) {
            partd_reader r = {.pb = &gs->pb_graph, .strings = &gs->d->req->strings};
            partd_pointer_member(ptr, "/graph", "meta");
            partd_scalar_expect(&r, v, ptr, JSON_OBJECT, "an object");
        }
        return PARTD_JS_SKIP;
    default:
        return PARTD_JS_SKIP;
    }
}

partd_js_action partd_gs_value(partd_gstream *gs, const partd_scalar *v)
{
    switch ((partd_gctx)gs->ctx[gs->depth - 1]) {
    case CTX_GRAPH: return graph_member(gs, v);
    case CTX_NODES: return partd_node_start(gs, v);
    case CTX_NODE: return partd_node_member(gs, v);
    case CTX_INPUTS: return partd_node_input(gs, v);
    case CTX_PARAMS: return partd_node_param_start(gs, v);
    case CTX_PARAM: return partd_node_param_member(gs, v);
    }
    return PARTD_JS_SKIP;
}

int partd_gs_key(partd_gstream *gs, const char *key, size_t len)
{
    char ptr[PARTD_POINTER_CAP];
    switch ((partd_gctx)gs->ctx[gs->depth - 1]) {
    case CTX_GRAPH:
        gs->next = strcmp(key, "name") == 0      ? G_NAME
                   : strcmp(key, "nodes") == 0   ? G_NODES
                   : strcmp(key, "modules") == 0 ? G_MODULES
                   : strcmp(key, "meta") == 0    ? M_META
                                                 : M_UNKNOWN;
        if (gs->next == M_UNKNOWN) {
            partd_pointer_member(ptr, "/graph", key);
            partd_problem_add(&gs->pb_graph, ptr, "unknown member");
        }
        return 0;
    case CTX_NODE:
        gs->next = partd_node_classify(key);
        if (gs->next == M_UNKNOWN && gs->storing) {
            partd_node_pointer(gs, ptr, key);
            partd_dec_add(gs->d, ptr, "unknown member");
        }
        return 0;
    case CTX_PARAM:
        return partd_node_param_key(gs, key, len);
    default:
        return 0;
    }
}

int partd_gs_end(partd_gstream *gs)
{
    partd_gctx c = (partd_gctx)gs->ctx[--gs->depth];
    return c == CTX_NODE ? partd_node_end(gs) : 0;
}

int partd_gs_built(partd_gstream *gs, json_t *v)
{
    json_decref(gs->modules);
    gs->modules = v;
    return 0;
}

partd_js_action partd_gs_begin(partd_gstream *gs, const partd_scalar *v)
{
    gs->type = v->type;
    return v->type == JSON_OBJECT ? partd_gs_push(gs, CTX_GRAPH) : PARTD_JS_SKIP;
}

int partd_gs_active(const partd_gstream *gs)
{
    return gs->depth > 0;
}

uint64_t partd_gs_estimate(const partd_gstream *gs)
{
    return gs->estimate;
}

partd_gstream *partd_gs_new(partd_dec *d, const partd_decode_limits *lim)
{
    partd_gstream *gs = calloc(1, sizeof *gs);
    if (!gs)
        return NULL;
    gs->d = d;
    gs->lim = lim;
    gs->storing = 1;
    gs->type = JSON_NULL;
    partd_problem_init(&gs->pb_graph);
    partd_problem_init(&gs->pb_nodes);
    d->r.pb = &gs->pb_nodes;
    return gs;
}

void partd_gs_free(partd_gstream *gs)
{
    if (!gs)
        return;
    partd_problem_free(&gs->pb_graph);
    partd_problem_free(&gs->pb_nodes);
    json_decref(gs->modules);
    free(gs->scratch);
    free(gs->pe);
    free(gs->unk);
    free(gs);
}

/* Appends src's errors to dst as if they had been added there. */
static void merge(partd_problem *dst, const partd_problem *src)
{
    for (uint32_t k = 0; k < src->n_errors; k++)
        partd_problem_add(dst, src->errors[k].pointer, "%s", src->errors[k].message);
    dst->dropped += src->dropped;
}

void partd_gs_report(partd_gstream *gs)
{
    partd_dec *d = gs->d;
    partd_problem *pb = d->r.pb;
    partd_scalar sv = {.type = gs->type};
    if (partd_scalar_expect(&d->r, &sv, "/graph", JSON_OBJECT, "an object") != 0)
        return;
    merge(pb, &gs->pb_graph);
    sv.type = gs->name_type;
    if (gs->has_name)
        partd_scalar_expect(&d->r, &sv, "/graph/name", JSON_STRING, "a string");
    sv.type = gs->nodes_type;
    if (!gs->has_nodes) {
        partd_dec_add(d, "/graph/nodes", "is required");
        return;
    }
    if (partd_scalar_expect(&d->r, &sv, "/graph/nodes", JSON_ARRAY, "an array") != 0)
        return;
    if (gs->n == 0) {
        partd_dec_add(d, "/graph/nodes", "must have at least one node");
        return;
    }
    const partd_decode_limits *lim = gs->lim;
    if (gs->n >= UINT32_MAX / 2 || (lim && lim->max_nodes && gs->n > lim->max_nodes)) {
        partd_problem_add(pb, "/graph/nodes", "has %llu nodes; this server takes at most %u",
                          (unsigned long long)gs->n,
                          lim && lim->max_nodes ? lim->max_nodes : UINT32_MAX / 2);
        return;
    }
    merge(pb, &gs->pb_nodes);
    d->req->graph.n_nodes = (uint32_t)gs->n;
    json_t *modules = gs->modules;
    if (modules && partd_read_object(&d->r, modules, "/graph/modules", NULL) == 0 &&
        partd_modules_decode(modules, &d->req->strings, pb, &d->req->modules,
                             &d->modules_canonical) == PARTD_ENOMEM)
        partd_dec_oom(d, "/graph/modules");
}

