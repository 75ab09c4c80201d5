/*
 * fx_internal.h - what FX's partitioning modes share (not a public
 * interface): FX's node sizes, a partitioning held as node -> partition,
 * FX's memory of a partition, FX's cost model (partitioner_utils.py:
 * get_latency_of_partitioned_graph) and the plan built from a partitioning.
 *
 * A partitioning here is what FX's Partition objects hold, without the
 * sets: every operation node is in exactly one partition (part_of), and a
 * placeholder or get_attr node is in every partition with an operation that
 * reads it (Partition.add_node). Devices per partition are a CSR list
 * (dev_off, dev_idx): FX's logical_device_ids, empty for none.
 *
 * Errors: PARTD_OK; PARTD_ENOMEM; partd__fx_latency returns
 * PARTD_EINFEASIBLE when the partitions depend on each other in a cycle
 * (*cycle set to a partition on it). Nothing here fills a problem.
 */
#ifndef PARTD_FX_INTERNAL_H
#define PARTD_FX_INTERNAL_H

#include <stdint.h>

#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

/* FX's size_bytes: total = output + parameters; a get_attr node's output is
 * its parameter, so its size counts once (the larger of the two figures). */
static inline int64_t partd__fx_total(const partd_graph *g, uint32_t v)
{
    if (g->op[v] == PARTD_OP_GET_ATTR)
        return g->output_bytes[v] > g->param_bytes[v] ? g->output_bytes[v] : g->param_bytes[v];
    return g->output_bytes[v] + g->param_bytes[v];
}

static inline int64_t partd__fx_output(const partd_graph *g, uint32_t v)
{
    return g->op[v] == PARTD_OP_GET_ATTR ? partd__fx_total(g, v) : g->output_bytes[v];
}

static inline int partd__fx_is_constant(const partd_graph *g, uint32_t v)
{
    return g->op[v] == PARTD_OP_PLACEHOLDER || g->op[v] == PARTD_OP_GET_ATTR;
}

/* A node's FX latency in seconds: max(computer_latency_sec,
 * mem_latency_sec), each ms / 1000 as NodeLatency is built. */
static inline double partd__fx_node_sec(const partd_graph *g, uint32_t v)
{
    double a = g->latency_ms[v] / 1000.0, b = g->mem_latency_ms[v] / 1000.0;
    return a > b ? a : b;
}

typedef struct partd__fx_layout {
    uint32_t n_parts;
    uint32_t *part_of;     /* node -> partition; PARTD_NONE for non-operations */
    uint32_t *dev_off;     /* n_parts + 1 */
    uint32_t *dev_idx;     /* device indices */
} partd__fx_layout;

/* used[p] = FX's used_mem_bytes of partition p: over its node set, each
 * node's total size plus the output of each distinct input outside the set
 * (a placeholder or get_attr read by p is in its set). */
int partd__fx_memory(const partd_request *req, const partd__fx_layout *l, int64_t *used);

/* FX's get_latency_of_partitioned_graph (seconds): the longest path over
 * the partitions' DAG, a partition weighing its critical path of node
 * latencies, an edge parent -> child the output bytes of the distinct nodes
 * of the parent (its placeholders and get_attrs too) that the child reads,
 * divided by the transfer rate, and nothing when both have the same
 * non-empty device list. Sums in FX's order, so the figure is FX's to the
 * last bit. */
int partd__fx_latency(const partd_request *req, const partd__fx_layout *l, double *sec,
                      uint32_t *cycle);

/* The partitions' DAG as partd__fx_latency sees it: for each partition q,
 * its parents (*src, CSR by *off, n_parts + 1 entries) and the bytes each
 * edge carries (*bytes, FX's comm_size). The caller frees the three. */
int partd__fx_edges(const partd_request *req, const partd__fx_layout *l, uint32_t **off,
                    uint32_t **src, int64_t **bytes);

/* FX's partition_graph before the mode's own work (cost_aware, kl_based,
 * sparse_nn): the whole graph as one partition on the first device with the
 * most memory when it fits there (*out set, PARTD_OK), PARTD_EINFEASIBLE
 * with the problem filled when all devices together have less than the
 * graph, else PARTD_OK with *out NULL: the mode partitions. */
int partd__fx_whole(const partd_request *req, partd_mode mode, partd_plan **out,
                    partd_problem *pb);

/* FX's get_device_to_partitions_mapping with no partition on a device yet:
 * partitions in index order, each on the device with the least memory left
 * (devices kept in a stable sort by memory left) that has strictly more
 * than it needs there (its used bytes, less the outputs of its inputs
 * already on the device). dev[p] receives the device or PARTD_NONE;
 * returns 1 when every partition found one, 0 when one did not (later ones
 * are left without), -1 on ENOMEM. */
int partd__fx_map(const partd_request *req, const partd__fx_layout *l, const int64_t *used,
                  uint32_t *dev);

/* FX's calculate_mem_bytes_needed of the union of two node lists a[0..na)
 * and b[0..nb) (b may be empty): each node's total size, plus the output of
 * each distinct input outside the union, a placeholder's or get_attr's
 * total size once. stamp (one per node, never equal to *token + 1 on entry)
 * and *token are the caller's scratch: the call advances *token. */
int64_t partd__fx_union_bytes(const partd_graph *g, const uint32_t *a, uint32_t na,
                              const uint32_t *b, uint32_t nb, uint32_t *stamp, uint32_t *token);

/* FX's get_bfs_level_partition: level[r] for each partition r of
 * order[0..n_order) (n_parts partitions in all, operation v in
 * part_of[v] or PARTD_NONE), 0 for those with no parent, else one more than
 * its deepest parent. PARTD_ENOMEM, or PARTD_EINTERNAL when the partitions
 * depend on each other in a cycle (the modes never build one). */
int partd__fx_levels(const partd_graph *g, const uint32_t *part_of, uint32_t n_parts,
                     const uint32_t *order, uint32_t n_order, uint32_t *level);

/* The plan of a partitioning (partitions in index order, memory `used`),
 * linked and timed, with summary.latency_ms = sec * 1000. */
int partd__fx_plan(const partd_request *req, partd_mode mode, const partd__fx_layout *l,
                   const int64_t *used, double sec, partd_plan **out);

#endif
