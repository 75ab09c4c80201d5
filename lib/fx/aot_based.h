/*
 * aot_based.h - PyTorch FX Partitioner, PartitionMode.aot_based: the
 * partitions and devices the request gives (options.aot), with FX's memory
 * of each partition and FX's cost of the whole (summary.latency_ms).
 *
 * Partitions come in ascending order of the given ids. FX takes any map and
 * checks nothing; partd refuses one FX would hand back broken:
 * PARTD_EINFEASIBLE (422, problem filled) when the partitions depend on each
 * other in a cycle, or when the partitions given a device need more than its
 * memory_bytes. PARTD_ENOMEM, PARTD_ECANCELLED as usual.
 */
#ifndef PARTD_AOT_BASED_H
#define PARTD_AOT_BASED_H

#include "partd/cancel.h"
#include "partd/model.h"
#include "partd/plan_types.h"
#include "partd/problem.h"

int partd_aot_based(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem);

#endif
