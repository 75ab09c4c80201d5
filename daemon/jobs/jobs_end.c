/*
 * jobs_end.c - how a run ends, once planning is over: decided on the loop
 * (succeeded, failed with the problem that says why, or left queued by a
 * shutdown; only the result kept when every job was cancelled meanwhile),
 * the rows of its jobs copied for the write, written to the store in one
 * transaction on whichever thread writes it (the loop, or the writer on a
 * shared store), then applied on the loop to the cache, the table and the
 * metrics. Final rows the store refused go to jobs_unsaved.c.
 *
 * Errors: a write the store refuses fails a computed plan's jobs with a
 * "store-unavailable" problem (written instead), and leaves r->end.stored
 * 0 when even that is refused; a problem document that cannot be made for
 * want of memory is replaced by a fixed "out-of-memory" one. Nothing is
 * returned to a caller but whether there is anything to write.
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/time.h"
#include "partd/partd.h"

static void problem_for(partd__jobs_run *r, partd_problem *p, uint64_t timeout_ms)
{
    if (r->rc == PARTD_ETIMEOUT) {
        partd_problem_set(p, 503, "job-timeout", "Planning timed out",
                          "the job took longer than its time limit (--job-timeout-ms = %llu "
                          "ms; planning, rendering and storing count)",
                          (unsigned long long)timeout_ms);
    } else if (r->rc == PARTD_ENOMEM) {
        /* Not the request's fault, and it may well fit later. */
        partd_problem_free(p);
        partd_problem_init(p);
        partd_problem_set(p, 503, "out-of-memory", "Out of memory",
                          "the server ran out of memory planning or rendering this job; "
                          "submit it again");
    } else if (p->status == 0) {
        int status = r->rc == PARTD_EINFEASIBLE || r->rc == PARTD_EINVALID ? 422 : 500;
        partd_problem_set(p, status, status == 422 ? "planning-failed" : "internal-error",
                          status == 422 ? "No plan" : "Planning failed", "%s",
                          partd_strerror(r->rc));
    }
}

static char *store_failure_problem(int *status)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 503, "store-unavailable", "Result not stored",
                      "the plan was computed but the store could not save it (disk full or "
                      "read-only data directory?); submit the job again once it is fixed");
    char *text = partd_problem_to_json(&p, NULL);
    *status = 503;
    partd_problem_free(&p);
    return text;
}

/* The problem of a job that failed for want of memory, when not even its
 * problem document could be made. */
static const char OOM_PROBLEM[] =
    "{\"type\":\"urn:partd:problem:out-of-memory\",\"title\":\"Out of memory\","
    "\"status\":503,\"detail\":\"the server ran out of memory finishing this job; "
    "submit it again\",\"errors\":[]}";

/* A malloc'd copy of text, or of OOM_PROBLEM when that fails (then
 * *status becomes 503); NULL only when both fail. */
static char *error_or_oom(char *text, int *status)
{
    if (text)
        return text;
    *status = 503;
    return strdup(OOM_PROBLEM);
}

/* Sets the final state decided in r->end on a job's row (a copy). */
static void end_row(const partd__jobs_run *r, partd_job_row *row)
{
    const struct partd__jobs_run_end *e = &r->end;
    row->status = e->status;
    row->finished_ms = e->status == PARTD_JOB_QUEUED ? 0 : e->now;
    row->summary = e->status == PARTD_JOB_SUCCEEDED ? r->summary : NULL;
    row->error = e->error;
    row->error_status = e->error_status;
}

/* Writes the final rows of r's jobs (and the result, when given) in one
 * transaction: PARTD_OK or the store's error. From the copies taken at the
 * decision; without them (no memory) each job is written on its own from
 * the table, on the loop only (the first with the result). */
static int write_rows(partd_jobs *j, partd__jobs_run *r, const partd_store_result *res)
{
    struct partd__jobs_run_end *e = &r->end;
    if (e->copies) {
        for (size_t i = 0; i < e->n_rows; i++)
            end_row(r, &e->copies[i]);
        return partd_store_finish_jobs(j->opt.store, res, e->rows, e->n_rows);
    }
    int rc = PARTD_OK;
    for (const partd__jobs_job *jb = r->jobs; jb && rc == PARTD_OK; jb = jb->run_next) {
        partd_job_row one = jb->row;
        end_row(r, &one);
        const partd_job_row *row = &one;
        rc = partd_store_finish_jobs(j->opt.store, jb == r->jobs ? res : NULL, &row, 1);
    }
    return rc;
}

/* Loop thread: copies the rows of r's jobs for the write (shallow: the
 * store only reads them, and end_row replaces their pointers). */
static void copy_rows(partd__jobs_run *r)
{
    struct partd__jobs_run_end *e = &r->end;
    e->copies = calloc(r->n_jobs + 1, sizeof *e->copies);
    e->rows = calloc(r->n_jobs + 1, sizeof *e->rows);
    if (!e->copies || !e->rows) {
        free(e->copies);
        free(e->rows);
        e->copies = NULL;
        e->rows = NULL;
        return;
    }
    for (const partd__jobs_job *jb = r->jobs; jb; jb = jb->run_next) {
        e->copies[e->n_rows] = jb->row;
        e->rows[e->n_rows] = &e->copies[e->n_rows];
        e->n_rows++;
    }
}

/* Loop thread: how r ends (r->end), once planning is over. Returns whether
 * there is anything to write: the jobs' final rows, or only the result of
 * a plan every job of which was cancelled meanwhile (kept for the cache). */
int partd__jobs_end_decide(partd_jobs *j, partd__jobs_run *r)
{
    struct partd__jobs_run_end *e = &r->end;
    e->now = partd_time_now_ms();
    if (r->n_jobs == 0) {
        e->result_only = r->rc == PARTD_OK &&
                         r->forms[PARTD_CODING_IDENTITY].data != NULL;
        return e->result_only;
    }
    if (r->abandoned) {
        e->status = PARTD_JOB_QUEUED; /* left for the next start */
    } else if (r->rc == PARTD_OK && partd_cancel_check(&r->cancel) != PARTD_ETIMEOUT) {
        e->status = PARTD_JOB_SUCCEEDED;
    } else {
        /* Failed, or over its deadline by the time it would be stored: the
         * deadline holds for storing too. */
        if (r->rc == PARTD_OK)
            r->rc = PARTD_ETIMEOUT;
        e->status = PARTD_JOB_FAILED;
        problem_for(r, &r->problem, j->opt.job_timeout_ms);
        e->error_status = r->problem.status;
        e->error = error_or_oom(partd_problem_to_json(&r->problem, NULL), &e->error_status);
    }
    copy_rows(r);
    e->decided = 1;
    return 1;
}

/* Any thread: writes r's end; when the store refuses a computed plan, its
 * jobs fail with a problem that says so (and that is written instead). */
void partd__jobs_end_store(partd_jobs *j, partd__jobs_run *r)
{
    struct partd__jobs_run_end *e = &r->end;
    if (e->result_only) {
        partd_store_result res = {r->cache_key, r->etag, r->summary, r->forms};
        e->stored = partd_store_put_result(j->opt.store, &res) == PARTD_OK;
        return;
    }
    if (e->status == PARTD_JOB_SUCCEEDED) {
        partd_store_result res = {r->cache_key, r->etag, r->summary, r->forms};
        e->stored = write_rows(j, r, &res) == PARTD_OK;
        if (!e->stored) {
            e->status = PARTD_JOB_FAILED;
            e->error = error_or_oom(store_failure_problem(&e->error_status), &e->error_status);
        }
    }
    if (!e->stored)
        e->stored = write_rows(j, r, NULL) == PARTD_OK;
}

/* Cache first, then table, so that whatever a poll sees is already
 * durable. Jobs whose final state could not be written stay in the table
 * as the store holds them (queued or running: a state is never shown final
 * before it is stored, so one shown final stays so across a restart) while
 * jobs_unsaved.c retries the write; on a shared store they are let go
 * instead. */
void partd__jobs_end_apply(partd_jobs *j, partd__jobs_run *r)
{
    const struct partd__jobs_run_end *e = &r->end;
    partd_job_status status = e->status;
    int stored = e->stored;
    if (status == PARTD_JOB_SUCCEEDED) {
        /* Cached only once stored (status stays succeeded only then): a
         * cache hit always has a stored result. */
        char *summary = strdup(r->summary);
        if (summary)
            partd_cache_put(j->opt.cache, r->cache_key, r->etag, r->forms, summary, NULL);
    }
    double secs = (double)(r->end_ns - r->start_ns) / 1e9;
    partd__jobs_job *jb = r->jobs;
    while (jb) {
        partd__jobs_job *next = jb->run_next;
        jb->run = NULL;
        jb->run_next = NULL;
        if (jb->lost) {
            /* The store left its row as the cancel or the new claim made it. */
            partd__jobs_table_remove(j, jb);
            partd__jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
            partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                          jb->row.id);
            partd__jobs_job_free(jb);
            jb = next;
            continue;
        }
        /* Shared: a job whose end cannot be written is let go; its lease
         * runs out and a replica runs it again (nothing is lost). */
        int keep = !stored && status != PARTD_JOB_QUEUED && !j->shared;
        if (!keep) {
            /* Polls now read the store, which has the final state. */
            partd__jobs_table_remove(j, jb);
        } else {
            /* Polls keep reading the row as stored; the final one waits. */
            jb->end = jb->row;
            end_row(r, &jb->end);
            jb->end.summary = jb->end.summary ? strdup(jb->end.summary) : NULL;
            jb->end.error = jb->end.error ? strdup(jb->end.error) : NULL;
        }
        if (status != PARTD_JOB_QUEUED) {
            partd_metrics_histogram_observe(&j->opt.metrics->job_duration, secs);
            if (!keep) {
                partd__jobs_set_status(j, jb, status);
                partd__jobs_log(jb, "duration_ms", secs * 1000.0);
            }
        } else {
            partd__jobs_set_status(j, jb, PARTD_JOB_QUEUED);
            partd__jobs_log(jb, NULL, 0);
        }
        if (keep)
            partd__jobs_unsaved_add(j, jb);
        else
            partd__jobs_job_free(jb);
        jb = next;
    }
    r->jobs = NULL;
    r->n_jobs = 0;
}
