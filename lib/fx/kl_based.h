/*
 * kl_based.h - PyTorch FX Partitioner, PartitionMode.kl_based: FX's
 * size_based partitions, then, for every operation in graph order, the
 * swap of it with a node of another partition (or its move there) that
 * FX's Kernighan-Lin pass (kl_based_partition, 1.13) picks by the cost of
 * the whole graph (get_latency_of_partitioned_graph), with every quirk of
 * that pass: the partition of a node is the one size_based gave it, a
 * partition pair is taken on the cost of the move alone but the swap done
 * is the cheapest of the pair, and the last pair taken is done again at
 * every later operation. Among swaps of equal cost the first in graph order
 * wins (FX: the iteration order of a Python set of nodes), the move last.
 *
 * As FX: one partition on the largest device when the graph fits there;
 * PARTD_EINFEASIBLE (422, problem filled) when all devices together have
 * less than the graph, or size_based fails. Where FX's pass ends with a
 * node in two partitions, a cycle between partitions, a partition without
 * a device or a device over its memory, or raises (a cycle it walks
 * forever), partd returns the better of the pass's partitions mapped afresh
 * (when they are valid) and FX's size_based plan, costed as this mode's.
 * Partitions the pass leaves empty are not listed. PARTD_ENOMEM,
 * PARTD_ECANCELLED as usual.
 */
#ifndef PARTD_KL_BASED_H
#define PARTD_KL_BASED_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

int partd_kl_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem);

/* partd_kl_based with every try's cost, memory and device mapping that
 * the incremental state gives also recomputed for the whole list, as FX
 * does: PARTD_EINTERNAL when any figure differs by a bit, else the same
 * answer. Quadratic and more; for tests. */
int partd_kl_based_checked(const partd_request *req, const partd_cancel *cancel,
                           partd_plan **out, partd_problem *problem);

#endif
