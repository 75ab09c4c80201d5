/*
 * pipeline_cuts.h - options.pipeline.cut_after as stage-end positions:
 * shared by the pipeline planner (pipeline.c) and the request's up-front
 * checks (validate.c), which must not include a mode planner.
 *
 * Errors: PARTD_OK, PARTD_EINVALID (every bad entry added to the problem at
 * /options/pipeline/cut_after/i) or PARTD_ENOMEM; *cuts is malloc'd (caller
 * frees), NULL when there are none.
 */
#ifndef PARTD_PIPELINE_CUTS_H
#define PARTD_PIPELINE_CUTS_H

#include <stdint.h>

#include "partd/model.h"
#include "partd/problem.h"

/* Resolves options.pipeline.cut_after into ascending positions (operation
 * ranks after which a stage ends; *cuts malloc'd, NULL when there are
 * none). Needs only the request: decoding runs it (validate.c) so that a bad
 * name is a 422 before the job is accepted. Returns PARTD_OK, PARTD_EINVALID
 * (every bad entry added to pb at /options/pipeline/cut_after/i) or
 * PARTD_ENOMEM. */
int partd_pipeline_resolve_cuts(const partd_request *req, int32_t **cuts,
                                uint32_t *n_cuts, partd_problem *pb);

#endif
