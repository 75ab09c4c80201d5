/*
 * jobs_recover.c - recovery at start: every job the store holds as queued
 * or running is queued again (a request that no longer decodes fails with
 * its problem, a job whose runs ended too often fails: jobs_stored.c). On
 * a shared store there is nothing to recover: claims start instead. See
 * jobs.h and jobs_internal.h.
 */
#include "jobs_internal.h"

#include "core/log.h"
#include "partd/decode.h"
#include "partd/partd.h"

typedef struct recover_ctx {
    partd_jobs *j;
    int count;
    int rc;
} recover_ctx;

static void fail_recovered(partd_jobs *j, const partd_job_row *row, partd_problem *p)
{
    partd__jobs_fail_unrun(j, row, p);
    partd_log_msg("warn", "recover", "job %s no longer decodes and failed: %s", row->id,
                  p->detail ? p->detail : "");
}

/* A job that was running when the process died and has used up its
 * attempts: failed, never started again (no input makes the daemon
 * crash-loop). */
static void fail_exhausted(partd_jobs *j, const partd_job_row *row)
{
    partd__jobs_fail_crashed(j, row);
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
    if (partd__jobs_decode_stored(j, body, len, &req, &problem) != PARTD_OK) {
        fail_recovered(j, row, &problem);
        partd_problem_free(&problem);
        return;
    }
    partd_problem_free(&problem);
    /* A job that was running stays so in the store (the table shows it
     * queued): its lost attempt stays counted until the next one starts. */
    partd__jobs_job *jb = partd__jobs_job_new(row);
    if (!jb) {
        partd_request_free(req);
        rc->rc = PARTD_ENOMEM;
        return;
    }
    /* Recovered jobs were accepted earlier: they may exceed --queue-max. */
    atomic_fetch_add(&j->opt.metrics->jobs_queued, 1);
    partd__jobs_enqueue(j, jb, req);
    rc->count++;
}

int partd_jobs_recover(partd_jobs *j)
{
    if (partd_store_shared(j->opt.store)) {
        /* Other replicas may be running the store's unfinished jobs: they
         * are claimed like any queued job, a dead replica's once its lease
         * has run out. */
        partd__jobs_share_start(j);
        return 0;
    }
    recover_ctx ctx = {j, 0, PARTD_OK};
    int rc = partd_store_pending(j->opt.store, recover_one, &ctx);
    if (rc != PARTD_OK)
        return rc;
    return ctx.rc != PARTD_OK ? ctx.rc : ctx.count;
}
