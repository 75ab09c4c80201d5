/*
 * jobs_recover.c - recovery at start: every job the store holds as queued
 * or running is queued again (a request that no longer decodes fails with
 * its problem). Also what recovery and claims on a shared store
 * (jobs_claimed.c) share: decoding a stored request and failing a job
 * that cannot run. See jobs.h and jobs_internal.h.
 */
#include "jobs_internal.h"

#include <stdlib.h>

#include "decode.h"
#include "intake.h"
#include "log.h"
#include "partd.h"

typedef struct recover_ctx {
    partd_jobs *j;
    int count;
    int rc;
} recover_ctx;

void partd_jobs_fail_unrun(partd_jobs *j, const partd_job_row *row, char *error, int status)
{
    partd_job_row failed = *row;
    failed.status = PARTD_JOB_FAILED;
    failed.finished_ms = partd_now_ms();
    failed.summary = NULL;
    failed.error = error;
    failed.error_status = status;
    const partd_job_row *rows[1] = {&failed};
    partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    atomic_fetch_add(&j->svc->metrics.jobs_finished[PARTD_JOB_FAILED], 1);
}

int partd_jobs_decode_stored(const partd_jobs *j, const char *body, size_t len,
                             partd_request **req, partd_problem *problem)
{
    int rc = partd_intake_decode_stored(body, len, &j->svc->limits, req, problem);
    if (rc != PARTD_OK && problem->status == 0)
        partd_problem_set(problem, 422, "invalid-request", "Invalid request", "%s",
                          partd_strerror(rc));
    return rc;
}

static void fail_recovered(partd_jobs *j, const partd_job_row *row, partd_problem *p)
{
    char *error = partd_problem_to_json(p, NULL);
    partd_jobs_fail_unrun(j, row, error, p->status);
    free(error);
    partd_log_msg("warn", "recover", "job %s no longer decodes and failed: %s", row->id,
                  p->detail ? p->detail : "");
}

char *partd_jobs_crash_problem(int attempts, int *status)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 500, "planner-crashed", "Planner crashed",
                      "the planner crashed or its replica died %d times while running this "
                      "job; it is not retried again",
                      attempts);
    char *text = partd_problem_to_json(&p, NULL);
    *status = p.status;
    partd_problem_free(&p);
    return text;
}

/* A job that was running when the process died and has used up its
 * attempts: failed, never started again (no input makes the daemon
 * crash-loop). */
static void fail_exhausted(partd_jobs *j, const partd_job_row *row)
{
    int status = 500;
    char *error = partd_jobs_crash_problem(row->attempts, &status);
    partd_jobs_fail_unrun(j, row, error, status);
    free(error);
    partd_log_msg("warn", "recover", "job %s was running when the process died %d times; "
                  "it failed", row->id, row->attempts);
}

static void recover_one(const partd_job_row *row, const char *body, size_t len, void *ctx)
{
    recover_ctx *rc = ctx;
    partd_jobs *j = rc->j;
    /* Before decoding: decoding is part of what may have crashed. */
    if (row->status == PARTD_JOB_RUNNING && row->attempts >= PARTD_JOBS_MAX_ATTEMPTS) {
        fail_exhausted(j, row);
        return;
    }
    partd_request *req = NULL;
    partd_problem problem;
    partd_problem_init(&problem);
    if (partd_jobs_decode_stored(j, body, len, &req, &problem) != PARTD_OK) {
        fail_recovered(j, row, &problem);
        partd_problem_free(&problem);
        return;
    }
    partd_problem_free(&problem);
    /* A job that was running stays so in the store (the table shows it
     * queued): its lost attempt stays counted until the next one starts. */
    job *jb = partd_jobs_job_new(row);
    if (!jb) {
        partd_request_free(req);
        rc->rc = PARTD_ENOMEM;
        return;
    }
    /* Recovered jobs were accepted earlier: they may exceed --queue-max. */
    atomic_fetch_add(&j->svc->metrics.jobs_queued, 1);
    partd_jobs_enqueue(j, jb, req);
    rc->count++;
}

int partd_jobs_recover(partd_jobs *j)
{
    if (partd_store_shared(j->svc->store)) {
        /* Other replicas may be running the store's unfinished jobs: they
         * are claimed like any queued job, a dead replica's once its lease
         * has run out. */
        partd_jobs_share_start(j);
        return 0;
    }
    recover_ctx ctx = {j, 0, PARTD_OK};
    int rc = partd_store_pending(j->svc->store, recover_one, &ctx);
    if (rc != PARTD_OK)
        return rc;
    return ctx.rc != PARTD_OK ? ctx.rc : ctx.count;
}
