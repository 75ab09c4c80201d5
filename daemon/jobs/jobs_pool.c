/*
 * jobs_pool.c - runs of the job engine on libuv's thread pool: a job
 * joining a run (a new one, or one planning the same cache_key, or the
 * cache at once), planning on a pool thread (plan_work), completion on the
 * loop thread (after_plan), finishing the run's jobs into the store and the
 * cache, and retrying store writes that failed. It tells jobs.c when a
 * planner is free and hands a decided end to the end-writer through the
 * engine's callbacks (partd__jobs_hooks). See jobs_internal.h for the
 * threads and ownership.
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

#include "core/log.h"
#include "core/map.h"
#include "core/time.h"
#include "partd/clock.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"

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

static void wait_started_ack(partd__jobs_run *r)
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
    partd__jobs_run *r = w->data;
    partd_jobs *j = r->owner;
    lower_thread_priority();
    r->start_ms = partd_time_now_ms();
    r->start_ns = partd_clock_ns();
    uint64_t timeout = j->opt.job_timeout_ms;
    if (timeout)
        r->cancel.deadline_ns = r->start_ns + (int64_t)timeout * 1000000;

    /* Not posted once the engine is closed: after_plan marks the jobs. */
    if (partd__jobs_send(j, &r->started_msg) == PARTD_OK)
        wait_started_ack(r);

    partd_plan *plan = NULL;
    r->rc = partd_plan_run(r->req, &r->cancel, &plan, &r->problem);
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag, and the size limit. */
        partd_blob *doc = &r->forms[PARTD_CODING_IDENTITY];
        uint64_t max = j->opt.max_result_bytes;
        /* Rendered once; the summary is copied as it is written. */
        doc->data = partd_result_render(r->req, plan, &r->cancel,
                                        max > SIZE_MAX ? SIZE_MAX : (size_t)max, &doc->len,
                                        &r->summary, &r->rc);
        if (r->rc == PARTD_ETOOBIG)
            result_too_large(&r->problem, max);
        if (r->rc == PARTD_OK && partd_hash_bytes(doc->data, doc->len, r->etag) != PARTD_OK)
            r->rc = PARTD_EINTERNAL;
    }
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag too. */
        int rc = partd_encoding_encode_all_within(r->forms, &r->cancel);
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
    r->end_ns = partd_clock_ns();
}

/* ---- runs (loop thread) ------------------------------------------------- */

void partd__jobs_unkey(partd_jobs *j, partd__jobs_run *r)
{
    if (r->keyed) {
        partd_map_remove(&j->runs_by_key, r->cache_key);
        r->keyed = 0;
    }
}

static void run_free(partd_jobs *j, partd__jobs_run *r)
{
    partd__jobs_unkey(j, r);
    if (r->prev)
        r->prev->next = r->next;
    else
        j->runs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    j->n_runs--;
    partd_request_free(r->req);
    partd_encoding_forms_free(r->forms);
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

static void on_started(partd_jobs *j, partd__jobs_run *r);

/* The message a pool thread sends as its run starts planning. */
static void on_started_msg(partd_jobs *j, partd__jobs_msg *m)
{
    on_started(j, m->run); /* embedded in the run: not freed */
}

/* Loop thread: a run planning req on the pool, registered under its
 * cache_key; NULL (req still the caller's) when it cannot be queued. */
static partd__jobs_run *run_new(partd_jobs *j, partd_request *req)
{
    partd__jobs_run *r = calloc(1, sizeof *r);
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
    r->started_msg.handle = on_started_msg;
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

static void attach(partd__jobs_run *r, partd__jobs_job *jb)
{
    jb->run = r;
    jb->run_next = r->jobs;
    r->jobs = jb;
    r->n_jobs++;
}

static void detach(partd__jobs_run *r, partd__jobs_job *jb)
{
    for (partd__jobs_job **p = &r->jobs; *p; p = &(*p)->run_next)
        if (*p == jb) {
            *p = jb->run_next;
            r->n_jobs--;
            break;
        }
    jb->run = NULL;
    jb->run_next = NULL;
}

static void forget_unsaved(partd_jobs *j, partd__jobs_job *jb);

void partd__jobs_leave_run(partd_jobs *j, partd__jobs_job *jb)
{
    partd__jobs_run *r = jb->run;
    if (!r) {
        forget_unsaved(j, jb);
        return;
    }
    detach(r, jb);
    if (r->n_jobs > 0)
        return;
    /* Nobody waits for it any more; later identical jobs must not join a
     * cancelled run. */
    partd__jobs_unkey(j, r);
    if (uv_cancel((uv_req_t *)&r->work) != 0)
        atomic_store(&r->cancel.cancelled, 1);
}

static void mark_running(partd_jobs *j, partd__jobs_job *jb, partd__jobs_run *r)
{
    /* On a shared store the claim already counted the attempt durably.
     * Here the start is written first: a job whose start the store refused
     * (disk full) plans all the same, but shows as the store has it,
     * queued, as it is after a restart. */
    if (!j->shared &&
        partd_store_mark_running(j->opt.store, jb->row.id, r->start_ms, j->runner) != PARTD_OK) {
        partd_log_msg("warn", "job", "the store did not record the start of job %s; it is "
                      "planned and shows as queued until its end is written", jb->row.id);
        return;
    }
    pthread_mutex_lock(&j->table_lock);
    jb->row.started_ms = r->start_ms;
    if (!j->shared) {
        jb->row.attempts++;
        snprintf(jb->row.runner, sizeof jb->row.runner, "%s", j->runner);
    }
    pthread_mutex_unlock(&j->table_lock);
    double waited = (double)(r->start_ms - jb->row.created_ms) / 1000.0;
    partd_metrics_histogram_observe(&j->opt.metrics->queue_wait, waited > 0 ? waited : 0);
    partd__jobs_set_status(j, jb, PARTD_JOB_RUNNING);
    partd__jobs_log(jb, "queue_wait_ms", (double)(r->start_ms - jb->row.created_ms));
}

/* Loop thread: the run started planning: its jobs turn running, and the
 * pool thread, which waits for that, may plan. */
static void on_started(partd_jobs *j, partd__jobs_run *r)
{
    r->started = 1;
    for (partd__jobs_job *jb = r->jobs; jb; jb = jb->run_next)
        mark_running(j, jb, r);
    pthread_mutex_lock(&r->ack_lock);
    r->acked = 1;
    pthread_cond_signal(&r->ack_cond);
    pthread_mutex_unlock(&r->ack_lock);
}

/* ---- jobs joining runs (loop thread) ------------------------------------ */

/* Finishes a job at once from a cached result (a run for the same key ended
 * after the HTTP thread looked). */
static int finish_from_cache(partd_jobs *j, partd__jobs_job *jb)
{
    partd_cache_entry *e = partd_cache_get(j->opt.cache, jb->row.cache_key);
    if (!e)
        return 0;
    partd_job_row row = jb->row;
    row.status = PARTD_JOB_SUCCEEDED;
    row.finished_ms = row.started_ms = partd_time_now_ms();
    row.summary = e->summary;
    row.cached = 1;
    const partd_job_row *rows[1] = {&row};
    int rc = partd_store_finish_jobs(j->opt.store, NULL, rows, 1);
    partd_cache_entry_release(e);
    if (rc != PARTD_OK)
        return 0; /* not recorded: plan it as any other job */
    jb->row.started_ms = row.started_ms;
    jb->row.finished_ms = row.finished_ms;
    jb->row.cached = 1;
    atomic_fetch_add(&j->opt.metrics->cache_hits, 1);
    partd__jobs_table_remove(j, jb);
    partd__jobs_set_status(j, jb, PARTD_JOB_SUCCEEDED);
    partd__jobs_log(jb, "cached", 1);
    partd__jobs_job_free(jb);
    return 1;
}

void partd__jobs_enqueue(partd_jobs *j, partd__jobs_job *jb, partd_request *req)
{
    if (j->draining && !j->shared) {
        /* Accepted just before the drain began: it is committed as queued
         * and will run after the next start. (A shared store's jobs come
         * here claimed: they run within the grace period.) */
        atomic_fetch_sub(&j->opt.metrics->jobs_queued, 1);
        partd_request_free(req);
        partd__jobs_job_free(jb);
        return;
    }
    if (partd__jobs_table_put(j, jb) != PARTD_OK) {
        partd_log_msg("error", "job", "out of memory queueing job %s; it stays queued in the "
                      "store for the next start", jb->row.id);
        atomic_fetch_sub(&j->opt.metrics->jobs_queued, 1);
        partd_request_free(req);
        partd__jobs_job_free(jb);
        return;
    }
    if (finish_from_cache(j, jb)) {
        partd_request_free(req);
        return;
    }
    partd__jobs_run *r = partd_map_get(&j->runs_by_key, jb->row.cache_key);
    if (r) {
        partd_request_free(req); /* the run has its own copy of the same model */
        attach(r, jb);
        partd__jobs_log(jb, "shared_run", 1);
        if (r->started)
            mark_running(j, jb, r);
        return;
    }
    r = run_new(j, req);
    if (!r) {
        partd_log_msg("error", "job", "cannot start a run for job %s; it stays queued in the "
                      "store for the next start", jb->row.id);
        partd__jobs_table_remove(j, jb);
        atomic_fetch_sub(&j->opt.metrics->jobs_queued, 1);
        partd_request_free(req);
        partd__jobs_job_free(jb);
        return;
    }
    attach(r, jb);
    partd__jobs_log(jb, NULL, 0);
}

/* ---- ends (loop thread, the write on any) ------------------------------- */

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
static int end_decide(partd_jobs *j, partd__jobs_run *r)
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
    /* Later identical jobs start a run of their own (or find the cache):
     * the rows to write are fixed now. */
    partd__jobs_unkey(j, r);
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

static void on_retry(uv_timer_t *t);

/* Loop thread: r's jobs after their end was written (or refused): cache
 * first, then table, so that whatever a poll sees is already durable. Jobs
 * whose final state could not be written stay in the table as the store
 * holds them (queued or running: a state is never shown final before it
 * is stored, so one shown final stays so across a restart) while a timer
 * retries the write; on a shared store they are let go instead. */
static void end_jobs(partd_jobs *j, partd__jobs_run *r)
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
        if (keep) {
            jb->unsaved_next = j->unsaved;
            j->unsaved = jb;
        } else {
            partd__jobs_job_free(jb);
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
    for (partd__jobs_job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        n++;
    const partd_job_row **rows = calloc(n + 1, sizeof *rows);
    if (!rows)
        return;
    n = 0;
    for (partd__jobs_job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        rows[n++] = &jb->end;
    int rc = partd_store_finish_jobs(j->opt.store, NULL, rows, n);
    free(rows);
    if (rc != PARTD_OK)
        return;
    partd_log_msg("info", "store", "saved the final state of %zu job(s) after a store failure", n);
    while (j->unsaved) {
        partd__jobs_job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        /* Stored: polls read the store from now on. */
        partd__jobs_table_remove(j, jb);
        jb->row.finished_ms = jb->end.finished_ms;
        partd__jobs_set_status(j, jb, jb->end.status);
        partd__jobs_log(jb, NULL, 0);
        partd__jobs_job_free(jb);
    }
    uv_timer_stop(&j->retry);
}

/* A job whose final row waits for a retry is cancelled instead. */
static void forget_unsaved(partd_jobs *j, partd__jobs_job *jb)
{
    for (partd__jobs_job **p = &j->unsaved; *p; p = &(*p)->unsaved_next)
        if (*p == jb) {
            *p = jb->unsaved_next;
            break;
        }
    jb->unsaved_next = NULL;
    if (!j->unsaved)
        uv_timer_stop(&j->retry);
}

static void end_run(partd_jobs *j, partd__jobs_run *r)
{
    run_free(j, r);
    /* Models and results of large graphs are big; hand the freed memory back
     * so the resident size returns to its idle level between jobs. */
    malloc_trim(0);
    j->on.planner_free(j);
}

void partd__jobs_end_written(partd_jobs *j, partd__jobs_run *r)
{
    struct partd__jobs_run_end *e = &r->end;
    if (e->result_only) {
        char *summary = NULL;
        /* Cached only when stored: a cache hit always has a stored result. */
        if (e->stored && (summary = strdup(r->summary)) != NULL)
            partd_cache_put(j->opt.cache, r->cache_key, r->etag, r->forms, summary, NULL);
    } else {
        end_jobs(j, r);
    }
    end_run(j, r);
}

static void after_plan(uv_work_t *w, int status)
{
    partd__jobs_run *r = w->data;
    partd_jobs *j = r->owner;
    /* The pool thread posted "started" before finishing; handle it first so
     * the run is not freed under a pending message. */
    partd__jobs_process_messages(j);
    if (status != UV_ECANCELED && !r->started)
        /* It ran, but its "started" message never arrived (posted after
         * the engine closed): its jobs still get their start time. */
        on_started(j, r);
    if (status == UV_ECANCELED) {
        /* Cancelled before it started: by DELETE (no jobs left) or by a
         * shutdown (jobs stay queued in the store for the next start). */
        r->abandoned = 1;
        r->end_ns = r->start_ns = partd_clock_ns();
    }
    if (!end_decide(j, r)) {
        end_run(j, r);
        return;
    }
    /* On a shared store the database may be slow or away: the loop does
     * not wait for it (its jobs keep their leases meanwhile), the
     * end-writer writes it. */
    if (j->on.end_decided(j, r))
        return;
    partd__jobs_end_store(j, r);
    partd__jobs_end_written(j, r);
}

/* ---- life cycle (loop thread) ------------------------------------------- */

void partd__jobs_pool_init(partd_jobs *j)
{
    partd_map_init(&j->runs_by_key);
    uv_timer_init(j->loop, &j->retry);
    j->retry.data = j;
}

static void on_retry_closed(uv_handle_t *h)
{
    (void)h;
}

void partd__jobs_pool_close(partd_jobs *j)
{
    uv_close((uv_handle_t *)&j->retry, on_retry_closed);
}

void partd__jobs_pool_free(partd_jobs *j)
{
    /* Never written: the store still has them unfinished, so the next start
     * plans them again. */
    while (j->unsaved) {
        partd__jobs_job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        partd__jobs_job_free(jb);
    }
    partd_map_free(&j->runs_by_key);
}
