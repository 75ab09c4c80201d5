/*
 * plan.c - dispatching a request to its planners; see plan.h.
 */
#include "plan.h"

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

int partd_plan_run(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    *out = NULL;
    int rc = run_mode(req, cancel, out, problem);
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
