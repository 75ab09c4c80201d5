/*
 * jobs_stored.c - a job the engine takes from the store rather than from a
 * client: decoding the request stored with it, failing it when it cannot
 * run (its request no longer decodes, or its runs ended without finishing
 * too often), and handing a claim back. Recovery at start (jobs_recover.c)
 * and claims on a shared store (jobs_share.c, jobs_claimed.c) share these.
 * See jobs_internal.h.
 *
 * Threads: any (the pool decodes claimed jobs, the store thread fails
 * those whose attempts are used up); they touch only the store, the
 * decode limits and atomic metrics. A write the store refuses is not
 * retried here: the job stays as the store has it (queued or claimed; a
 * claim's lease runs out and the job is claimed again).
 */
#include "jobs_internal.h"

#include <stdlib.h>

#include "core/time.h"
#include "intake.h"
#include "partd/partd.h"

int partd__jobs_decode_stored(const partd_jobs *j, const char *body, size_t len,
                              partd_request **req, partd_problem *problem)
{
    partd_decode_limits limits = j->opt.limits;
    limits.cancel = &j->decode_stop;
    int rc = partd_intake_decode_stored(body, len, &limits, req, problem);
    if (rc == PARTD_ECANCELLED)
        return rc;
    if (rc != PARTD_OK && problem->status == 0)
        partd_problem_set(problem, 422, "invalid-request", "Invalid request", "%s",
                          partd_strerror(rc));
    return rc;
}

void partd__jobs_fail_unrun(partd_jobs *j, const partd_job_row *row, const partd_problem *p)
{
    partd_job_row failed = *row;
    failed.status = PARTD_JOB_FAILED;
    failed.finished_ms = partd_time_now_ms();
    failed.summary = NULL;
    failed.error = partd_problem_to_json(p, NULL); /* NULL when memory ran out */
    failed.error_status = p->status;
    const partd_job_row *rows[1] = {&failed};
    partd_store_finish_jobs(j->opt.store, NULL, rows, 1);
    free(failed.error);
    atomic_fetch_add(&j->opt.metrics->jobs_finished[PARTD_JOB_FAILED], 1);
}

void partd__jobs_fail_crashed(partd_jobs *j, const partd_job_row *row)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 500, "planner-crashed", "Planner crashed",
                      "the planner crashed or its replica died %d times while running this "
                      "job; it is not retried again",
                      row->attempts);
    partd__jobs_fail_unrun(j, row, &p);
    partd_problem_free(&p);
}

void partd__jobs_give_back(partd_jobs *j, const partd_job_row *row)
{
    partd_job_row back = *row;
    back.status = PARTD_JOB_QUEUED;
    const partd_job_row *rows[1] = {&back};
    partd_store_finish_jobs(j->opt.store, NULL, rows, 1);
}
