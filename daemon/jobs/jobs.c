/*
 * jobs.c - the job engine as the rest of the daemon sees it (jobs.h):
 * creating and freeing it, the calls HTTP threads make (reserve, submit,
 * lookup, cancel) and what the loop does with their messages, drain and
 * close. It sits on top of the engine's other parts and wires the
 * callbacks through which they tell it what happened (jobs_internal.h).
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/map.h"
#include "core/time.h"
#include "partd/partd.h"

/* ---- drain -------------------------------------------------------------- */

/* Loop thread: calls on_drained once a drain has no runs (nor claimed jobs
 * being decoded) left. */
static void maybe_drained(partd_jobs *j)
{
    if (j->draining && j->n_runs == 0 && j->n_decoding == 0 && !j->drained_called) {
        j->drained_called = 1;
        uv_timer_stop(&j->grace);
        j->opt.on_drained(j->opt.ctx);
    }
}

/* The planner_free callback: a run ended, or a claimed job's decode did. */
static void on_planner_free(partd_jobs *j)
{
    maybe_drained(j);
    partd__jobs_share_kick(j);
}

/* ---- messages (loop thread) --------------------------------------------- */

static void on_submit(partd_jobs *j, partd__jobs_msg *m)
{
    if (j->shared) {
        /* The store is the queue: the job runs where it is claimed (here
         * too, when a planner is free). */
        atomic_fetch_sub(&j->opt.metrics->jobs_queued, 1);
        partd_request_free(m->req);
        partd__jobs_job_free(m->job);
        partd__jobs_share_announce(j);
    } else {
        partd__jobs_enqueue(j, m->job, m->req);
    }
    free(m);
}

static void reply_cancel(partd__jobs_cancel_reply *reply, int rc, const partd_job_row *row)
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
    int rc = partd_store_cancel_job(j->opt.store, id, finished_ms, NULL);
    if (rc == PARTD_ENOMEM) {
        partd_job_row row;
        if (partd_store_get_job(j->opt.store, id, &row) == PARTD_OK) {
            if (row.status == PARTD_JOB_CANCELLED)
                rc = PARTD_OK;
            partd_job_row_clear(&row);
        }
    }
    return rc;
}

static void cancel(partd_jobs *j, const char *id, partd__jobs_cancel_reply *reply)
{
    partd__jobs_job *jb = partd__jobs_table_get(j, id);
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
    int64_t now = partd_time_now_ms();
    int rc = store_cancel(j, id, now);
    if (rc != PARTD_OK) {
        if (rc != PARTD_STORE_CONFLICT)
            partd_log_msg("error", "job", "cancelling job %s failed: the store refused the "
                          "write; the job goes on", id);
        reply_cancel(reply, rc == PARTD_STORE_CONFLICT ? rc : PARTD_EIO, NULL);
        return;
    }
    partd__jobs_leave_run(j, jb);
    partd__jobs_table_remove(j, jb);
    jb->row.finished_ms = now;
    partd__jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
    partd__jobs_log(jb, NULL, 0);
    reply_cancel(reply, PARTD_OK, &jb->row);
    partd__jobs_job_free(jb);
}

static void on_cancel(partd_jobs *j, partd__jobs_msg *m)
{
    cancel(j, m->id, m->reply);
    free(m);
}

/* A shared store: a cancel made on an HTTP thread (cancel_shared). */
static void on_cancelled(partd_jobs *j, partd__jobs_msg *m)
{
    /* Counted once here: as the job of a run here, or else now. */
    if (!partd__jobs_share_lost(j, m->id, m->attempts))
        atomic_fetch_add(&j->opt.metrics->jobs_finished[PARTD_JOB_CANCELLED], 1);
    free(m);
}

/* ---- public ------------------------------------------------------------- */

partd_jobs *partd_jobs_new(uv_loop_t *loop, const partd_jobs_options *opt)
{
    partd_jobs *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->opt = *opt;
    snprintf(j->runner, sizeof j->runner, "%s", opt->runner ? opt->runner : "");
    j->opt.runner = NULL; /* j->runner */
    j->loop = loop;
    j->on.planner_free = on_planner_free;
    j->on.end_decided = partd__jobs_write_later;
    /* Before any HTTP thread asks (reserve, lookup read it unlocked). */
    j->shared = partd_store_shared(opt->store);
    partd__jobs_queue_init(j);
    partd__jobs_table_init(j);
    partd__jobs_pool_init(j);
    uv_timer_init(loop, &j->grace);
    j->grace.data = j;
    partd_cancel_init(&j->decode_stop, 0);
    return j;
}

void partd_jobs_free(partd_jobs *j)
{
    if (!j)
        return;
    partd__jobs_pool_free(j);
    partd__jobs_table_free(j);
    partd__jobs_queue_free(j);
    free(j);
}

int partd_jobs_reserve(partd_jobs *j)
{
    atomic_int_fast64_t *q = &j->opt.metrics->jobs_queued;
    int64_t max = (int64_t)j->opt.queue_max;
    if (j->shared) {
        /* The queue is every replica's: the store's queued jobs. */
        int64_t waiting = partd_store_count_queued(j->opt.store);
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
    atomic_fetch_sub(&j->opt.metrics->jobs_queued, 1);
}

int64_t partd_jobs_queued(partd_jobs *j)
{
    if (j->shared) {
        int64_t waiting = partd_store_count_queued(j->opt.store);
        if (waiting >= 0)
            return waiting;
    }
    return atomic_load(&j->opt.metrics->jobs_queued);
}

int partd_jobs_submit(partd_jobs *j, const partd_job_row *row, partd_request *req)
{
    partd__jobs_msg *m = calloc(1, sizeof *m);
    partd__jobs_job *jb = partd__jobs_job_new(row);
    if (!m || !jb) {
        free(m);
        free(jb);
        partd_request_free(req);
        partd_jobs_unreserve(j); /* its place in the queue is not taken */
        return PARTD_ENOMEM;
    }
    m->handle = on_submit;
    m->job = jb;
    m->req = req;
    if (partd__jobs_send(j, m) != PARTD_OK) {
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
    partd__jobs_job *jb = partd_map_get(&j->table, id);
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
    int rc = partd_store_cancel_job(j->opt.store, id, partd_time_now_ms(), out);
    if (rc != PARTD_OK)
        return rc;
    partd_log_field f[] = {PARTD_LF_S("id", out->id), PARTD_LF_S("status", "cancelled"),
                           PARTD_LF_S("cache_key", out->cache_key), PARTD_LF_END};
    partd_log("info", "job", f);
    partd__jobs_msg *m = calloc(1, sizeof *m);
    if (m) {
        m->handle = on_cancelled;
        snprintf(m->id, sizeof m->id, "%s", out->id);
        m->attempts = out->attempts;
    }
    if (!m || partd__jobs_send(j, m) != PARTD_OK) {
        /* A run here stops at its next lease renewal all the same. */
        free(m);
        atomic_fetch_add(&j->opt.metrics->jobs_finished[PARTD_JOB_CANCELLED], 1);
    }
    return PARTD_OK;
}

int partd_jobs_cancel(partd_jobs *j, const char *id, partd_job_row *out)
{
    if (j->shared)
        return cancel_shared(j, id, out);
    partd__jobs_cancel_reply reply;
    memset(&reply, 0, sizeof reply);
    pthread_mutex_init(&reply.lock, NULL);
    pthread_cond_init(&reply.cond, NULL);
    partd__jobs_msg *m = calloc(1, sizeof *m);
    if (!m)
        return PARTD_ENOMEM;
    m->handle = on_cancel;
    snprintf(m->id, sizeof m->id, "%s", id);
    m->reply = &reply;
    int rc = partd__jobs_send(j, m);
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

static void on_grace_over(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    j->grace_over = 1;
    /* claimed jobs still decoding go back to the queue (jobs_claimed.c) */
    atomic_store(&j->decode_stop.cancelled, 1);
    for (partd__jobs_run *r = j->runs; r; r = r->next) {
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
    partd__jobs_process_messages(j);
    j->draining = 1;
    partd__jobs_share_drain(j);
    for (partd__jobs_run *r = j->runs; r; r = r->next) {
        partd__jobs_unkey(j, r);
        /* A shared store's runs hold claims (their jobs show running
         * everywhere): they get the grace period like started ones. */
        if (!j->shared && !r->started && uv_cancel((uv_req_t *)&r->work) == 0)
            r->abandoned = 1;
    }
    if (j->n_runs || j->n_decoding)
        uv_timer_start(&j->grace, on_grace_over, grace_ms, 0);
    maybe_drained(j);
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

void partd_jobs_close(partd_jobs *j)
{
    partd__jobs_queue_close(j);
    uv_close((uv_handle_t *)&j->grace, on_closed);
    partd__jobs_pool_close(j);
    partd__jobs_share_close(j);
}
