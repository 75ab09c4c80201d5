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
#include "intake.h"
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

/* A claimed job whose request a pool thread decodes (a large model takes
 * seconds: never on the loop, which renews the leases). */
typedef struct claimed {
    uv_work_t work;
    partd_jobs *j;
    partd_job_row row;       /* without summary and error */
    char *body;
    size_t len;
    partd_request *req;
    partd_problem problem;
    int rc;
    int lost;                /* cancelled or taken over meanwhile */
    struct claimed *next;
} claimed;

static void decode_work(uv_work_t *w)
{
    claimed *c = w->data;
    c->rc = partd_intake_decode_stored(c->body, c->len, &c->j->svc->limits, &c->req,
                                       &c->problem);
    free(c->body);
    c->body = NULL;
}

/* Hands a claim back (queued, the attempt not counted) to whoever is next. */
static void give_back(partd_jobs *j, const partd_job_row *row)
{
    partd_job_row back = *row;
    back.status = PARTD_JOB_QUEUED;
    const partd_job_row *rows[1] = {&back};
    partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
}

static void after_decode(uv_work_t *w, int status)
{
    claimed *c = w->data;
    partd_jobs *j = c->j;
    for (claimed **p = &j->decoding; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    j->n_decoding--;
    if (c->lost) {
        partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                      c->row.id);
    } else if (status == UV_ECANCELED || j->grace_over) {
        give_back(j, &c->row);
    } else if (c->rc != PARTD_OK) {
        if (c->problem.status == 0)
            partd_problem_set(&c->problem, 422, "invalid-request", "Invalid request", "%s",
                              partd_strerror(c->rc));
        char *error = partd_problem_to_json(&c->problem, NULL);
        fail_claimed(j, &c->row, error, c->problem.status, "its request no longer decodes");
        free(error);
    } else {
        job *jb = partd_jobs_job_new(&c->row);
        if (jb) {
            atomic_fetch_add(&j->svc->metrics.jobs_queued, 1);
            partd_jobs_enqueue(j, jb, c->req);
            c->req = NULL;
        } else {
            give_back(j, &c->row);
        }
    }
    partd_request_free(c->req);
    partd_problem_free(&c->problem);
    free(c->body);
    free(c);
    partd_jobs_maybe_drained(j);
    partd_jobs_share_kick(j);
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
    claimed *c = calloc(1, sizeof *c);
    if (c)
        c->body = malloc(len + 1);
    if (!c || !c->body) {
        free(c);
        give_back(j, row);
        return;
    }
    memcpy(c->body, body, len);
    c->body[len] = '\0';
    c->len = len;
    c->j = j;
    c->row = *row;
    c->row.summary = c->row.error = NULL;
    partd_problem_init(&c->problem);
    c->work.data = c;
    if (uv_queue_work(j->loop, &c->work, decode_work, after_decode) != 0) {
        give_back(j, row);
        free(c->body);
        free(c);
        return;
    }
    c->next = j->decoding;
    j->decoding = c;
    j->n_decoding++;
}

/* Counts the jobs a claim hands over. */
typedef struct claim_ctx {
    partd_jobs *j;
    unsigned n;
} claim_ctx;

static void count_claimed(const partd_job_row *row, const char *body, size_t len,
                          int exhausted, void *ctx)
{
    claim_ctx *c = ctx;
    c->n++;
    on_claimed(row, body, len, exhausted, c->j);
}

void partd_jobs_share_kick(partd_jobs *j)
{
    if (!j->share_started || j->draining || j->closing)
        return;
    uint64_t workers = j->svc->cfg->workers ? j->svc->cfg->workers : 1;
    /* A planner for each claimed job: runs and decodes in progress count. */
    while (j->n_runs + j->n_decoding < workers) {
        claim_ctx c = {j, 0};
        if (partd_store_claim(j->svc->store, j->svc->runner, (int64_t)lease_ms(j), 1,
                              PARTD_JOBS_MAX_ATTEMPTS, count_claimed, &c) != PARTD_OK ||
            c.n == 0)
            break;
    }
}

/* ---- leases --------------------------------------------------------------- */

/* A job of ours that is no longer our claim (cancelled elsewhere, or taken
 * over after our lease ran out): stop planning it, forget it. */
static void on_lost(const char *id, void *ctx)
{
    partd_jobs *j = ctx;
    for (claimed *c = j->decoding; c; c = c->next)
        if (strcmp(c->row.id, id) == 0)
            c->lost = 1;
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
    size_t n = j->n_decoding;
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
        for (claimed *c = j->decoding; c && k < n; c = c->next, k++) {
            memcpy(ids[k], c->row.id, sizeof ids[k]);
            leases[k] = (partd_store_lease){ids[k], c->row.attempts};
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
    if (!j->shared || j->share_started)
        return;
    j->share_started = 1;
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
    if (!j->share_started)
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
    if (!j->share_started)
        return;
    j->closing = 1;
    stop_listening(j);
    uv_close((uv_handle_t *)&j->poll_timer, on_timer_closed);
    uv_close((uv_handle_t *)&j->renew_timer, on_timer_closed);
}
