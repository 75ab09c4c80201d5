/* pipeline_test_graphs.c - see pipeline_test_graphs.h. */
#include "pipeline_test_graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffff;
}

static int pick(unsigned *state, int n)
{
    return (int)(next_random(state) % (unsigned)n);
}

static void add_node(tg_graph *g, tg_node node)
{
    node.rank = -1;
    if (node.kind == TG_OP) {
        node.rank = g->n_ops;
        g->op_node[g->n_ops++] = g->n_nodes;
    }
    g->nodes[g->n_nodes++] = node;
}

void tg_random(tg_graph *g, unsigned seed, int devices)
{
    unsigned st = seed * 2654435761u + 1;
    memset(g, 0, sizeof *g);
    for (int p = 0; p < TG_MAX_PARAMS; p++)
        g->param_bytes[p] = 100 + pick(&st, 900);
    int placeholders = 1 + pick(&st, 2);
    for (int i = 0; i < placeholders; i++)
        add_node(g, (tg_node){.kind = TG_PLACEHOLDER, .output_bytes = 10 + pick(&st, 500)});
    if (pick(&st, 2)) {
        tg_node ga = {.kind = TG_GET_ATTR, .output_bytes = 50 + pick(&st, 400)};
        if (pick(&st, 2)) {
            ga.n_params = 1;
            ga.params[0] = pick(&st, TG_MAX_PARAMS);
        }
        add_node(g, ga);
    }
    int ops = 2 + pick(&st, 9);
    for (int i = 0; i < ops; i++) {
        tg_node op = {.kind = TG_OP, .output_bytes = 1 + pick(&st, 1000),
                      .latency_ms = (1 + pick(&st, 64)) / 8.0};
        int first = g->n_nodes - 1; /* always read the previous node: a chain with skips */
        op.inputs[op.n_inputs++] = first;
        int extra = pick(&st, 3);
        for (int k = 0; k < extra && first > 0; k++) {
            int in = pick(&st, first);
            int dup = 0;
            for (int q = 0; q < op.n_inputs; q++)
                dup |= op.inputs[q] == in;
            if (!dup)
                op.inputs[op.n_inputs++] = in;
        }
        int kind = pick(&st, 3);
        if (kind == 0) {
            op.n_params = 1 + pick(&st, 2);
            op.params[0] = pick(&st, TG_MAX_PARAMS);
            op.params[1] = (op.params[0] + 1 + pick(&st, TG_MAX_PARAMS - 1)) % TG_MAX_PARAMS;
        } else if (kind == 1) {
            op.own_param_bytes = pick(&st, 2000);
        }
        add_node(g, op);
    }
    tg_node out = {.kind = TG_OUTPUT};
    out.inputs[out.n_inputs++] = g->n_nodes - 1;
    add_node(g, out);
    if (devices > g->n_ops)
        devices = g->n_ops;
    if (devices > TG_MAX_DEVICES)
        devices = TG_MAX_DEVICES;
    static const double speeds[] = {1.0, 2.0, 0.5};
    g->n_devices = devices;
    for (int d = 0; d < devices; d++) {
        g->device_memory[d] = (int64_t)1 << 40;
        g->device_speed[d] = speeds[pick(&st, 3)];
    }
}

static const char *op_name(int kind)
{
    switch (kind) {
    case TG_PLACEHOLDER: return "placeholder";
    case TG_GET_ATTR: return "get_attr";
    case TG_OUTPUT: return "output";
    default: return "call_module";
    }
}

char *tg_request_json(const tg_graph *g, const char *balance_by, const char *schedule,
                      int microbatches, const int *cut_after_ops, int n_cut)
{
    size_t cap = 16384, len = 0;
    char *s = malloc(cap);
#define OUT(...) len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__)
    OUT("{\"graph\":{\"nodes\":[");
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = &g->nodes[i];
        OUT("%s{\"name\":\"n%d\",\"op\":\"%s\",\"output_bytes\":%lld,\"latency_ms\":%.17g,"
            "\"inputs\":[",
            i ? "," : "", i, op_name(n->kind), (long long)n->output_bytes, n->latency_ms);
        for (int k = 0; k < n->n_inputs; k++)
            OUT("%s\"n%d\"", k ? "," : "", n->inputs[k]);
        OUT("]");
        if (n->n_params) {
            OUT(",\"params\":[");
            for (int k = 0; k < n->n_params; k++)
                OUT("%s{\"name\":\"w%d\",\"bytes\":%lld}", k ? "," : "", n->params[k],
                    (long long)g->param_bytes[n->params[k]]);
            OUT("]");
        } else if (n->own_param_bytes) {
            OUT(",\"param_bytes\":%lld", (long long)n->own_param_bytes);
        }
        OUT("}");
    }
    OUT("]},\"devices\":[");
    for (int d = 0; d < g->n_devices; d++)
        OUT("%s{\"name\":\"d%d\",\"memory_bytes\":%lld,\"speed\":%.17g}", d ? "," : "", d,
            (long long)g->device_memory[d], g->device_speed[d]);
    OUT("],\"options\":{\"mode\":\"pipeline\",\"pipeline\":{\"balance_by\":\"%s\","
        "\"schedule\":\"%s\",\"microbatches\":%d,\"cut_after\":[",
        balance_by, schedule, microbatches);
    for (int k = 0; k < n_cut; k++)
        OUT("%s\"n%d\"", k ? "," : "", g->op_node[cut_after_ops[k]]);
    OUT("]}}}");
#undef OUT
    return s;
}
