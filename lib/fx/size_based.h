/*
 * size_based.h - PyTorch FX Partitioner, PartitionMode.size_based, exactly.
 *
 * Reproduces torch.fx.experimental.accelerator_partitioner (1.13) on the
 * request's graph: single partition on the largest device when the graph
 * fits; otherwise the greedy fill in node order, single-node partitions once
 * devices run out and the best-fit mapping of those onto devices.
 * Errors (PARTD_EINFEASIBLE, with PyTorch's reason in the problem): not
 * enough memory in all devices, a node too large for any free device, no
 * valid partition-to-device mapping.
 */
#ifndef PARTD_SIZE_BASED_H
#define PARTD_SIZE_BASED_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

int partd_size_based(const partd_request *req, const partd_cancel *cancel,
                     partd_plan **out, partd_problem *problem);

#endif
