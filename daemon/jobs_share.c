/*
 * jobs_share.c - the job engine on a shared store (several replicas, one
 * queue): this replica claims jobs from the store when it has a free
 * planner, holds a lease on each while it plans and renews it, and learns
 * at each renewal which of its jobs were cancelled or taken over. See
 * jobs_internal.h and store.h ("work shared by replicas").
 *
 * Wake-ups: a LISTEN socket watched by a uv_poll (new or released jobs are
 * announced), a poll timer as the fallback (it also finds jobs whose
 * replica died, once their lease has run out), and the end of every run.
 * Everything here runs on the loop thread.
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "log.h"
#include "partd.h"

/* Claims are tried this often without an announcement: a job whose
 * replica died runs again within its lease + this. */
#define POLL_MS 500

static uint64_t lease_ms(const partd_jobs *j)
{
    return j->svc->cfg->lease_ms ? j->svc->cfg->lease_ms : 30000;
}

/* ---- claimed jobs --------------------------------------------------------- */

/* Fails a claimed job with problem text `error` (still our claim). */
static void fail_claimed(partd_jobs *j, const partd_job_row *row, char *error, int status,
                         const char *why)
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
    partd_log_msg("warn", "job", "job %s failed: %s", row->id, why);
}

static void on_claimed(const partd_job_row *row, const char *body, size_t len, int exhausted,
                       void *ctx)
{
    partd_jobs *j = ctx;
    if (exhausted) {
        int status = 500;
        char *error = partd_jobs_crash_problem(row->attempts, &status);
        fail_claimed(j, row, error, status, "its runs ended without finishing too often");
        free(error);
        return;
    }
    partd_request *req = NULL;
    partd_problem problem;
    partd_problem_init(&problem);
    int rc = partd_request_decode(body, len, &j->svc->limits, &req, &problem);
    if (rc != PARTD_OK) {
        if (problem.status == 0)
            partd_problem_set(&problem, 422, "invalid-request", "Invalid request", "%s",
                              partd_strerror(rc));
        char *error = partd_problem_to_json(&problem, NULL);
        fail_claimed(j, row, error, problem.status, "its request no longer decodes");
        free(error);
        partd_problem_free(&problem);
        return;
    }
    partd_problem_free(&problem);
    job *jb = partd_jobs_job_new(row);
    if (!jb) {
        /* Left claimed: its lease runs out and it is claimed again. */
        partd_request_free(req);
        return;
    }
    atomic_fetch_add(&j->svc->metrics.jobs_queued, 1);
    partd_jobs_enqueue(j, jb, req);
}

void partd_jobs_share_kick(partd_jobs *j)
{
    if (!j->shared || j->draining || j->closing)
        return;
    uint64_t workers = j->svc->cfg->workers ? j->svc->cfg->workers : 1;
    if (j->n_runs >= workers)
        return;
    partd_store_claim(j->svc->store, j->svc->runner, (int64_t)lease_ms(j),
                      (unsigned)(workers - j->n_runs), PARTD_JOBS_MAX_ATTEMPTS, on_claimed, j);
}

/* ---- leases --------------------------------------------------------------- */

/* A job of ours that is no longer our claim (cancelled elsewhere, or taken
 * over after our lease ran out): stop planning it, forget it. */
static void on_lost(const char *id, void *ctx)
{
    partd_jobs *j = ctx;
    pthread_mutex_lock(&j->table_lock);
    job *jb = partd_map_get(&j->table, id);
    pthread_mutex_unlock(&j->table_lock);
    if (!jb || !jb->run)
        return;
    run *r = jb->run;
    partd_jobs_detach(r, jb);
    if (r->n_jobs == 0)
        partd_jobs_stop_run(j, r);
    partd_jobs_table_remove(j, jb);
    partd_jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
    partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over); "
                  "stopped", jb->row.id);
    partd_jobs_job_free(jb);
}

static void on_renew(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    size_t n = 0;
    for (run *r = j->runs; r; r = r->next)
        n += r->n_jobs;
    if (n == 0)
        return;
    partd_store_lease *leases = calloc(n, sizeof *leases);
    char(*ids)[PARTD_ID_LEN + 1] = calloc(n, sizeof *ids);
    if (leases && ids) {
        size_t k = 0;
        for (run *r = j->runs; r; r = r->next)
            for (job *jb = r->jobs; jb && k < n; jb = jb->run_next, k++) {
                memcpy(ids[k], jb->row.id, sizeof ids[k]);
                leases[k] = (partd_store_lease){ids[k], jb->row.attempts};
            }
        partd_store_renew(j->svc->store, j->svc->runner, (int64_t)lease_ms(j), leases, k,
                          on_lost, j);
    }
    free(leases);
    free(ids);
}

/* ---- wake-ups --------------------------------------------------------------- */

static void on_poll_closed(uv_handle_t *h)
{
    free(h);
}

static void stop_listening(partd_jobs *j)
{
    if (!j->listen_poll)
        return;
    /* Stopped before the store closes the socket under it. */
    uv_poll_stop(j->listen_poll);
    uv_close((uv_handle_t *)j->listen_poll, on_poll_closed);
    j->listen_poll = NULL;
    partd_store_listen_reset(j->svc->store);
}

static void on_announced(uv_poll_t *p, int status, int events)
{
    (void)events;
    partd_jobs *j = p->data;
    int rc = status < 0 ? -1 : partd_store_listen_consume(j->svc->store);
    if (rc < 0) {
        partd_log_msg("warn", "store", "lost the connection that announces new jobs; "
                      "polling until it is back");
        stop_listening(j);
    } else if (rc > 0) {
        partd_jobs_share_kick(j);
    }
}

static void start_listening(partd_jobs *j)
{
    int fd = partd_store_listen_fd(j->svc->store);
    if (fd < 0)
        return;
    uv_poll_t *p = malloc(sizeof *p);
    if (!p || uv_poll_init(j->loop, p, fd) != 0) {
        free(p);
        partd_store_listen_reset(j->svc->store);
        return;
    }
    p->data = j;
    uv_poll_start(p, UV_READABLE, on_announced);
    j->listen_poll = p;
}

static void on_poll(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    if (!j->listen_poll)
        start_listening(j);
    partd_jobs_share_kick(j);
}

/* ---- life cycle ---------------------------------------------------------- */

void partd_jobs_share_start(partd_jobs *j)
{
    if (j->shared || !partd_store_shared(j->svc->store))
        return;
    j->shared = 1;
    uv_timer_init(j->loop, &j->poll_timer);
    j->poll_timer.data = j;
    uv_timer_init(j->loop, &j->renew_timer);
    j->renew_timer.data = j;
    uint64_t renew = lease_ms(j) / 3 ? lease_ms(j) / 3 : 1;
    uv_timer_start(&j->poll_timer, on_poll, 0, POLL_MS);
    uv_timer_start(&j->renew_timer, on_renew, renew, renew);
}

void partd_jobs_share_drain(partd_jobs *j)
{
    if (!j->shared)
        return;
    /* No new claims; leases are still renewed while the runs finish. */
    uv_timer_stop(&j->poll_timer);
    stop_listening(j);
}

static void on_timer_closed(uv_handle_t *h)
{
    (void)h;
}

void partd_jobs_share_close(partd_jobs *j)
{
    if (!j->shared)
        return;
    j->closing = 1;
    stop_listening(j);
    uv_close((uv_handle_t *)&j->poll_timer, on_timer_closed);
    uv_close((uv_handle_t *)&j->renew_timer, on_timer_closed);
}
