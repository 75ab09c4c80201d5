/*
 * pipeline_test_graphs.h - small random graphs for the pipeline planner's
 * unit tests, kept as plain structs (for the tests' own direct reading of
 * the contract) and written out as request JSON (for the decoder).
 *
 * Graphs are in topological order, so operation ranks are list order: one
 * or two placeholders, an optional get_attr tensor (named or not), 2 to 10
 * operations each reading one to three earlier nodes (skips included), some
 * with named parameters drawn from a small shared pool (tied weights), some
 * with plain param_bytes, and the output node. Latencies are multiples of
 * 1/8 ms, so every sum is exact.
 */
#ifndef PARTD_PIPELINE_TEST_GRAPHS_H
#define PARTD_PIPELINE_TEST_GRAPHS_H

#include <stdint.h>

#define TG_MAX_NODES 16
#define TG_MAX_PARAMS 4
#define TG_MAX_DEVICES 6

enum { TG_PLACEHOLDER, TG_GET_ATTR, TG_OP, TG_OUTPUT };

typedef struct tg_node {
    int kind;
    int n_inputs;
    int inputs[3];
    int n_params;
    int params[2];          /* indices into the graph's param pool */
    int64_t output_bytes;
    int64_t own_param_bytes; /* param_bytes of an operation naming none */
    double latency_ms;
    int rank;                /* operation rank, -1 for other nodes */
} tg_node;

typedef struct tg_graph {
    int n_nodes;
    tg_node nodes[TG_MAX_NODES];
    int n_ops;
    int op_node[TG_MAX_NODES];
    int64_t param_bytes[TG_MAX_PARAMS];
    int n_devices;
    int64_t device_memory[TG_MAX_DEVICES];
    double device_speed[TG_MAX_DEVICES];
} tg_graph;

/* A random graph (deterministic in seed) and `devices` devices (at most
 * TG_MAX_DEVICES, and at most the number of operations) of ample memory and
 * speeds 1, 2 or 0.5. */
void tg_random(tg_graph *g, unsigned seed, int devices);

/* The pipeline request for g (malloc'd; caller frees): balance_by, schedule
 * and microbatches as given, cut_after the named operations (by index into
 * the operations, n_cut of them). */
char *tg_request_json(const tg_graph *g, const char *balance_by, const char *schedule,
                      int microbatches, const int *cut_after_ops, int n_cut);

#endif
