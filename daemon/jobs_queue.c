/*
 * jobs_queue.c - the job engine's table and message queue: the public
 * functions of jobs.h that HTTP threads call (submit, lookup, cancel), the
 * loop side that handles their messages, and drain and close. See
 * jobs_internal.h for the threads and ownership.
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "partd.h"

/* ---- small helpers ------------------------------------------------------ */

void partd_jobs_log(const job *jb, const char *extra_key, double extra)
{
    partd_log_field f[] = {
        PARTD_LF_S("id", jb->row.id),
        PARTD_LF_S("status", partd_job_status_name(jb->row.status)),
        PARTD_LF_S("cache_key", jb->row.cache_key),
        extra_key ? PARTD_LF_N(extra_key, extra) : PARTD_LF_END,
        PARTD_LF_END};
    partd_log("info", "job", f);
}

void partd_jobs_set_status(partd_jobs *j, job *jb, partd_job_status status)
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

void partd_jobs_table_remove(partd_jobs *j, job *jb)
{
    pthread_mutex_lock(&j->table_lock);
    partd_map_remove(&j->table, jb->row.id);
    pthread_mutex_unlock(&j->table_lock);
}

void partd_jobs_job_free(job *jb)
{
    partd_job_row_clear(&jb->row);
    free(jb);
}

void partd_jobs_post(partd_jobs *j, msg *m)
{
    m->next = NULL;
    if (j->tail)
        j->tail->next = m;
    else
        j->head = m;
    j->tail = m;
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
    int rc = partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
    partd_cache_entry_release(e);
    if (rc != PARTD_OK)
        return 0; /* not recorded: plan it as any other job */
    jb->row.started_ms = row.started_ms;
    jb->row.finished_ms = row.finished_ms;
    jb->row.cached = 1;
    atomic_fetch_add(&j->svc->metrics.cache_hits, 1);
    partd_jobs_table_remove(j, jb);
    partd_jobs_set_status(j, jb, PARTD_JOB_SUCCEEDED);
    partd_jobs_log(jb, "cached", 1);
    partd_jobs_job_free(jb);
    return 1;
}

void partd_jobs_enqueue(partd_jobs *j, job *jb, partd_request *req)
{
    if (j->draining && !j->shared) {
        /* Accepted just before the drain began: it is committed as queued
         * and will run after the next start. (A shared store's jobs come
         * here claimed: they run within the grace period.) */
        atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
        partd_request_free(req);
        partd_jobs_job_free(jb);
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
        partd_jobs_job_free(jb);
        return;
    }
    if (finish_from_cache(j, jb)) {
        partd_request_free(req);
        return;
    }
    run *r = partd_map_get(&j->runs_by_key, jb->row.cache_key);
    if (r) {
        partd_request_free(req); /* the run has its own copy of the same model */
        partd_jobs_attach(r, jb);
        partd_jobs_log(jb, "shared_run", 1);
        if (r->started)
            partd_jobs_mark_running(j, jb, r);
        return;
    }
    r = partd_jobs_run_new(j, req);
    if (!r) {
        partd_log_msg("error", "job", "cannot start a run for job %s; it stays queued in the "
                      "store for the next start", jb->row.id);
        partd_jobs_table_remove(j, jb);
        atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
        partd_request_free(req);
        partd_jobs_job_free(jb);
        return;
    }
    partd_jobs_attach(r, jb);
    partd_jobs_log(jb, NULL, 0);
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

/* Records the cancel in the store first, in one statement that only
 * cancels an unfinished job: PARTD_OK once it is durable. On ENOMEM the
 * statement may have committed without its row being read back: the
 * stored status says. */
static int store_cancel(partd_jobs *j, const char *id, int64_t finished_ms)
{
    int rc = partd_store_cancel_job(j->svc->store, id, finished_ms, NULL);
    if (rc == PARTD_ENOMEM) {
        partd_job_row row;
        if (partd_store_get_job(j->svc->store, id, &row) == PARTD_OK) {
            if (row.status == PARTD_JOB_CANCELLED)
                rc = PARTD_OK;
            partd_job_row_clear(&row);
        }
    }
    return rc;
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
    /* Durable first: a cancel the store refuses (disk full) changes
     * nothing, so the job neither strands nor runs after a restart
     * although it was answered as cancelled. */
    int64_t now = partd_now_ms();
    int rc = store_cancel(j, id, now);
    if (rc != PARTD_OK) {
        if (rc != PARTD_STORE_CONFLICT)
            partd_log_msg("error", "job", "cancelling job %s failed: the store refused the "
                          "write; the job goes on", id);
        reply_cancel(reply, rc == PARTD_STORE_CONFLICT ? rc : PARTD_EIO, NULL);
        return;
    }
    run *r = jb->run;
    partd_jobs_detach(r, jb);
    if (r->n_jobs == 0)
        partd_jobs_stop_run(j, r);
    partd_jobs_table_remove(j, jb);
    jb->row.finished_ms = now;
    partd_jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
    partd_jobs_log(jb, NULL, 0);
    reply_cancel(reply, PARTD_OK, &jb->row);
    partd_jobs_job_free(jb);
}

void partd_jobs_process_messages(partd_jobs *j)
{
    pthread_mutex_lock(&j->queue_lock);
    msg *m = j->head;
    j->head = j->tail = NULL;
    pthread_mutex_unlock(&j->queue_lock);
    while (m) {
        msg *next = m->next;
        switch (m->kind) {
        case MSG_SUBMIT:
            if (j->shared) {
                /* The store is the queue: the job runs where it is claimed
                 * (here too, when a planner is free). */
                atomic_fetch_sub(&j->svc->metrics.jobs_queued, 1);
                partd_request_free(m->req);
                partd_jobs_job_free(m->job);
                partd_jobs_share_announce(j);
            } else {
                partd_jobs_enqueue(j, m->job, m->req);
            }
            free(m);
            break;
        case MSG_CANCEL:
            on_cancel(j, m->id, m->reply);
            free(m);
            break;
        case MSG_STARTED:
            partd_jobs_on_started(j, m->run); /* embedded in the run: not freed */
            break;
        case MSG_CANCELLED:
            /* Counted once here: as the job of a run here, or else now. */
            if (!partd_jobs_share_lost(j, m->id, m->attempts))
                atomic_fetch_add(&j->svc->metrics.jobs_finished[PARTD_JOB_CANCELLED], 1);
            free(m);
            break;
        }
        m = next;
    }
}

static void on_wakeup(uv_async_t *a)
{
    partd_jobs_process_messages(a->data);
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
    /* Before any HTTP thread asks (reserve, lookup read it unlocked). */
    j->shared = partd_store_shared(svc->store);
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
        partd_jobs_job_free(jb);
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
    if (j->shared) {
        /* The queue is every replica's: the store's queued jobs. */
        int64_t waiting = partd_store_count_queued(j->svc->store);
        if (waiting >= max)
            return 0;
        atomic_fetch_add(q, 1);
        return 1;
    }
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
    if (j->shared) {
        int64_t waiting = partd_store_count_queued(j->svc->store);
        if (waiting >= 0)
            return waiting;
    }
    return atomic_load(&j->svc->metrics.jobs_queued);
}

static int send_msg(partd_jobs *j, msg *m)
{
    /* Sent under the lock: partd_jobs_close() cannot close the handle
     * between the check and the send. */
    pthread_mutex_lock(&j->queue_lock);
    int closed = j->closed;
    if (!closed) {
        partd_jobs_post(j, m);
        uv_async_send(&j->wakeup);
    }
    pthread_mutex_unlock(&j->queue_lock);
    return closed ? PARTD_EIO : PARTD_OK;
}

job *partd_jobs_job_new(const partd_job_row *row)
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
    job *jb = partd_jobs_job_new(row);
    if (!m || !jb) {
        free(m);
        free(jb);
        partd_request_free(req);
        partd_jobs_unreserve(j); /* its place in the queue is not taken */
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
    /* Shared: every replica answers from the store, which is the truth
     * (the table only holds what runs here). */
    if (j->shared)
        return PARTD_STORE_MISSING;
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

/* A shared store: the cancel is one statement, made here on the HTTP
 * thread (the loop never waits for the database), that cancels the job
 * wherever it is queued or runs; a run of it on this replica is then
 * stopped by the loop, as one whose claim was lost (the runner elsewhere
 * sees it at its next lease renewal). */
static int cancel_shared(partd_jobs *j, const char *id, partd_job_row *out)
{
    int rc = partd_store_cancel_job(j->svc->store, id, partd_now_ms(), out);
    if (rc != PARTD_OK)
        return rc;
    partd_log_field f[] = {PARTD_LF_S("id", out->id), PARTD_LF_S("status", "cancelled"),
                           PARTD_LF_S("cache_key", out->cache_key), PARTD_LF_END};
    partd_log("info", "job", f);
    msg *m = calloc(1, sizeof *m);
    if (m) {
        m->kind = MSG_CANCELLED;
        snprintf(m->id, sizeof m->id, "%s", out->id);
        m->attempts = out->attempts;
    }
    if (!m || send_msg(j, m) != PARTD_OK) {
        /* A run here stops at its next lease renewal all the same. */
        free(m);
        atomic_fetch_add(&j->svc->metrics.jobs_finished[PARTD_JOB_CANCELLED], 1);
    }
    return PARTD_OK;
}

int partd_jobs_cancel(partd_jobs *j, const char *id, partd_job_row *out)
{
    if (j->shared)
        return cancel_shared(j, id, out);
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
        rc = PARTD_STORE_MISSING; /* closed: it runs nothing any more */
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

void partd_jobs_maybe_drained(partd_jobs *j)
{
    if (j->draining && j->n_runs == 0 && j->n_decoding == 0 && !j->drained_called) {
        j->drained_called = 1;
        uv_timer_stop(&j->grace);
        j->on_drained(j->drained_ctx);
    }
}

static void on_grace_over(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    j->grace_over = 1;
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
    partd_jobs_process_messages(j);
    j->draining = 1;
    partd_jobs_share_drain(j);
    for (run *r = j->runs; r; r = r->next) {
        partd_jobs_unkey(j, r);
        /* A shared store's runs hold claims (their jobs show running
         * everywhere): they get the grace period like started ones. */
        if (!j->shared && !r->started && uv_cancel((uv_req_t *)&r->work) == 0)
            r->abandoned = 1;
    }
    if (j->n_runs || j->n_decoding)
        uv_timer_start(&j->grace, on_grace_over, grace_ms, 0);
    partd_jobs_maybe_drained(j);
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
    partd_jobs_process_messages(j);
    uv_close((uv_handle_t *)&j->wakeup, on_closed);
    uv_close((uv_handle_t *)&j->grace, on_closed);
    uv_close((uv_handle_t *)&j->retry, on_closed);
    partd_jobs_share_close(j);
}
