/*
 * model.h - the decoded request: graph, devices, options.
 *
 * Produced by partd_request_decode() (decode.h) from the request JSON; no JSON
 * tree is kept. Everything is plain arrays indexed by node, device or
 * parameter number, with adjacency in CSR form and names interned in
 * `strings`.
 *
 * Node numbering: nodes are numbered in *planning order*, which is the
 * request's order when that order is topological and otherwise a stable
 * topological order (Kahn's algorithm taking the ready node that came first in
 * the request). `request_index[i]` maps back to the position in
 * `graph.nodes` of the request, for JSON Pointers in error messages.
 *
 * The enumerations (partd_op, partd_mode, ...) and their wire names are in
 * enums.h.
 *
 * Ownership: a partd_request owns every array in it and the modules model;
 * partd_request_free() (decode.h) releases all of it. Planners read it and never modify
 * it, so one request may be planned from several threads at once.
 * Errors: nothing here fails; decoding (decode.h) is where a request's
 * errors come from.
 */
#ifndef PARTD_MODEL_H
#define PARTD_MODEL_H

#include <stdint.h>

#include "enums.h"
#include "strtab.h"

#define PARTD_NONE UINT32_MAX
/* graph.name is kept to label jobs and pictures: this much of it at most. */
#define PARTD_GRAPH_NAME_KEEP 256


/* call_module, call_function, call_method: what FX calls an operation. */
static inline int partd_op_is_operation(partd_op op)
{
    return op == PARTD_OP_CALL_MODULE || op == PARTD_OP_CALL_FUNCTION ||
           op == PARTD_OP_CALL_METHOD;
}

typedef struct partd_graph {
    uint32_t n_nodes;
    uint32_t n_ops;            /* operation nodes (call_*) */
    uint32_t output_node;      /* index of the `output` node, or PARTD_NONE */
    int order_was_topological; /* 1 when planning order == request order */
    int64_t batch_size;        /* graph.batch_size (v3): the batch the figures
                                  were measured with; 0 when not given */

    /* Per node, indexed in planning order. */
    uint8_t *op;               /* partd_op */
    uint32_t *name;            /* string id */
    uint32_t *target;          /* string id or PARTD_NONE */
    uint32_t *module;          /* string id or PARTD_NONE */
    uint32_t *module_type;     /* string id or PARTD_NONE (v3): the module's class
                                  name, which tells sparse_nn its embeddings */
    uint32_t *request_index;   /* position in the request's graph.nodes */
    int64_t *output_bytes;
    int64_t *param_bytes;      /* `param_bytes`, or the sum of `params[].bytes` */
    double *latency_ms;
    double *mem_latency_ms;
    double *backward_ms;       /* `backward_ms`, valid where has_backward */
    uint8_t *has_backward;     /* 1 when the node gave `backward_ms` */
    double *weight_grad_ms;    /* `weight_grad_ms` (v3), valid where has_weight_grad */
    uint8_t *has_weight_grad;  /* 1 when the node gave `weight_grad_ms` */
    uint8_t *has_params;       /* 1 when the node gave a `params` list */

    /* Inputs: in_idx[in_off[i] .. in_off[i+1]) are the nodes node i reads,
     * in the request's order, each at most once (repeats removed, as FX's
     * map_arg into a dict does). All precede i in planning order. */
    uint32_t *in_off, *in_idx;
    /* Users: the nodes that read node i, ascending, each once. */
    uint32_t *user_off, *user_idx;
    /* Named parameters: par_idx[par_off[i] .. par_off[i+1]) are parameter
     * ids of node i (only for nodes with `params`). */
    uint32_t *par_off, *par_idx;

    /* Distinct named parameters (shared when several nodes name one). */
    uint32_t n_params;
    uint32_t *param_name;      /* string id */
    int64_t *param_size;       /* bytes */
} partd_graph;

typedef struct partd_device {
    uint32_t name;             /* string id */
    int64_t memory_bytes;      /* > 0 */
    int64_t logical_id;        /* unique; default: index in the list */
    double speed;              /* > 0; default 1.0 */
} partd_device;

typedef struct partd_pipeline_options {
    uint32_t stages;           /* resolved: the default is filled in */
    partd_balance_by balance_by;
    partd_schedule schedule;
    uint32_t microbatches;     /* >= 1 */
    double param_factor;       /* > 0 */
    uint32_t n_cut_after;
    uint32_t *cut_after;       /* string ids, as given (node name or module fqn),
                                  resolved by the pipeline planner */
} partd_pipeline_options;

typedef struct partd_sac_options {
    int enabled;               /* 1 when the request has options.sac */
    int64_t memory_budget_bytes; /* resolved: default smallest device memory */
    uint32_t world_size;       /* >= 1 */
    int has_ac_units, has_fsdp_units;
    uint32_t n_ac_units, n_fsdp_units;
    uint32_t *ac_units, *fsdp_units; /* string ids (module fqns) */
    int op_level;
    double time_limit_ms;      /* > 0 */
    double relative_gap;       /* >= 0 */
    uint32_t frontier_points;  /* 0 = none, else 2..100 */
    /* Not on the wire: address space each solver process may add to the
     * caller's (milp.h); 0 = PARTD_SOLVER_MEMORY_DEFAULT. */
    uint64_t solver_memory_bytes;
} partd_sac_options;

/* options.training (contract, "Training mode"); defaults filled in. */
typedef struct partd_training_options {
    uint32_t schedules;        /* bit s: partd_training_schedule s allowed */
    int schedule_named;        /* one name was given: its conditions are 422s */
    uint32_t virtual_stages;   /* 0 = auto */
    double weight_grad_fraction; /* 0 to 1 */
    uint32_t microbatches;     /* resolved: default number of devices */
    uint32_t stages;           /* 0 = auto */
    int device_order_auto;     /* 0 = given */
    partd_checkpoint checkpoint;
    uint32_t unit_depth;       /* 0 = automatic */
    double backward_factor;    /* > 0 */
    double param_factor;       /* > 0 */
} partd_training_options;

/* options.aot (v3, mode aot_based): FX's node_to_partition_mapping and
 * partition_to_logical_device_mapping, resolved against the graph and the
 * devices. Empty (n_parts 0, NULL arrays) when not given. */
typedef struct partd_aot_options {
    uint32_t n_parts;          /* distinct partition ids in partition_of */
    int64_t *part_id;          /* those ids, ascending */
    uint32_t *part_of;         /* node -> index into part_id; PARTD_NONE for
                                  non-operations (every operation has one) */
    uint32_t *dev_off;         /* n_parts + 1: partition k's devices are */
    uint32_t *dev_idx;         /* dev_idx[dev_off[k] .. dev_off[k+1]), as given */
} partd_aot_options;

typedef struct partd_options {
    partd_mode mode;
    double transfer_bytes_per_sec; /* > 0 */
    partd_pipeline_options pipeline;
    partd_sac_options sac;
    partd_training_options training;
    partd_aot_options aot;     /* mode aot_based only */
    partd_result_detail result_detail; /* options.result.detail */
} partd_options;

struct partd_modules; /* modules.h: graph.modules, owned by the SAC unit */

typedef struct partd_request {
    partd_strtab strings;
    partd_graph graph;
    uint32_t n_devices;
    partd_device *devices;     /* in list order: stage i runs on devices[i] */
    partd_options options;
    struct partd_modules *modules; /* NULL when graph.modules is absent */
    char *graph_name;          /* graph.name, informational (not hashed), cut to at
                                  most PARTD_GRAPH_NAME_KEEP bytes; NULL when absent */
    char graph_hash[72];       /* "sha256:" + 64 hex digits */
    char cache_key[72];
} partd_request;

/* Convenience accessors. */
static inline const char *partd_node_name(const partd_request *r, uint32_t node)
{
    return partd_str(&r->strings, r->graph.name[node]);
}

static inline const char *partd_device_name(const partd_request *r, uint32_t dev)
{
    return partd_str(&r->strings, r->devices[dev].name);
}

/* A node's forward time on a device of speed 1.0: FX NodeLatency's
 * max(latency, mem_latency). */
static inline double partd_node_time_ms(const partd_graph *g, uint32_t node)
{
    double a = g->latency_ms[node], b = g->mem_latency_ms[node];
    return a > b ? a : b;
}

#endif
