/*
 * plan.c - dispatching a request to its planners; see plan.h.
 */
#include "plan.h"

#include "json_read.h"
#include "partd.h"
#include "pipeline.h"
#include "sac.h"
#include "size_based.h"
#include "training.h"

/* ---- dispatch ------------------------------------------------------------ */

static int run_mode(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                    partd_problem *problem)
{
    switch (req->options.mode) {
    case PARTD_MODE_SIZE_BASED:
        return partd_size_based(req, cancel, out, problem);
    case PARTD_MODE_PIPELINE:
        return partd_pipeline(req, cancel, out, problem);
    case PARTD_MODE_TRAINING:
        return partd_training(req, cancel, out, problem);
    default:
        break;
    }
    partd_problem_set(problem, 422, "unsupported-mode", "Unsupported mode",
                      "this build of partd cannot plan in the requested mode");
    partd_problem_add(problem, "/options/mode", "not available in this build");
    return PARTD_EINVALID;
}

/* Every byte figure of a partition is a sum of distinct nodes' bytes, at
 * most 2^53 by decoding's bound on the graph's total (decode_link.c). The
 * summary's transfer_bytes adds the partitions' received bytes, which count
 * in their memory, which fits their devices, whose memory adds up to at most
 * 2^53 (decode_link.c again): so it fits too. Checked anyway, because a figure
 * over 2^53 (or a saturated sum) must never reach a result: that would be a
 * planner bug, reported as one. */
static int check_totals(const partd_plan *plan, partd_problem *problem)
{
    if (plan->summary.transfer_bytes >= 0 && plan->summary.transfer_bytes <= PARTD_MAX_BYTES)
        return PARTD_OK;
    partd_problem_set(problem, 500, "internal-error", "Internal error",
                      "the plan's total transfer between partitions came out as %lld bytes, "
                      "outside 0..2^53; please report this request",
                      (long long)plan->summary.transfer_bytes);
    return PARTD_EINTERNAL;
}

int partd_plan_run(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    *out = NULL;
    int rc = run_mode(req, cancel, out, problem);
    if (rc == PARTD_OK)
        rc = check_totals(*out, problem);
    if (rc == PARTD_OK && req->options.sac.enabled)
        rc = partd_sac_plan(req, cancel, &(*out)->sac, problem);
    if (rc != PARTD_OK) {
        partd_plan_free(*out);
        *out = NULL;
        if (rc == PARTD_ECANCELLED)
            partd_problem_set(problem, 409, "cancelled", "Cancelled",
                              "the job was cancelled while planning");
        else if (rc == PARTD_ETIMEOUT && !problem->status)
            partd_problem_set(problem, 422, "job-timeout", "Job timed out",
                              "planning did not finish within the job time limit");
        else if (rc == PARTD_ENOMEM)
            partd_problem_set(problem, 503, "out-of-memory", "Out of memory",
                              "the server ran out of memory while planning");
    }
    return rc;
}
