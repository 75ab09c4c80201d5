/*
 * pipeline_search.h - the exact search for the best contiguous split
 * (internal to pipeline*.c).
 *
 * partd__pipeline_search minimises the largest stage cost (md->objective) over every
 * split into md->stages non-empty stages that respects the required cuts and,
 * unless the objective is PL_OBJ_SHORTFALL, every device's memory; among the
 * optimal splits it takes the smallest sum of stage times (exact in ticks and
 * bytes), then the earliest cuts. See pipeline_search.c for the method.
 *
 * Returns PARTD_OK (res->found = 0 when no split respects the memory limits),
 * PARTD_ENOMEM, the cancel flag's PARTD_ECANCELLED / PARTD_ETIMEOUT, or
 * PARTD_EINTERNAL (a bug: the tie breaks found no split in proven windows).
 */
#ifndef PARTD_PIPELINE_SEARCH_H
#define PARTD_PIPELINE_SEARCH_H

#include "partd/cancel.h"
#include "pipeline_model.h"

typedef struct partd_pipeline_result {
    int found;
    int32_t *cuts;       /* stages + 1 positions: 0 = c0 < c1 < ... < cS = m;
                            caller-provided */
    double bottleneck;   /* the optimal largest stage cost */
    uint32_t probes;     /* decision probes the search ran */
} partd_pipeline_result;

int partd__pipeline_search(const partd_pipeline_model *md, const partd_cancel *cancel, partd_pipeline_result *res);

#endif
