/*
 * jobs_pool.c - runs of the job engine on libuv's thread pool: planning on
 * a pool thread (plan_work), completion on the loop thread (after_plan),
 * finishing the run's jobs into the store and the cache, and retrying store
 * writes that failed. See jobs_internal.h for the threads and ownership.
 */
#define _GNU_SOURCE
#include "jobs_internal.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "log.h"
#include "partd.h"
#include "plan.h"
#include "result.h"

/* How often the final state of jobs the store refused is written again. */
#define RETRY_MS 1000

/* ---- pool thread -------------------------------------------------------- */

static void result_too_large(partd_problem *p, uint64_t max)
{
    partd_problem_set(p, 422, "result-too-large", "Result too large",
                      "the result document is larger than the server's limit "
                      "(--max-result-bytes = %llu bytes); ask for less detail with "
                      "options.result.detail: \"summary\"",
                      (unsigned long long)max);
}

/* Planner threads run at a lower priority so that the HTTP threads (health
 * checks, polls) stay responsive while every worker is busy. */
static void lower_thread_priority(void)
{
    static _Thread_local int done;
    if (!done) {
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
        done = 1;
    }
}

/* Bounded: a loop that cannot answer (stuck store) does not hold the run
 * back for ever; the attempt is then counted late or not at all. */
#define ACK_WAIT_MS 10000

static void wait_started_ack(run *r)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ACK_WAIT_MS / 1000;
    pthread_mutex_lock(&r->ack_lock);
    while (!r->acked)
        if (pthread_cond_timedwait(&r->ack_cond, &r->ack_lock, &until) != 0)
            break;
    pthread_mutex_unlock(&r->ack_lock);
}

static void plan_work(uv_work_t *w)
{
    run *r = w->data;
    partd_jobs *j = r->owner;
    lower_thread_priority();
    r->start_ms = partd_now_ms();
    r->start_ns = partd_monotonic_ns();
    uint64_t timeout = j->svc->cfg->job_timeout_ms;
    if (timeout)
        r->cancel.deadline_ns = r->start_ns + (int64_t)timeout * 1000000;

    pthread_mutex_lock(&j->queue_lock);
    int posted = !j->closed;
    if (posted) {
        partd_jobs_post(j, &r->started_msg);
        uv_async_send(&j->wakeup);
    }
    pthread_mutex_unlock(&j->queue_lock);
    if (posted)
        wait_started_ack(r);

    partd_plan *plan = NULL;
    r->rc = partd_plan_run(r->req, &r->cancel, &plan, &r->problem);
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag, and the size limit. */
        partd_blob *doc = &r->forms[PARTD_CODING_IDENTITY];
        uint64_t max = j->svc->cfg->max_result_bytes;
        /* Rendered once; the summary is copied as it is written. */
        doc->data = partd_result_render(r->req, plan, &r->cancel,
                                        max > SIZE_MAX ? SIZE_MAX : (size_t)max, &doc->len,
                                        &r->summary, &r->rc);
        if (r->rc == PARTD_ETOOBIG)
            result_too_large(&r->problem, max);
        if (r->rc == PARTD_OK && partd_sha256_hex(doc->data, doc->len, r->etag) != PARTD_OK)
            r->rc = PARTD_EINTERNAL;
    }
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag too. */
        int rc = partd_encode_all_within(r->forms, &r->cancel);
        if (rc == PARTD_ECANCELLED || rc == PARTD_ETIMEOUT)
            r->rc = rc;
        else if (rc != PARTD_OK)
            /* The document itself is fine; it is only served uncompressed. */
            partd_log_msg("warn", "job", "compressing the result of %s failed; serving it "
                          "uncompressed only", r->cache_key);
    }
    partd_plan_free(plan);
    /* The model can be large; it is not needed after planning. */
    partd_request_free(r->req);
    r->req = NULL;
    r->end_ns = partd_monotonic_ns();
}

/* ---- runs (loop thread) ------------------------------------------------- */

void partd_jobs_unkey(partd_jobs *j, run *r)
{
    if (r->keyed) {
        partd_map_remove(&j->runs_by_key, r->cache_key);
        r->keyed = 0;
    }
}

static void run_free(partd_jobs *j, run *r)
{
    partd_jobs_unkey(j, r);
    if (r->prev)
        r->prev->next = r->next;
    else
        j->runs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    j->n_runs--;
    partd_request_free(r->req);
    partd_blobs_free(r->forms);
    free(r->summary);
    free(r->end.error);
    free(r->end.copies);
    free(r->end.rows);
    partd_problem_free(&r->problem);
    pthread_cond_destroy(&r->ack_cond);
    pthread_mutex_destroy(&r->ack_lock);
    free(r);
}

static void after_plan(uv_work_t *w, int status);

run *partd_jobs_run_new(partd_jobs *j, partd_request *req)
{
    run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->owner = j;
    r->req = req;
    partd_cancel_init(&r->cancel, 0);
    pthread_mutex_init(&r->ack_lock, NULL);
    pthread_cond_init(&r->ack_cond, NULL);
    partd_problem_init(&r->problem);
    snprintf(r->cache_key, sizeof r->cache_key, "%s", req->cache_key);
    r->work.data = r;
    r->started_msg.kind = MSG_STARTED;
    r->started_msg.run = r;
    if (partd_map_put(&j->runs_by_key, r->cache_key, r) != PARTD_OK) {
        pthread_cond_destroy(&r->ack_cond);
        pthread_mutex_destroy(&r->ack_lock);
        free(r);
        return NULL;
    }
    r->keyed = 1;
    r->next = j->runs;
    if (j->runs)
        j->runs->prev = r;
    j->runs = r;
    j->n_runs++;
    if (uv_queue_work(j->loop, &r->work, plan_work, after_plan) != 0) {
        r->req = NULL; /* the caller still owns it */
        run_free(j, r);
        return NULL;
    }
    return r;
}

void partd_jobs_attach(run *r, job *jb)
{
    jb->run = r;
    jb->run_next = r->jobs;
    r->jobs = jb;
    r->n_jobs++;
}

void partd_jobs_detach(run *r, job *jb)
{
    for (job **p = &r->jobs; *p; p = &(*p)->run_next)
        if (*p == jb) {
            *p = jb->run_next;
            r->n_jobs--;
            break;
        }
    jb->run = NULL;
    jb->run_next = NULL;
}

/* Stops a run nobody waits for any more. */
void partd_jobs_stop_run(partd_jobs *j, run *r)
{
    partd_jobs_unkey(j, r); /* later identical jobs must not join a cancelled run */
    if (uv_cancel((uv_req_t *)&r->work) != 0)
        atomic_store(&r->cancel.cancelled, 1);
}

void partd_jobs_mark_running(partd_jobs *j, job *jb, run *r)
{
    pthread_mutex_lock(&j->table_lock);
    jb->row.started_ms = r->start_ms;
    if (!j->shared) {
        jb->row.attempts++;
        snprintf(jb->row.runner, sizeof jb->row.runner, "%s", j->svc->runner);
    }
    pthread_mutex_unlock(&j->table_lock);
    /* On a shared store the claim already counted the attempt durably. */
    if (!j->shared)
        partd_store_mark_running(j->svc->store, jb->row.id, r->start_ms, j->svc->runner);
    double waited = (double)(r->start_ms - jb->row.created_ms) / 1000.0;
    partd_histogram_observe(&j->svc->metrics.queue_wait, waited > 0 ? waited : 0);
    partd_jobs_set_status(j, jb, PARTD_JOB_RUNNING);
    partd_jobs_log(jb, "queue_wait_ms", (double)(r->start_ms - jb->row.created_ms));
}

void partd_jobs_on_started(partd_jobs *j, run *r)
{
    r->started = 1;
    for (job *jb = r->jobs; jb; jb = jb->run_next)
        partd_jobs_mark_running(j, jb, r);
    pthread_mutex_lock(&r->ack_lock);
    r->acked = 1;
    pthread_cond_signal(&r->ack_cond);
    pthread_mutex_unlock(&r->ack_lock);
}

static void problem_for(run *r, partd_problem *p, uint64_t timeout_ms)
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
static void end_row(const run *r, partd_job_row *row)
{
    const struct run_end *e = &r->end;
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
static int write_rows(partd_jobs *j, run *r, const partd_store_result *res)
{
    struct run_end *e = &r->end;
    if (e->copies) {
        for (size_t i = 0; i < e->n_rows; i++)
            end_row(r, &e->copies[i]);
        return partd_store_finish_jobs(j->svc->store, res, e->rows, e->n_rows);
    }
    int rc = PARTD_OK;
    for (const job *jb = r->jobs; jb && rc == PARTD_OK; jb = jb->run_next) {
        partd_job_row one = jb->row;
        end_row(r, &one);
        const partd_job_row *row = &one;
        rc = partd_store_finish_jobs(j->svc->store, jb == r->jobs ? res : NULL, &row, 1);
    }
    return rc;
}

/* Loop thread: copies the rows of r's jobs for the write (shallow: the
 * store only reads them, and end_row replaces their pointers). */
static void copy_rows(run *r)
{
    struct run_end *e = &r->end;
    e->copies = calloc(r->n_jobs + 1, sizeof *e->copies);
    e->rows = calloc(r->n_jobs + 1, sizeof *e->rows);
    if (!e->copies || !e->rows) {
        free(e->copies);
        free(e->rows);
        e->copies = NULL;
        e->rows = NULL;
        return;
    }
    for (const job *jb = r->jobs; jb; jb = jb->run_next) {
        e->copies[e->n_rows] = jb->row;
        e->rows[e->n_rows] = &e->copies[e->n_rows];
        e->n_rows++;
    }
}

/* Loop thread: how r ends (r->end), once planning is over. Returns whether
 * there is anything to write: the jobs' final rows, or only the result of
 * a plan every job of which was cancelled meanwhile (kept for the cache). */
static int end_decide(partd_jobs *j, run *r)
{
    struct run_end *e = &r->end;
    e->now = partd_now_ms();
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
        problem_for(r, &r->problem, j->svc->cfg->job_timeout_ms);
        e->error_status = r->problem.status;
        e->error = error_or_oom(partd_problem_to_json(&r->problem, NULL), &e->error_status);
    }
    /* Later identical jobs start a run of their own (or find the cache):
     * the rows to write are fixed now. */
    partd_jobs_unkey(j, r);
    copy_rows(r);
    e->decided = 1;
    return 1;
}

/* Any thread: writes r's end; when the store refuses a computed plan, its
 * jobs fail with a problem that says so (and that is written instead). */
void partd_jobs_end_store(partd_jobs *j, run *r)
{
    struct run_end *e = &r->end;
    if (e->result_only) {
        partd_store_result res = {r->cache_key, r->etag, r->summary, r->forms};
        e->stored = partd_store_put_result(j->svc->store, &res) == PARTD_OK;
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

static void on_retry(uv_timer_t *t);

/* Loop thread: r's jobs after their end was written (or refused): cache
 * first, then table, so that whatever a poll sees is already durable. Jobs
 * whose final state could not be written stay in the table (answering
 * polls) while a timer retries the write; on a shared store they are let
 * go instead. */
static void end_jobs(partd_jobs *j, run *r)
{
    const struct run_end *e = &r->end;
    partd_job_status status = e->status;
    int stored = e->stored;
    if (status == PARTD_JOB_SUCCEEDED) {
        /* Cached only once stored (status stays succeeded only then): a
         * cache hit always has a stored result. */
        char *summary = strdup(r->summary);
        if (summary)
            partd_cache_put(j->svc->cache, r->cache_key, r->etag, r->forms, summary, NULL);
    }
    double secs = (double)(r->end_ns - r->start_ns) / 1e9;
    job *jb = r->jobs;
    while (jb) {
        job *next = jb->run_next;
        jb->run = NULL;
        jb->run_next = NULL;
        if (jb->lost) {
            /* The store left its row as the cancel or the new claim made it. */
            partd_jobs_table_remove(j, jb);
            partd_jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
            partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                          jb->row.id);
            partd_jobs_job_free(jb);
            jb = next;
            continue;
        }
        /* Shared: a job whose end cannot be written is let go; its lease
         * runs out and a replica runs it again (nothing is lost). */
        int keep = !stored && status != PARTD_JOB_QUEUED && !j->shared;
        if (!keep) {
            /* Polls now read the store, which has the final state. */
            partd_jobs_table_remove(j, jb);
        } else {
            /* Polls keep reading the table: complete the row first. */
            pthread_mutex_lock(&j->table_lock);
            jb->row.summary = status == PARTD_JOB_SUCCEEDED ? strdup(r->summary) : NULL;
            jb->row.error = e->error ? strdup(e->error) : NULL;
            jb->row.finished_ms = e->now;
            jb->row.error_status = e->error_status;
            pthread_mutex_unlock(&j->table_lock);
        }
        if (status != PARTD_JOB_QUEUED) {
            partd_histogram_observe(&j->svc->metrics.job_duration, secs);
            partd_jobs_set_status(j, jb, status);
            partd_jobs_log(jb, "duration_ms", secs * 1000.0);
        } else {
            partd_jobs_set_status(j, jb, PARTD_JOB_QUEUED);
            partd_jobs_log(jb, NULL, 0);
        }
        if (keep) {
            jb->unsaved_next = j->unsaved;
            j->unsaved = jb;
        } else {
            partd_jobs_job_free(jb);
        }
        jb = next;
    }
    if (j->unsaved && !uv_is_active((uv_handle_t *)&j->retry))
        uv_timer_start(&j->retry, on_retry, RETRY_MS, RETRY_MS);
    r->jobs = NULL;
    r->n_jobs = 0;
}

/* Writes the final state of jobs the store refused earlier. */
static void on_retry(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    size_t n = 0;
    for (job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        n++;
    const partd_job_row **rows = calloc(n + 1, sizeof *rows);
    if (!rows)
        return;
    n = 0;
    for (job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        rows[n++] = &jb->row;
    int rc = partd_store_finish_jobs(j->svc->store, NULL, rows, n);
    free(rows);
    if (rc != PARTD_OK)
        return;
    partd_log_msg("info", "store", "saved the final state of %zu job(s) after a store failure", n);
    while (j->unsaved) {
        job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        partd_jobs_table_remove(j, jb);
        partd_jobs_job_free(jb);
    }
    uv_timer_stop(&j->retry);
}

static void end_run(partd_jobs *j, run *r)
{
    run_free(j, r);
    /* Models and results of large graphs are big; hand the freed memory back
     * so the resident size returns to its idle level between jobs. */
    malloc_trim(0);
    partd_jobs_maybe_drained(j);
    partd_jobs_share_kick(j); /* a planner is free */
}

void partd_jobs_end_written(partd_jobs *j, run *r)
{
    struct run_end *e = &r->end;
    if (e->result_only) {
        char *summary = NULL;
        /* Cached only when stored: a cache hit always has a stored result. */
        if (e->stored && (summary = strdup(r->summary)) != NULL)
            partd_cache_put(j->svc->cache, r->cache_key, r->etag, r->forms, summary, NULL);
    } else {
        end_jobs(j, r);
    }
    end_run(j, r);
}

static void after_plan(uv_work_t *w, int status)
{
    run *r = w->data;
    partd_jobs *j = r->owner;
    /* The pool thread posted "started" before finishing; handle it first so
     * the run is not freed under a pending message. */
    partd_jobs_process_messages(j);
    if (status != UV_ECANCELED && !r->started)
        /* It ran, but its "started" message never arrived (posted after
         * the engine closed): its jobs still get their start time. */
        partd_jobs_on_started(j, r);
    if (status == UV_ECANCELED) {
        /* Cancelled before it started: by DELETE (no jobs left) or by a
         * shutdown (jobs stay queued in the store for the next start). */
        r->abandoned = 1;
        r->end_ns = r->start_ns = partd_monotonic_ns();
    }
    if (!end_decide(j, r)) {
        end_run(j, r);
        return;
    }
    /* On a shared store the database may be slow or away: the loop does
     * not wait for it (its jobs keep their leases meanwhile). */
    if (j->shared && partd_jobs_write_later(j, r))
        return;
    partd_jobs_end_store(j, r);
    partd_jobs_end_written(j, r);
}
