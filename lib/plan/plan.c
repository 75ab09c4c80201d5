/*
 * plan.c - dispatching a request to its planners; see plan.h.
 */
#include "partd/plan.h"

#include "decode/json_read.h"
#include "fx/aot_based.h"
#include "fx/cost_aware.h"
#include "fx/kl_based.h"
#include "fx/size_based.h"
#include "fx/sparse_nn.h"
#include "partd/partd.h"
#include "pipeline/pipeline.h"
#include "plan_internal.h"
#include "sac/sac.h"
#include "training/training.h"

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
    case PARTD_MODE_COST_AWARE:
        return partd_cost_aware(req, cancel, out, problem);
    case PARTD_MODE_KL_BASED:
        return partd_kl_based(req, cancel, out, problem);
    case PARTD_MODE_SPARSE_NN:
        return partd_sparse_nn(req, cancel, out, problem);
    case PARTD_MODE_AOT_BASED:
        return partd_aot_based(req, cancel, out, problem);
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

/* The batch model of training (contract): the graph is the whole batch of
 * a step, divided into M microbatches. A runtime splits graph.batch_size
 * samples into M chunks: with M above it some would be empty, and with M
 * not dividing it they differ in size, while the plan takes each as 1/M. */
static int batch_warnings(const partd_request *req, partd_plan *plan)
{
    int64_t b = req->graph.batch_size, m = req->options.training.microbatches;
    if (req->options.mode != PARTD_MODE_TRAINING || b == 0)
        return PARTD_OK;
    if (m > b)
        return partd_plan_warn(
            plan, "microbatches-above-batch",
            "options.training.microbatches (%lld) is more than graph.batch_size (%lld): the plan "
            "divides the graph's figures by %lld, but a batch of %lld sample%s splits into at "
            "most %lld microbatch%s; plan with at most %lld, or export the graph with a batch "
            "of at least %lld",
            (long long)m, (long long)b, (long long)m, (long long)b, b == 1 ? "" : "s",
            (long long)b, b == 1 ? "" : "es", (long long)b, (long long)m);
    if (b % m != 0)
        return partd_plan_warn(
            plan, "microbatches-do-not-divide-batch",
            "options.training.microbatches (%lld) does not divide graph.batch_size (%lld): the "
            "plan takes every microbatch as 1/%lld of the batch, but a runtime's microbatches "
            "differ in size (the last one smaller); plan with a number of microbatches that "
            "divides %lld",
            (long long)m, (long long)b, (long long)m, (long long)b);
    return PARTD_OK;
}

int partd_plan_run(const partd_request *req, const partd_cancel *cancel, partd_plan **out,
                   partd_problem *problem)
{
    *out = NULL;
    int rc = run_mode(req, cancel, out, problem);
    if (rc == PARTD_OK)
        rc = check_totals(*out, problem);
    if (rc == PARTD_OK && req->options.mode != PARTD_MODE_TRAINING)
        rc = partd__plan_first_modules(req, *out);
    if (rc == PARTD_OK)
        rc = batch_warnings(req, *out);
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
