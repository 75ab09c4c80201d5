/*
 * plan_internal.h - what the files of lib/plan share (partd__plan_*,
 * private to this folder):
 *   plan.c          the dispatcher (partd/plan.h)
 *   plan_types.c    allocating, linking and timing plans (partd/plan_types.h)
 *   plan_modules.c  the module whose call begins each partition of a
 *                   node-level plan (partd_part.first_module)
 *
 * Errors: PARTD_OK or PARTD_ENOMEM (partd.h); on failure the plan's
 * first_module members are left as they were (PARTD_NONE from
 * partd_plan_alloc).
 */
#ifndef PARTD_PLAN_INTERNAL_H
#define PARTD_PLAN_INTERNAL_H

#include "partd/model.h"
#include "partd/plan_types.h"

/* Sets parts[j].first_module of a node-level plan (pipeline, size_based):
 * the outermost module M such that splitting the program before M's call
 * is exactly the cut before partition j, as
 * torch.distributed.pipelining.pipeline()'s split_spec
 * {M: SplitPoint.BEGINNING} splits. That needs, with the request's nodes in
 * program order (order_was_topological) and the partitions consecutive runs
 * of it in id order:
 *   - partition j's first operation is the first operation under M (M's
 *     module or a module below it, by fqn prefix at a '.' boundary): the
 *     call begins there;
 *   - some operation has M itself as its module (M is called: a container
 *     that is never called, such as an nn.ModuleList, splits nothing);
 *   - M is called once: its operations are one unbroken run, and under it
 *     are call_module operations, each with a target no other call_module
 *     operation has (a second call would repeat one; a module whose forward
 *     calls no submodule cannot show a second call, so it is not taken).
 * Partitions with no such module keep PARTD_NONE. */
int partd__plan_first_modules(const partd_request *req, partd_plan *plan);

#endif
