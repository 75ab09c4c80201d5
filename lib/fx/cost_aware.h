/*
 * cost_aware.h - PyTorch FX Partitioner, PartitionMode.cost_aware: one
 * partition per operation, then, while it does not raise FX's cost
 * (get_latency_of_partitioned_graph), the merge of the pair of partitions
 * that gives the lowest cost (the last such pair in FX's order on ties),
 * among pairs within one bfs level of each other or connected, whose union
 * makes no cycle and whose partitions all map onto devices.
 *
 * As FX: one partition on the largest device when the graph fits there;
 * PARTD_EINFEASIBLE (422, problem filled) when all devices together have
 * less than the graph. Where FX returns partitions left without a device
 * (its mapping failed and no merge helped), partd returns FX's size_based
 * plan with this mode's cost instead, or the 422 size_based gives.
 * The pass keeps FX's device state before each partition of its list (up
 * to PARTD_COST_AWARE_CELL_BYTES per operation and device): a request
 * needing more than PARTD_COST_AWARE_MAX_STATE_BYTES gets PARTD_ETOOBIG,
 * a 422 search-limit problem at /devices saying what it would need.
 * PARTD_ENOMEM, PARTD_ECANCELLED as usual.
 */
#ifndef PARTD_COST_AWARE_H
#define PARTD_COST_AWARE_H

#include <stdint.h>

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

#define PARTD_COST_AWARE_CELL_BYTES 88
#define PARTD_COST_AWARE_MAX_STATE_BYTES ((uint64_t)256 << 20)

int partd_cost_aware(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                     partd_problem *problem);

#endif
