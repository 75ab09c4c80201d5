/*
 * sparse_nn.h - PyTorch FX Partitioner, PartitionMode.sparse_nn: embedding
 * nodes (module_type containing "Embedding") and the other operations in
 * separate partitions, filled in node order by size and then combined by
 * size; each embedding partition on a device of its own (devices in list
 * order), the other partitions on all of those devices.
 *
 * As FX: one partition on the largest device when the graph fits there;
 * PARTD_EINFEASIBLE (422, problem filled) when all devices together have
 * less than the graph, when devices differ in memory, when a node does not
 * fit a device, when there are more embedding partitions than devices, or
 * when an embedding partition and the other partitions do not fit one
 * device. Where FX raises on a valid graph (one with no embedding node, or
 * with embeddings only: IndexError), partd plans: with no embedding, the
 * partitions go on devices by FX's best-fit mapping (422 when that finds
 * none). PARTD_ENOMEM, PARTD_ECANCELLED as usual.
 */
#ifndef PARTD_SPARSE_NN_H
#define PARTD_SPARSE_NN_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

int partd_sparse_nn(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem);

#endif
