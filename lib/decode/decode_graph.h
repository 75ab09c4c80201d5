/*
 * decode_graph.h - the state of the graph part of the streaming decoder,
 * shared by decode_graph.c (graph object, report) and decode_node.c (the
 * nodes); private to those two (decode_internal.h has the interface).
 */
#ifndef PARTD_DECODE_GRAPH_H
#define PARTD_DECODE_GRAPH_H

#include "decode_internal.h"

typedef enum partd_gctx { PARTD_GCTX_GRAPH, PARTD_GCTX_NODES, PARTD_GCTX_NODE, PARTD_GCTX_INPUTS, PARTD_GCTX_PARAMS, PARTD_GCTX_PARAM } partd_gctx;

typedef enum partd_gmember {
    PARTD_GM_M_UNKNOWN, PARTD_GM_M_NAME, PARTD_GM_M_OP, PARTD_GM_M_TARGET, PARTD_GM_M_INPUTS, PARTD_GM_M_OUTPUT_BYTES, PARTD_GM_M_PARAM_BYTES, PARTD_GM_M_PARAMS,
    PARTD_GM_M_LATENCY, PARTD_GM_M_MEM_LATENCY, PARTD_GM_M_BACKWARD, PARTD_GM_M_WEIGHT_GRAD, PARTD_GM_M_MODULE, PARTD_GM_M_MODULE_TYPE, PARTD_GM_M_META,
    PARTD_GM_G_NAME, PARTD_GM_G_NODES, PARTD_GM_G_MODULES, PARTD_GM_P_NAME, PARTD_GM_P_BYTES,
    PARTD_GM_G_BATCH_SIZE
} partd_gmember;

/* A value kept until its node ends: strings live in the node's scratch. */
typedef struct partd_capture {
    json_type type;
    uint32_t off;  /* string bytes in scratch */
    size_t len;
    json_int_t i;
    double d;
    partd_strtab_hint hint; /* a name's, from when it arrived */
} partd_capture;

typedef struct partd_param_entry {
    json_type type;          /* JSON_OBJECT, or what was there instead */
    uint32_t unk_first, n_unk; /* its unknown members' keys (in unk) */
    uint8_t has_name, has_bytes;
    partd_capture name, bytes;
} partd_param_entry;

struct partd_gstream {
    partd_dec *d;
    const partd_decode_limits *lim;
    uint8_t ctx[8];
    uint32_t depth;
    partd_gmember next;             /* the member whose value comes next */
    /* graph */
    json_type type;
    partd_problem pb_graph;  /* /graph's unknown members and meta */
    uint8_t has_name, has_nodes;
    json_type name_type, nodes_type;
    size_t name_len;         /* of graph.name, when a string */
    json_t *modules;
    /* nodes */
    partd_problem pb_nodes;
    uint64_t n;              /* nodes seen */
    uint32_t cap;
    int storing;             /* 0 once a limit is passed: count only */
    uint64_t estimate;
    /* the current node */
    uint8_t has_name_m, has_op, has_pb, has_params, inputs_array;
    partd_capture name, op, param_bytes;
    json_type params_type;
    uint64_t n_inputs;
    char *scratch;
    size_t scratch_used, scratch_cap;
    partd_param_entry *pe;
    uint32_t n_pe, pe_cap;
    uint32_t *unk;
    uint32_t n_unk, unk_cap;
    uint32_t in_cap, par_cap; /* of d->in_name; of d->par_name and d->par_bytes */
};


static inline partd_js_action partd_gs_push(partd_gstream *gs, partd_gctx c)
{
    gs->ctx[gs->depth++] = (uint8_t)c;
    return PARTD_JS_DESCEND;
}

/* out = the pointer of the current node's member (member NULL: of the
 * node), built only when something is reported there. */
static inline void partd_node_pointer(const partd_gstream *gs, char *out, const char *member)
{
    partd_pointer_index(out, "/graph/nodes", gs->d->n);
    if (member)
        partd_problem_pointer_append(out, PARTD_POINTER_CAP, member);
}

/* decode_node.c: events inside graph.nodes. */
extern const char *const partd__decode_node_members[]; /* the keys classify knows */
partd_gmember partd__decode_node_classify(const char *key, size_t len);
partd_js_action partd__decode_node_start(partd_gstream *gs, const partd_scalar *v);
partd_js_action partd__decode_node_member(partd_gstream *gs, const partd_scalar *v);
int partd__decode_node_end(partd_gstream *gs);
partd_js_action partd__decode_node_input(partd_gstream *gs, const partd_scalar *v);
partd_js_action partd__decode_node_param_start(partd_gstream *gs, const partd_scalar *v);
partd_js_action partd__decode_node_param_member(partd_gstream *gs, const partd_scalar *v);
/* A key of a params entry: 0, or -1 out of memory. */
int partd__decode_node_param_key(partd_gstream *gs, const char *key, size_t len);

#endif
