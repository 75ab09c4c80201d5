/*
 * pipeline_ties.h - the contract's tie breaks among the optimal splits
 * (internal to pipeline*.c).
 *
 * Given the windows W[0..S] of the optimal bound (every cut of every split
 * whose stages all cost <= bound lies in them), partd__pipeline_ties_break picks the split
 * with the smallest sum of stage times, then the earliest cuts, by a suffix
 * DP over the windows. Sums are exact (ticks and bytes); two sums compare by
 * the sign of their difference in milliseconds.
 *
 * Per stage it either enumerates every allowed (start, end) pair, when there
 * are few (narrow windows: the usual case), or sweeps the starts downwards
 * with a segment tree over the ends (wide windows: one stage dominates and the
 * others have slack), O((|W| + readers) log m) instead of |W|^2.
 *
 * Returns PARTD_OK with cuts[0..S] filled, PARTD_ENOMEM, the cancel flag's
 * code, or PARTD_EINTERNAL when the windows admit no split (never for windows
 * from a feasible probe).
 */
#ifndef PARTD_PIPELINE_TIES_H
#define PARTD_PIPELINE_TIES_H

#include "partd/cancel.h"
#include "pipeline_model.h"
#include "pipeline_set.h"

int partd__pipeline_ties_break(const partd_pipeline_model *md, const partd_cancel *cancel, const partd_pipeline_set *W,
                  double bound, int32_t *cuts);

#endif
