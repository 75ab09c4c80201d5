/*
 * decode_graph.c - `graph` of a request, decoded from the parser's events;
 * see decode_internal.h. The graph object's members are checked here
 * (batch_size read as it comes),
 * graph.nodes goes to decode_node.c, graph.modules is small: built as a
 * tree and decoded by modules.h when the body has ended.
 */
#include <stdlib.h>
#include <string.h>

#include "decode_graph.h"
#include "modules/modules.h"
#include "partd/partd.h"

/* graph.name, cut to PARTD_GRAPH_NAME_KEEP bytes at a character's start. */
static int keep_name(partd_request *req, const char *s, size_t len)
{
    if (len > PARTD_GRAPH_NAME_KEEP) {
        len = PARTD_GRAPH_NAME_KEEP;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
            len--;
    }
    char *name = malloc(len + 1);
    if (!name)
        return -1;
    memcpy(name, s, len);
    name[len] = '\0';
    free(req->graph_name);
    req->graph_name = name;
    return 0;
}

static partd_js_action graph_member(partd_gstream *gs, const partd_scalar *v)
{
    char ptr[PARTD_POINTER_CAP];
    switch (gs->next) {
    case PARTD_GM_G_NAME:
        gs->has_name = 1;
        gs->name_type = v->type;
        gs->name_len = v->len;
        if (v->type == JSON_STRING && keep_name(gs->d->req, v->s, v->len) != 0)
            return PARTD_JS_NOMEM;
        return PARTD_JS_SKIP;
    case PARTD_GM_G_NODES:
        gs->has_nodes = 1;
        gs->nodes_type = v->type;
        return v->type == JSON_ARRAY ? partd_gs_push(gs, PARTD_GCTX_NODES) : PARTD_JS_SKIP;
    case PARTD_GM_G_MODULES:
        return PARTD_JS_BUILD;
    case PARTD_GM_G_BATCH_SIZE: {
        partd_reader r = {.pb = &gs->pb_graph, .strings = &gs->d->req->strings};
        int64_t x;
        if (partd__json_read_scalar_int(&r, v, "/graph/batch_size", 1, PARTD_MAX_BYTES, &x) == 0)
            gs->d->req->graph.batch_size = x;
        return PARTD_JS_SKIP;
    }
    case PARTD_GM_M_META:
        if (v->type != JSON_OBJECT) {
            partd_reader r = {.pb = &gs->pb_graph, .strings = &gs->d->req->strings};
            partd_pointer_member(ptr, "/graph", "meta");
            partd__json_read_scalar_expect(&r, v, ptr, JSON_OBJECT, "an object");
        }
        return PARTD_JS_SKIP;
    default:
        return PARTD_JS_SKIP;
    }
}

partd_js_action partd__decode_graph_value(partd_gstream *gs, const partd_scalar *v)
{
    switch ((partd_gctx)gs->ctx[gs->depth - 1]) {
    case PARTD_GCTX_GRAPH: return graph_member(gs, v);
    case PARTD_GCTX_NODES: return partd__decode_node_start(gs, v);
    case PARTD_GCTX_NODE: return partd__decode_node_member(gs, v);
    case PARTD_GCTX_INPUTS: return partd__decode_node_input(gs, v);
    case PARTD_GCTX_PARAMS: return partd__decode_node_param_start(gs, v);
    case PARTD_GCTX_PARAM: return partd__decode_node_param_member(gs, v);
    }
    return PARTD_JS_SKIP;
}

int partd__decode_graph_key(partd_gstream *gs, const char *key, size_t len)
{
    char ptr[PARTD_POINTER_CAP];
    switch ((partd_gctx)gs->ctx[gs->depth - 1]) {
    case PARTD_GCTX_GRAPH:
        gs->next = strcmp(key, "name") == 0         ? PARTD_GM_G_NAME
                   : strcmp(key, "nodes") == 0      ? PARTD_GM_G_NODES
                   : strcmp(key, "modules") == 0    ? PARTD_GM_G_MODULES
                   : strcmp(key, "batch_size") == 0 ? PARTD_GM_G_BATCH_SIZE
                   : strcmp(key, "meta") == 0       ? PARTD_GM_M_META
                                                    : PARTD_GM_M_UNKNOWN;
        if (gs->next == PARTD_GM_M_UNKNOWN) {
            static const char *const members[] = {"name", "nodes", "modules", "batch_size",
                                                  "meta", NULL};
            partd_pointer_member(ptr, "/graph", key);
            partd_json_read_unknown(&gs->pb_graph, ptr, key, members);
        }
        return 0;
    case PARTD_GCTX_NODE:
        gs->next = partd__decode_node_classify(key, len);
        if (gs->next == PARTD_GM_M_UNKNOWN && gs->storing) {
            partd_node_pointer(gs, ptr, key);
            partd_json_read_unknown(gs->d->r.pb, ptr, key, partd__decode_node_members);
        }
        return 0;
    case PARTD_GCTX_PARAM:
        return partd__decode_node_param_key(gs, key, len);
    default:
        return 0;
    }
}

int partd__decode_graph_end(partd_gstream *gs)
{
    partd_gctx c = (partd_gctx)gs->ctx[--gs->depth];
    return c == PARTD_GCTX_NODE ? partd__decode_node_end(gs) : 0;
}

int partd__decode_graph_built(partd_gstream *gs, json_t *v)
{
    json_decref(gs->modules);
    gs->modules = v;
    return 0;
}

partd_js_action partd__decode_graph_begin(partd_gstream *gs, const partd_scalar *v)
{
    gs->type = v->type;
    return v->type == JSON_OBJECT ? partd_gs_push(gs, PARTD_GCTX_GRAPH) : PARTD_JS_SKIP;
}

int partd__decode_graph_active(const partd_gstream *gs)
{
    return gs->depth > 0;
}

uint64_t partd__decode_graph_estimate(const partd_gstream *gs)
{
    return gs->estimate;
}

partd_gstream *partd__decode_graph_new(partd_dec *d, const partd_decode_limits *lim)
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

void partd__decode_graph_free(partd_gstream *gs)
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

void partd__decode_graph_report(partd_gstream *gs)
{
    partd_dec *d = gs->d;
    partd_problem *pb = d->r.pb;
    partd_scalar sv = {.type = gs->type};
    if (partd__json_read_scalar_expect(&d->r, &sv, "/graph", JSON_OBJECT, "an object") != 0)
        return;
    merge(pb, &gs->pb_graph);
    sv = (partd_scalar){.type = gs->name_type, .s = "", .len = gs->name_len};
    if (gs->has_name)
        partd__json_read_scalar_short(&d->r, &sv, "/graph/name");
    sv.type = gs->nodes_type;
    if (!gs->has_nodes) {
        partd__decode_add(d, "/graph/nodes", "is required");
        return;
    }
    if (partd__json_read_scalar_expect(&d->r, &sv, "/graph/nodes", JSON_ARRAY, "an array") != 0)
        return;
    if (gs->n == 0) {
        partd__decode_add(d, "/graph/nodes", "must have at least one node");
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
    if (modules && partd_json_read_object(&d->r, modules, "/graph/modules", NULL) == 0 &&
        partd_modules_decode(modules, &d->req->strings, pb, &d->req->modules,
                             &d->modules_canonical) == PARTD_ENOMEM)
        partd__decode_oom(d, "/graph/modules");
}

