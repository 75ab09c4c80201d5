/*
 * jobs.c - job table, message queue and planner runs. See jobs.h.
 *
 * Threads:
 *   HTTP threads  push messages (submit, cancel) and read the table under
 *                 table_lock.
 *   loop thread   pops messages, owns runs, writes the table under
 *                 table_lock, writes the store, calls uv_queue_work/uv_cancel.
 *   pool threads  plan one run each (plan_work); they touch only their run
 *                 and post a "started" message.
 */
#define _GNU_SOURCE
#include "jobs.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cancel.h"
#include "decode.h"
#include "hash.h"
#include "log.h"
#include "partd.h"
#include "plan.h"
#include "problem.h"
#include "result.h"

typedef struct run run;

typedef struct job {
    partd_job_row row;         /* status and times: written under table_lock */
    run *run;
    struct job *run_next;
    struct job *unsaved_next;  /* finished, but the store refused the write */
} job;

#define RETRY_MS 1000

enum msg_kind { MSG_SUBMIT, MSG_CANCEL, MSG_STARTED };

typedef struct cancel_reply {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int rc;
    partd_job_row row;
} cancel_reply;

typedef struct msg {
    enum msg_kind kind;
    struct msg *next;
    job *job;                  /* SUBMIT */
    partd_request *req;        /* SUBMIT */
    char id[PARTD_ID_LEN + 1]; /* CANCEL */
    cancel_reply *reply;       /* CANCEL */
    run *run;                  /* STARTED */
} msg;

struct run {
    uv_work_t work;
    partd_jobs *owner;
    partd_request *req;
    partd_cancel cancel;
    char cache_key[72];
    job *jobs;                 /* attached jobs */
    unsigned n_jobs;
    int started;               /* loop side: the started message was handled */
    int abandoned;             /* stopped by a shutdown: leave jobs queued */
    int keyed;                 /* still in runs_by_key */
    run *prev, *next;          /* all live runs */
    msg started_msg;           /* preallocated so the pool thread never mallocs it */
    /* Written by the pool thread, read by the loop after completion. */
    int64_t start_ms, start_ns, end_ns;
    int rc;
    /* The result document and its coded forms, made on the worker thread. */
    partd_blob forms[PARTD_CODINGS];
    char etag[72];
    char *summary;
    partd_problem problem;
};

struct partd_jobs {
    partd_service *svc;
    uv_loop_t *loop;
    uv_async_t wakeup;
    uv_timer_t grace;
    uv_timer_t retry;          /* store writes that failed */
    job *unsaved;
    void (*on_drained)(void *ctx);
    void *drained_ctx;

    pthread_mutex_t queue_lock;
    msg *head, *tail;
    int closed;                /* no more messages accepted */

    pthread_mutex_t table_lock;
    partd_map table;           /* id -> job (unfinished jobs) */

    partd_map runs_by_key;     /* cache_key -> run (loop thread only) */
    run *runs;                 /* every live run (loop thread only) */
    unsigned n_runs;
    int draining;
    int drained_called;
};

/* ---- small helpers ------------------------------------------------------ */

static void log_job(const job *jb, const char *extra_key, double extra)
{
    partd_log_field f[] = {
        PARTD_LF_S("id", jb->row.id),
        PARTD_LF_S("status", partd_job_status_name(jb->row.status)),
        PARTD_LF_S("cache_key", jb->row.cache_key),
        extra_key ? PARTD_LF_N(extra_key, extra) : PARTD_LF_END,
        PARTD_LF_END};
    partd_log("info", "job", f);
}

static void set_status(partd_jobs *j, job *jb, partd_job_status status)
{
    partd_metrics *m = &j->svc->metrics;
    partd_job_status old = jb->row.status;
    if (old == PARTD_JOB_QUEUED)
        atomic_fetch_sub(&m->jobs_queued, 1);
    else if (old == PARTD_JOB_RUNNING)
        atomic_fetch_sub(&m->jobs_running, 1);
    if (status == PARTD_JOB_RUNNING)
        atomic_fetch_add(&m->jobs_running, 1);
    else if (partd_job_finished(status))
        atomic_fetch_add(&m->jobs_finished[status], 1);
    pthread_mutex_lock(&j->table_lock);
    jb->row.status = status;
    pthread_mutex_unlock(&j->table_lock);
}

static void table_remove(partd_jobs *j, job *jb)
{
    pthread_mutex_lock(&j->table_lock);
    partd_map_remove(&j->table, jb->row.id);
    pthread_mutex_unlock(&j->table_lock);
}

static void job_free(job *jb)
{
    partd_job_row_clear(&jb->row);
    free(jb);
}

static void post(partd_jobs *j, msg *m)
{
    m->next = NULL;
    if (j->tail)
        j->tail->next = m;
    else
        j->head = m;
    j->tail = m;
}

/* ---- summary ------------------------------------------------------------ */

/* Finds the value of the top-level member "summary" in the result document
 * without parsing all of it (results of 10^6-node graphs are large): a scan
 * that tracks strings and nesting depth. Returns a malloc'd copy or NULL. */
static char *extract_summary(const char *doc, size_t len)
{
    int depth = 0, in_string = 0, escaped = 0;
    size_t key_start = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = doc[i];
        if (in_string) {
            if (escaped)
                escaped = 0;
            else if (ch == '\\')
                escaped = 1;
            else if (ch == '"') {
                in_string = 0;
                size_t klen = i - key_start;
                size_t k = i + 1;
                while (k < len && (doc[k] == ' ' || doc[k] == '\n' || doc[k] == '\t' || doc[k] == '\r'))
                    k++;
                if (depth == 1 && k < len && doc[k] == ':' && klen == 7 &&
                    memcmp(doc + key_start, "summary", 7) == 0) {
                    size_t v = k + 1, e;
                    int d = 0, s = 0, esc = 0;
                    for (e = v; e < len; e++) {
                        char c = doc[e];
                        if (s) {
                            if (esc)
                                esc = 0;
                            else if (c == '\\')
                                esc = 1;
                            else if (c == '"')
                                s = 0;
                        } else if (c == '"') {
                            s = 1;
                        } else if (c == '{' || c == '[') {
                            d++;
                        } else if (c == '}' || c == ']') {
                            if (d == 0)
                                break;
                            d--;
                        } else if (c == ',' && d == 0) {
                            break;
                        }
                    }
                    return strndup(doc + v, e - v);
                }
            }
        } else if (ch == '"') {
            in_string = 1;
            key_start = i + 1;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        }
    }
    return NULL;
}

/* ---- pool thread -------------------------------------------------------- */

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
    if (!j->closed) {
        post(j, &r->started_msg);
        uv_async_send(&j->wakeup);
    }
    pthread_mutex_unlock(&j->queue_lock);

    partd_plan *plan = NULL;
    r->rc = partd_plan_run(r->req, &r->cancel, &plan, &r->problem);
    if (r->rc == PARTD_OK) {
        partd_blob *doc = &r->forms[PARTD_CODING_IDENTITY];
        doc->data = partd_result_to_json(r->req, plan, &doc->len);
        if (!doc->data)
            r->rc = PARTD_ENOMEM;
        else if (partd_sha256_hex(doc->data, doc->len, r->etag) != PARTD_OK)
            r->rc = PARTD_EINTERNAL;
        else if (!(r->summary = extract_summary(doc->data, doc->len)))
            r->rc = PARTD_EINTERNAL;
    }
    if (r->rc == PARTD_OK && partd_encode_all(r->forms) != PARTD_OK)
        /* The document itself is fine; it is only served uncompressed. */
        partd_log_msg("warn", "job", "compressing the result of %s failed; serving it "
                      "uncompressed only", r->cache_key);
    partd_plan_free(plan);
    /* The model can be large; it is not needed after planning. */
    partd_request_free(r->req);
    r->req = NULL;
    r->end_ns = partd_monotonic_ns();
}

/* ---- runs (loop thread) ------------------------------------------------- */

static void unkey(partd_jobs *j, run *r)
{
    if (r->keyed) {
        partd_map_remove(&j->runs_by_key, r->cache_key);
        r->keyed = 0;
    }
}

static void run_free(partd_jobs *j, run *r)
{
    unkey(j, r);
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
    partd_problem_free(&r->problem);
    free(r);
}

static void after_plan(uv_work_t *w, int status);
static void process_messages(partd_jobs *j);
static void maybe_drained(partd_jobs *j);

static run *run_new(partd_jobs *j, partd_request *req)
{
    run *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->owner = j;
    r->req = req;
    partd_cancel_init(&r->cancel, 0);
    partd_problem_init(&r->problem);
    snprintf(r->cache_key, sizeof r->cache_key, "%s", req->cache_key);
    r->work.data = r;
    r->started_msg.kind = MSG_STARTED;
    r->started_msg.run = r;
    if (partd_map_put(&j->runs_by_key, r->cache_key, r) != PARTD_OK) {
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

static void attach(run *r, job *jb)
{
    jb->run = r;
    jb->run_next = r->jobs;
    r->jobs = jb;
    r->n_jobs++;
}

static void detach(run *r, job *jb)
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
static void stop_run(partd_jobs *j, run *r)
{
    unkey(j, r); /* later identical jobs must not join a cancelled run */
    if (uv_cancel((uv_req_t *)&r->work) != 0)
        atomic_store(&r->cancel.cancelled, 1);
}

static void mark_running(partd_jobs *j, job *jb, run *r)
{
    pthread_mutex_lock(&j->table_lock);
    jb->row.started_ms = r->start_ms;
    pthread_mutex_unlock(&j->table_lock);
    partd_store_mark_running(j->svc->store, jb->row.id, r->start_ms);
    double waited = (double)(r->start_ms - jb->row.created_ms) / 1000.0;
    partd_histogram_observe(&j->svc->metrics.queue_wait, waited > 0 ? waited : 0);
    set_status(j, jb, PARTD_JOB_RUNNING);
    log_job(jb, "queue_wait_ms", (double)(r->start_ms - jb->row.created_ms));
}

static void on_started(partd_jobs *j, run *r)
{
    r->started = 1;
    for (job *jb = r->jobs; jb; jb = jb->run_next)
        mark_running(j, jb, r);
}

static void problem_for(run *r, partd_problem *p, uint64_t timeout_ms)
{
    if (r->rc == PARTD_ETIMEOUT) {
        partd_problem_set(p, 503, "job-timeout", "Planning timed out",
                          "planning took longer than the job time limit (--job-timeout-ms = %llu ms)",
                          (unsigned long long)timeout_ms);
    } else if (p->status == 0) {
        int status = r->rc == PARTD_EINFEASIBLE || r->rc == PARTD_EINVALID ? 422 : 500;
        partd_problem_set(p, status, status == 422 ? "planning-failed" : "internal-error",
                          status == 422 ? "No plan" : "Planning failed", "%s",
                          partd_strerror(r->rc));
    }
}

static size_t fill_rows(const run *r, partd_job_row *copies, const partd_job_row **rows,
                        partd_job_status status, int64_t now, const char *error,
                        int error_status)
{
    size_t n = 0;
    for (const job *jb = r->jobs; jb; jb = jb->run_next) {
        partd_job_row *c = &copies[n];
        *c = jb->row; /* shallow: the store only reads it */
        c->status = status;
        c->finished_ms = status == PARTD_JOB_QUEUED ? 0 : now;
        c->summary = status == PARTD_JOB_SUCCEEDED ? r->summary : NULL;
        c->error = (char *)error;
        c->error_status = error_status;
        rows[n++] = c;
    }
    return n;
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

static void on_retry(uv_timer_t *t);

/* Finishes every job of a completed run: store first, then cache and
 * table, so that whatever a poll sees is already durable. When the store
 * refuses (disk full, read-only), a computed plan fails with a problem that
 * says so, and jobs whose final state cannot be written stay in the table
 * (answering polls) while a timer retries the write. */
static void finish_run_jobs(partd_jobs *j, run *r)
{
    partd_job_status status;
    char *error = NULL;
    int error_status = 0;
    int64_t now = partd_now_ms();
    if (r->abandoned) {
        status = PARTD_JOB_QUEUED; /* left for the next start */
    } else if (r->rc == PARTD_OK) {
        status = PARTD_JOB_SUCCEEDED;
    } else {
        status = PARTD_JOB_FAILED;
        problem_for(r, &r->problem, j->svc->cfg->job_timeout_ms);
        error = partd_problem_to_json(&r->problem, NULL);
        error_status = r->problem.status;
    }
    partd_job_row *copies = calloc(r->n_jobs + 1, sizeof *copies);
    const partd_job_row **rows = calloc(r->n_jobs + 1, sizeof *rows);
    int stored = 0;
    size_t n = 0;
    if (copies && rows) {
        n = fill_rows(r, copies, rows, status, now, error, error_status);
        if (status == PARTD_JOB_SUCCEEDED) {
            partd_store_result res = {r->cache_key, r->etag, r->summary, r->forms};
            stored = partd_store_finish_jobs(j->svc->store, &res, rows, n) == PARTD_OK;
            if (!stored) {
                status = PARTD_JOB_FAILED;
                error = store_failure_problem(&error_status);
                n = fill_rows(r, copies, rows, status, now, error, error_status);
            }
        }
        if (!stored)
            stored = partd_store_finish_jobs(j->svc->store, NULL, rows, n) == PARTD_OK;
    }
    free(copies);
    free(rows);
    if (status == PARTD_JOB_SUCCEEDED) {
        /* Cached only once stored: a cache hit always has a stored result. */
        char *summary = strdup(r->summary);
        if (summary) {
            partd_cache_put(j->svc->cache, r->cache_key, r->etag, r->forms, summary, NULL);
        }
    }

    double secs = (double)(r->end_ns - r->start_ns) / 1e9;
    job *jb = r->jobs;
    while (jb) {
        job *next = jb->run_next;
        jb->run = NULL;
        jb->run_next = NULL;
        int keep = !stored && status != PARTD_JOB_QUEUED;
        if (!keep) {
            /* Polls now read the store, which has the final state. */
            table_remove(j, jb);
        } else {
            /* Polls keep reading the table: complete the row first. */
            pthread_mutex_lock(&j->table_lock);
            jb->row.summary = status == PARTD_JOB_SUCCEEDED ? strdup(r->summary) : NULL;
            jb->row.error = error ? strdup(error) : NULL;
            jb->row.finished_ms = now;
            jb->row.error_status = error_status;
            pthread_mutex_unlock(&j->table_lock);
        }
        if (status != PARTD_JOB_QUEUED) {
            partd_histogram_observe(&j->svc->metrics.job_duration, secs);
            set_status(j, jb, status);
            log_job(jb, "duration_ms", secs * 1000.0);
        } else {
            set_status(j, jb, PARTD_JOB_QUEUED);
            log_job(jb, NULL, 0);
        }
        if (keep) {
            jb->unsaved_next = j->unsaved;
            j->unsaved = jb;
        } else {
            job_free(jb);
        }
        jb = next;
    }
    if (j->unsaved && !uv_is_active((uv_handle_t *)&j->retry))
        uv_timer_start(&j->retry, on_retry, RETRY_MS, RETRY_MS);
    r->jobs = NULL;
    r->n_jobs = 0;
    free(error);
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
        table_remove(j, jb);
        job_free(jb);
    }
    uv_timer_stop(&j->retry);
}

static void after_plan(uv_work_t *w, int status)
{
    run *r = w->data;
    partd_jobs *j = r->owner;
    /* The pool thread posted "started" before finishing; handle it first so
     * the run is not freed under a pending message. */
    process_messages(j);
    if (status == UV_ECANCELED) {
        /* Cancelled before it started: by DELETE (no jobs left) or by a
         * shutdown (jobs stay queued in the store for the next start). */
        r->abandoned = 1;
        r->end_ns = r->start_ns = partd_monotonic_ns();
        if (r->n_jobs)
            finish_run_jobs(j, r);
    } else if (r->n_jobs) {
        finish_run_jobs(j, r);
    } else if (r->rc == PARTD_OK && r->forms[PARTD_CODING_IDENTITY].data) {
        /* Every job was cancelled but planning finished anyway: keep it. */
        char *summary = strdup(r->summary);
        if (summary) {
            partd_store_result res = {r->cache_key, r->etag, r->summary, r->forms};
            partd_store_finish_jobs(j->svc->store, &res, NULL, 0);
            partd_cache_put(j->svc->cache, r->cache_key, r->etag, r->forms, summary, NULL);
        }
    }
    run_free(j, r);
    /* Models and results of large graphs are big; hand the freed memory back
     * so the resident size returns to its idle level between jobs. */
    malloc_trim(0);
    maybe_drained(j);
}

/* ---- messages (loop thread) --------------------------------------------- */

/* Finishes a job at once from a cached result (a run for the same key ended
 * after the HTTP thread looked). */
static int finish_from_cache(partd_jobs *j, job *jb)
{
    partd_cache_entry *e = partd_cache_get(j->svc->cache, jb->row.cache_key);
    if (!e)
        return 0;
    partd_job_row row = jb->row;
    row.status = PARTD_JOB_SUCCEEDED;
    row.finished_ms = row.started_ms = partd_now_ms();
    row.summary = e->summary;
    row.cached = 1;
    const partd_job_row *rows[1] = {&row};
    partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    partd_cache_entry_release(e);
    atomic_fetch_add(&j->svc->metrics.cache_hits, 1);
    table_remove(j, jb);
    set_status(j, jb, PARTD_JOB_SUCCEEDED);
    log_job(jb, "cached", 1);
    job_free(jb);
    return 1;
}

static void on_submit(partd_jobs *j, job *jb, partd_request *req)
{
    if (j->draining) {
        /* Accepted just before the drain began: it is committed as queued
         * and will run after the next start. */
        atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
        partd_request_free(req);
        job_free(jb);
        return;
    }
    pthread_mutex_lock(&j->table_lock);
    int rc = partd_map_put(&j->table, jb->row.id, jb);
    pthread_mutex_unlock(&j->table_lock);
    if (rc != PARTD_OK) {
        partd_log_msg("error", "job", "out of memory queueing job %s; it stays queued in the "
                      "store for the next start", jb->row.id);
        atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
        partd_request_free(req);
        job_free(jb);
        return;
    }
    if (finish_from_cache(j, jb)) {
        partd_request_free(req);
        return;
    }
    run *r = partd_map_get(&j->runs_by_key, jb->row.cache_key);
    if (r) {
        partd_request_free(req); /* the run has its own copy of the same model */
        attach(r, jb);
        log_job(jb, "shared_run", 1);
        if (r->started)
            mark_running(j, jb, r);
        return;
    }
    r = run_new(j, req);
    if (!r) {
        partd_log_msg("error", "job", "cannot start a run for job %s; it stays queued in the "
                      "store for the next start", jb->row.id);
        table_remove(j, jb);
        atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
        partd_request_free(req);
        job_free(jb);
        return;
    }
    attach(r, jb);
    log_job(jb, NULL, 0);
}

static void reply_cancel(cancel_reply *reply, int rc, const partd_job_row *row)
{
    pthread_mutex_lock(&reply->lock);
    reply->rc = rc;
    if (row) {
        reply->row = *row;
        reply->row.summary = reply->row.error = NULL;
    }
    reply->done = 1;
    pthread_cond_signal(&reply->cond);
    pthread_mutex_unlock(&reply->lock);
}

static void on_cancel(partd_jobs *j, const char *id, cancel_reply *reply)
{
    pthread_mutex_lock(&j->table_lock);
    job *jb = partd_map_get(&j->table, id);
    pthread_mutex_unlock(&j->table_lock);
    if (!jb) {
        reply_cancel(reply, PARTD_STORE_MISSING, NULL);
        return;
    }
    if (partd_job_finished(jb->row.status)) {
        reply_cancel(reply, PARTD_STORE_CONFLICT, NULL);
        return;
    }
    run *r = jb->run;
    detach(r, jb);
    if (r->n_jobs == 0)
        stop_run(j, r);
    partd_job_row row = jb->row;
    row.status = PARTD_JOB_CANCELLED;
    row.finished_ms = partd_now_ms();
    const partd_job_row *rows[1] = {&row};
    int rc = partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    table_remove(j, jb);
    jb->row.finished_ms = row.finished_ms;
    set_status(j, jb, PARTD_JOB_CANCELLED);
    log_job(jb, NULL, 0);
    reply_cancel(reply, rc == PARTD_OK ? PARTD_OK : PARTD_EIO, &jb->row);
    job_free(jb);
}

static void process_messages(partd_jobs *j)
{
    pthread_mutex_lock(&j->queue_lock);
    msg *m = j->head;
    j->head = j->tail = NULL;
    pthread_mutex_unlock(&j->queue_lock);
    while (m) {
        msg *next = m->next;
        switch (m->kind) {
        case MSG_SUBMIT:
            on_submit(j, m->job, m->req);
            free(m);
            break;
        case MSG_CANCEL:
            on_cancel(j, m->id, m->reply);
            free(m);
            break;
        case MSG_STARTED:
            on_started(j, m->run); /* embedded in the run: not freed */
            break;
        }
        m = next;
    }
}

static void on_wakeup(uv_async_t *a)
{
    process_messages(a->data);
}

/* ---- public ------------------------------------------------------------- */

partd_jobs *partd_jobs_new(partd_service *svc, uv_loop_t *loop, void (*on_drained)(void *ctx),
                           void *ctx)
{
    partd_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->svc = svc;
    j->loop = loop;
    j->on_drained = on_drained;
    j->drained_ctx = ctx;
    pthread_mutex_init(&j->queue_lock, NULL);
    pthread_mutex_init(&j->table_lock, NULL);
    partd_map_init(&j->table);
    partd_map_init(&j->runs_by_key);
    uv_async_init(loop, &j->wakeup, on_wakeup);
    j->wakeup.data = j;
    uv_timer_init(loop, &j->grace);
    j->grace.data = j;
    uv_timer_init(loop, &j->retry);
    j->retry.data = j;
    return j;
}

void partd_jobs_free(partd_jobs *j)
{
    if (!j)
        return;
    /* Never written: the store still has them unfinished, so the next start
     * plans them again. */
    while (j->unsaved) {
        job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        job_free(jb);
    }
    partd_map_free(&j->table);
    partd_map_free(&j->runs_by_key);
    pthread_mutex_destroy(&j->queue_lock);
    pthread_mutex_destroy(&j->table_lock);
    free(j);
}

int partd_jobs_reserve(partd_jobs *j)
{
    atomic_int_fast64_t *q = &j->svc->metrics.jobs_queued;
    int64_t max = (int64_t)j->svc->cfg->queue_max;
    int_fast64_t cur = atomic_load(q);
    do {
        if (cur >= max)
            return 0;
    } while (!atomic_compare_exchange_weak(q, &cur, cur + 1));
    return 1;
}

void partd_jobs_unreserve(partd_jobs *j)
{
    atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
}

int64_t partd_jobs_queued(partd_jobs *j)
{
    return atomic_load(&j->svc->metrics.jobs_queued);
}

static int send_msg(partd_jobs *j, msg *m)
{
    /* Sent under the lock: partd_jobs_close() cannot close the handle
     * between the check and the send. */
    pthread_mutex_lock(&j->queue_lock);
    int closed = j->closed;
    if (!closed) {
        post(j, m);
        uv_async_send(&j->wakeup);
    }
    pthread_mutex_unlock(&j->queue_lock);
    return closed ? PARTD_EIO : PARTD_OK;
}

static job *job_new(const partd_job_row *row)
{
    job *jb = calloc(1, sizeof *jb);
    if (!jb)
        return NULL;
    jb->row = *row;
    jb->row.summary = jb->row.error = NULL;
    jb->row.status = PARTD_JOB_QUEUED;
    return jb;
}

int partd_jobs_submit(partd_jobs *j, const partd_job_row *row, partd_request *req)
{
    msg *m = calloc(1, sizeof *m);
    job *jb = job_new(row);
    if (!m || !jb) {
        free(m);
        free(jb);
        partd_request_free(req);
        return PARTD_ENOMEM;
    }
    m->kind = MSG_SUBMIT;
    m->job = jb;
    m->req = req;
    if (send_msg(j, m) != PARTD_OK) {
        free(m);
        free(jb);
        partd_request_free(req);
        partd_jobs_unreserve(j);
        return PARTD_EIO;
    }
    return PARTD_OK;
}

int partd_jobs_lookup(partd_jobs *j, const char *id, partd_job_row *out)
{
    pthread_mutex_lock(&j->table_lock);
    job *jb = partd_map_get(&j->table, id);
    int rc = jb ? PARTD_OK : PARTD_STORE_MISSING;
    if (jb) {
        *out = jb->row;
        out->summary = jb->row.summary ? strdup(jb->row.summary) : NULL;
        out->error = jb->row.error ? strdup(jb->row.error) : NULL;
        if ((jb->row.summary && !out->summary) || (jb->row.error && !out->error)) {
            partd_job_row_clear(out);
            rc = PARTD_ENOMEM;
        }
    }
    pthread_mutex_unlock(&j->table_lock);
    return rc;
}

int partd_jobs_cancel(partd_jobs *j, const char *id, partd_job_row *out)
{
    cancel_reply reply;
    memset(&reply, 0, sizeof reply);
    pthread_mutex_init(&reply.lock, NULL);
    pthread_cond_init(&reply.cond, NULL);
    msg *m = calloc(1, sizeof *m);
    if (!m)
        return PARTD_ENOMEM;
    m->kind = MSG_CANCEL;
    snprintf(m->id, sizeof m->id, "%s", id);
    m->reply = &reply;
    int rc = send_msg(j, m);
    if (rc != PARTD_OK) {
        free(m);
    } else {
        pthread_mutex_lock(&reply.lock);
        while (!reply.done)
            pthread_cond_wait(&reply.cond, &reply.lock);
        pthread_mutex_unlock(&reply.lock);
        rc = reply.rc;
        if (rc == PARTD_OK)
            *out = reply.row;
    }
    pthread_cond_destroy(&reply.cond);
    pthread_mutex_destroy(&reply.lock);
    return rc;
}

/* ---- drain and close ---------------------------------------------------- */

static void maybe_drained(partd_jobs *j)
{
    if (j->draining && j->n_runs == 0 && !j->drained_called) {
        j->drained_called = 1;
        uv_timer_stop(&j->grace);
        j->on_drained(j->drained_ctx);
    }
}

static void on_grace_over(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    for (run *r = j->runs; r; r = r->next) {
        r->abandoned = 1;
        atomic_store(&r->cancel.cancelled, 1);
    }
    if (j->n_runs)
        partd_log_msg("warn", "shutdown", "grace period over: stopping %u running plan(s); "
                      "their jobs stay queued for the next start", j->n_runs);
}

void partd_jobs_drain(partd_jobs *j, uint64_t grace_ms)
{
    if (j->draining)
        return;
    process_messages(j);
    j->draining = 1;
    for (run *r = j->runs; r; r = r->next) {
        unkey(j, r);
        if (!r->started && uv_cancel((uv_req_t *)&r->work) == 0)
            r->abandoned = 1;
    }
    if (j->n_runs)
        uv_timer_start(&j->grace, on_grace_over, grace_ms, 0);
    maybe_drained(j);
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

void partd_jobs_close(partd_jobs *j)
{
    pthread_mutex_lock(&j->queue_lock);
    j->closed = 1;
    pthread_mutex_unlock(&j->queue_lock);
    /* Nothing can be added now; answer what is left. */
    process_messages(j);
    uv_close((uv_handle_t *)&j->wakeup, on_closed);
    uv_close((uv_handle_t *)&j->grace, on_closed);
    uv_close((uv_handle_t *)&j->retry, on_closed);
}

/* ---- recovery ------------------------------------------------------------ */

typedef struct recover_ctx {
    partd_jobs *j;
    int count;
    int rc;
} recover_ctx;

static void fail_recovered(partd_jobs *j, const partd_job_row *row, partd_problem *p)
{
    partd_job_row failed = *row;
    failed.status = PARTD_JOB_FAILED;
    failed.finished_ms = partd_now_ms();
    failed.summary = NULL;
    failed.error = partd_problem_to_json(p, NULL);
    failed.error_status = p->status;
    const partd_job_row *rows[1] = {&failed};
    partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    free(failed.error);
    atomic_fetch_add(&j->svc->metrics.jobs_finished[PARTD_JOB_FAILED], 1);
    partd_log_msg("warn", "recover", "job %s no longer decodes and failed: %s", row->id,
                  p->detail ? p->detail : "");
}

static void recover_one(const partd_job_row *row, const char *body, size_t len, void *ctx)
{
    recover_ctx *rc = ctx;
    partd_jobs *j = rc->j;
    partd_request *req = NULL;
    partd_problem problem;
    partd_problem_init(&problem);
    int status = partd_request_decode(body, len, &j->svc->limits, &req, &problem);
    if (status != PARTD_OK) {
        if (problem.status == 0)
            partd_problem_set(&problem, 422, "invalid-request", "Invalid request", "%s",
                              partd_strerror(status));
        fail_recovered(j, row, &problem);
        partd_problem_free(&problem);
        return;
    }
    partd_problem_free(&problem);
    if (row->status == PARTD_JOB_RUNNING) {
        partd_job_row queued = *row;
        queued.status = PARTD_JOB_QUEUED;
        const partd_job_row *rows[1] = {&queued};
        partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    }
    job *jb = job_new(row);
    if (!jb) {
        partd_request_free(req);
        rc->rc = PARTD_ENOMEM;
        return;
    }
    /* Recovered jobs were accepted earlier: they may exceed --queue-max. */
    atomic_fetch_add(&j->svc->metrics.jobs_queued, 1);
    on_submit(j, jb, req);
    rc->count++;
}

int partd_jobs_recover(partd_jobs *j)
{
    recover_ctx ctx = {j, 0, PARTD_OK};
    int rc = partd_store_pending(j->svc->store, recover_one, &ctx);
    if (rc != PARTD_OK)
        return rc;
    return ctx.rc != PARTD_OK ? ctx.rc : ctx.count;
}
