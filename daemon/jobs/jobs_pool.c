/*
 * jobs_pool.c - runs of the job engine on libuv's thread pool, on the loop
 * thread: a job joining a run (a new one, or one planning the same
 * cache_key, or the cache at once), a job leaving one, a run's jobs marked
 * running as it starts, and its completion (after_plan): its end decided
 * and written (jobs_end.c), or handed to the end-writer, then applied and
 * the run freed. The work on the pool thread is jobs_plan.c's; final rows
 * the store refused are jobs_unsaved.c's. It tells jobs.c when a planner
 * is free and hands a decided end to the end-writer through the engine's
 * callbacks (partd__jobs_hooks). See jobs_internal.h for the threads and
 * ownership.
 *
 * Errors: a job that cannot be queued (no memory, libuv refusing the work)
 * is logged and stays queued in the store for the next start; a start the
 * store does not record is logged and the job planned all the same.
 */
#define _GNU_SOURCE
#include "jobs_internal.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/map.h"
#include "core/time.h"
#include "partd/clock.h"
#include "partd/partd.h"

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
    if (uv_queue_work(j->loop, &r->work, partd__jobs_plan_work, after_plan) != 0) {
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

void partd__jobs_leave_run(partd_jobs *j, partd__jobs_job *jb)
{
    partd__jobs_run *r = jb->run;
    if (!r) {
        partd__jobs_unsaved_forget(j, jb);
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

/* ---- ends (loop thread) ------------------------------------------------- */

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
        partd__jobs_end_apply(j, r);
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
    /* Later identical jobs start a run of their own (or find the cache):
     * the rows to write are fixed now. */
    if (r->n_jobs > 0)
        partd__jobs_unkey(j, r);
    if (!partd__jobs_end_decide(j, r)) {
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
    partd__jobs_unsaved_init(j);
}

void partd__jobs_pool_close(partd_jobs *j)
{
    partd__jobs_unsaved_close(j);
}

void partd__jobs_pool_free(partd_jobs *j)
{
    partd__jobs_unsaved_free(j);
    partd_map_free(&j->runs_by_key);
}
