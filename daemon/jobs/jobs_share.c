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
 * A claim that found fewer jobs than it asked for marks the queue empty:
 * the next claim waits for an announcement or the poll timer, so a
 * planner that frees up costs no round trip when there is nothing to do.
 *
 * Threads: the calls to the database that may wait for it (claims, lease
 * renewals, connecting the LISTEN connection) run on this unit's own store
 * thread (core/worker.h), one task at a time, and their results come back
 * to the loop thread; the loop never waits for the database here,
 * whether it answers slowly or not at all. (Not on libuv's pool: renewals
 * must not wait behind long plans.) The store thread touches the job
 * engine only through the store, the log and atomic metrics; everything
 * else here runs on the loop thread.
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/map.h"
#include "core/worker.h"
#include "partd/partd.h"

/* Claims are tried this often without an announcement: a job whose
 * replica died runs again within its lease + this. */
#define POLL_MS 500

static uint64_t lease_ms(const partd_jobs *j)
{
    return j->opt.lease_ms ? j->opt.lease_ms : 30000;
}

/* ---- the store thread --------------------------------------------------- */

typedef enum { TASK_CLAIM, TASK_RENEW, TASK_LISTEN } task_kind;

typedef struct task {
    partd_worker_item link;         /* the store thread's queue */
    task_kind kind;
    partd_jobs *j;
    int rc;
    unsigned asked;                 /* CLAIM: jobs asked for */
    partd__jobs_claimed *got;       /* CLAIM: claimed jobs to decode */
    unsigned n_got;
    int64_t left;                   /* CLAIM: jobs still queued after it */
    partd_store_lease *leases;      /* RENEW: ids point into `ids` */
    char (*ids)[PARTD_ID_LEN + 1];
    unsigned char *lost;            /* RENEW: leases[i] is no longer ours */
    size_t n;
    int fd;                         /* LISTEN: the socket, or -1 */
} task;

typedef struct partd__jobs_share {
    partd_jobs *j;
    partd_worker *thread;           /* the store thread (one task of each kind at most) */
    int claiming, renewing, listening; /* a task of that kind is out */
    int announced;                  /* new work was announced while claiming */
    int empty;                      /* the last claim left no job queued */
    /* Claims lost while no run or decode of them was here: a claim of ours
     * may still be on its way from the store thread (a cancel on the HTTP
     * thread can overtake it); it is dropped when it arrives. A ring: a
     * claim on its way arrives at once, and the rest were other replicas'. */
    struct lost_claim {
        char id[PARTD_ID_LEN + 1];
        int attempts;
    } recently_lost[64];
    unsigned lost_next;
} partd__jobs_share;

/* Store thread: a claimed job, handed to the loop to decode (or failed
 * here when its attempts are used up). */
static void on_claimed(const partd_job_row *row, const char *body, size_t len, int exhausted,
                       void *ctx)
{
    task *t = ctx;
    partd_jobs *j = t->j;
    t->n_got++;
    if (exhausted) {
        partd__jobs_fail_crashed(j, row);
        partd_log_msg("warn", "job", "job %s failed: its runs ended without finishing too often",
                      row->id);
        return;
    }
    partd__jobs_claimed *c = partd__jobs_claimed_new(j, row, body, len);
    if (!c) {
        partd__jobs_give_back(j, row);
        return;
    }
    partd__jobs_claimed **tail = &t->got; /* in the claim's order: oldest first */
    while (*tail)
        tail = &(*tail)->next;
    *tail = c;
}

/* Store thread: marks the leases reported lost. */
static void on_lost_lease(const char *id, void *ctx)
{
    task *t = ctx;
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->ids[i], id) == 0)
            t->lost[i] = 1;
}

/* Store thread. */
static void run_task(partd_worker_item *item, void *ctx)
{
    (void)ctx;
    task *t = PARTD_WORKER_CONTAINER(item, task, link);
    partd_jobs *j = t->j;
    partd_store *store = j->opt.store;
    switch (t->kind) {
    case TASK_CLAIM:
        t->rc = partd_store_claim(store, j->runner, (int64_t)lease_ms(j), t->asked,
                                  PARTD_JOBS_MAX_ATTEMPTS, on_claimed, t);
        /* The claim counted the queue as it went (no round trip here). */
        t->left = t->rc == PARTD_OK && t->n_got == t->asked ? partd_store_count_queued(store) : 0;
        break;
    case TASK_RENEW:
        t->rc = partd_store_renew(store, j->runner, (int64_t)lease_ms(j), t->leases, t->n,
                                  on_lost_lease, t);
        break;
    case TASK_LISTEN:
        t->fd = partd_store_listen_fd(store);
        break;
    }
}

/* Loop thread: hands t to the store thread. */
static void post_task(partd__jobs_share *sh, task *t)
{
    t->j = sh->j;
    partd_worker_post(sh->thread, &t->link);
}

static void task_free(task *t)
{
    while (t->got) {
        partd__jobs_claimed *c = t->got;
        t->got = c->next;
        partd__jobs_claimed_free(c);
    }
    free(t->leases);
    free(t->ids);
    free(t->lost);
    free(t);
}

static void start_listening(partd_jobs *j, int fd);

static int lost_before_arriving(const partd__jobs_share *sh, const partd_job_row *row)
{
    for (size_t i = 0; i < sizeof sh->recently_lost / sizeof sh->recently_lost[0]; i++)
        if (sh->recently_lost[i].attempts == row->attempts &&
            strcmp(sh->recently_lost[i].id, row->id) == 0)
            return 1;
    return 0;
}

static void remember_lost(partd__jobs_share *sh, const char *id, int attempts)
{
    size_t n = sizeof sh->recently_lost / sizeof sh->recently_lost[0];
    struct lost_claim *l = &sh->recently_lost[sh->lost_next++ % n];
    snprintf(l->id, sizeof l->id, "%s", id);
    l->attempts = attempts;
}

/* Loop thread: what a claim brought. */
static void claim_done(partd_jobs *j, partd__jobs_share *sh, task *t)
{
    sh->claiming = 0;
    j->n_decoding -= t->asked;
    while (t->got) {
        partd__jobs_claimed *c = t->got;
        t->got = c->next;
        if (lost_before_arriving(sh, &c->row)) {
            partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                          c->row.id);
            partd__jobs_claimed_free(c);
            continue;
        }
        partd__jobs_claimed_decode(j, c);
    }
    /* Fewer than asked, or none left: nothing more to claim until new work
     * is announced (or the poll timer looks again). A failed claim waits
     * for the timer too: the database is not asked again at once. */
    sh->empty = !sh->announced && (t->rc != PARTD_OK || t->n_got < t->asked || t->left == 0);
    sh->announced = 0;
    j->on.planner_free(j);
}

/* Loop thread: what the store thread did; at close, also the tasks it
 * never ran (a claim that was not made asked for nothing). */
static void task_done(partd_worker_item *item, int status, void *ctx)
{
    partd__jobs_share *sh = ctx;
    partd_jobs *j = sh->j;
    task *t = PARTD_WORKER_CONTAINER(item, task, link);
    if (status != PARTD_OK) {
        if (t->kind == TASK_CLAIM)
            j->n_decoding -= t->asked;
    } else if (t->kind == TASK_CLAIM) {
        claim_done(j, sh, t);
    } else if (t->kind == TASK_RENEW) {
        sh->renewing = 0;
        for (size_t i = 0; t->rc == PARTD_OK && i < t->n; i++)
            if (t->lost[i])
                partd__jobs_share_lost(j, t->ids[i], t->leases[i].attempts);
    } else {
        sh->listening = 0;
        start_listening(j, t->fd);
    }
    task_free(t);
}

void partd__jobs_share_kick(partd_jobs *j)
{
    partd__jobs_share *sh = j->share;
    if (!j->share_started || j->draining || j->closing || sh->claiming || sh->empty)
        return;
    uint64_t workers = j->opt.workers ? j->opt.workers : 1;
    /* A planner for each claimed job: runs and decodes in progress count,
     * and so do the jobs a claim out asks for (n_decoding holds them). */
    if (j->n_runs + j->n_decoding >= workers)
        return;
    task *t = calloc(1, sizeof *t);
    if (!t)
        return;
    t->kind = TASK_CLAIM;
    t->asked = (unsigned)(workers - j->n_runs - j->n_decoding);
    j->n_decoding += t->asked;
    sh->claiming = 1;
    post_task(sh, t);
}

/* New work may be queued: claim even when the last claim found none. */
static void new_work(partd_jobs *j)
{
    partd__jobs_share *sh = j->share;
    sh->empty = 0;
    if (sh->claiming)
        sh->announced = 1; /* the claim out may have looked before it */
    partd__jobs_share_kick(j);
}

void partd__jobs_share_announce(partd_jobs *j)
{
    if (!j->share)
        return;
    /* While the LISTEN connection is up, the job's announcement follows
     * (its insert has committed): claim on that, once, not twice. */
    if (j->listen_poll)
        partd__jobs_share_kick(j);
    else
        new_work(j);
}

/* ---- leases ------------------------------------------------------------- */

/* A later claim of the same job (after `attempts`) stays: it is another
 * replica's, or ours again. */
int partd__jobs_share_lost(partd_jobs *j, const char *id, int attempts)
{
    int decoding = 0;
    for (partd__jobs_claimed *c = j->decoding; c; c = c->next)
        if (strcmp(c->row.id, id) == 0 && c->row.attempts == attempts)
            c->lost = decoding = 1;
    partd__jobs_job *jb = partd__jobs_table_get(j, id);
    if (!jb || !jb->run || jb->row.attempts != attempts) {
        if (!decoding && j->share)
            remember_lost(j->share, id, attempts);
        return 0;
    }
    if (jb->run->end.decided) {
        /* Its end is being written, from copies of the rows (which the
         * write leaves as they are now): the job ends once it is written. */
        jb->lost = 1;
        return 1;
    }
    partd__jobs_leave_run(j, jb);
    partd__jobs_table_remove(j, jb);
    partd__jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
    partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over); "
                  "stopped", jb->row.id);
    partd__jobs_job_free(jb);
    return 1;
}

/* The leases of every job claimed here (running or decoding), renewed on
 * the store thread; one renewal out at a time. */
static void on_renew(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    partd__jobs_share *sh = j->share;
    size_t n = j->n_decoding;
    for (partd__jobs_run *r = j->runs; r; r = r->next)
        n += r->n_jobs;
    if (n == 0 || sh->renewing)
        return;
    task *tk = calloc(1, sizeof *tk);
    if (!tk || !(tk->leases = calloc(n, sizeof *tk->leases)) ||
        !(tk->ids = calloc(n, sizeof *tk->ids)) || !(tk->lost = calloc(n, 1))) {
        if (tk)
            task_free(tk);
        return;
    }
    tk->kind = TASK_RENEW;
    size_t k = 0;
    for (partd__jobs_run *r = j->runs; r; r = r->next)
        for (partd__jobs_job *jb = r->jobs; jb && k < n; jb = jb->run_next, k++) {
            memcpy(tk->ids[k], jb->row.id, sizeof tk->ids[k]);
            tk->leases[k] = (partd_store_lease){tk->ids[k], jb->row.attempts};
        }
    for (partd__jobs_claimed *c = j->decoding; c && k < n; c = c->next, k++) {
        memcpy(tk->ids[k], c->row.id, sizeof tk->ids[k]);
        tk->leases[k] = (partd_store_lease){tk->ids[k], c->row.attempts};
    }
    tk->n = k;
    if (k == 0) {
        task_free(tk);
        return;
    }
    sh->renewing = 1;
    post_task(sh, tk);
}

/* ---- wake-ups ----------------------------------------------------------- */

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
    partd_store_listen_reset(j->opt.store);
}

static void on_announced(uv_poll_t *p, int status, int events)
{
    (void)events;
    partd_jobs *j = p->data;
    int rc = status < 0 ? -1 : partd_store_listen_consume(j->opt.store);
    if (rc < 0) {
        partd_log_msg("warn", "store", "lost the connection that announces new jobs; "
                      "polling until it is back");
        stop_listening(j);
    } else if (rc > 0) {
        new_work(j);
    }
}

/* Loop thread: the store thread connected the LISTEN connection (fd >= 0)
 * or could not (it is tried again at the next poll). */
static void start_listening(partd_jobs *j, int fd)
{
    if (fd < 0)
        return;
    if (j->draining || j->closing) {
        partd_store_listen_reset(j->opt.store);
        return;
    }
    uv_poll_t *p = malloc(sizeof *p);
    if (!p || uv_poll_init(j->loop, p, fd) != 0) {
        free(p);
        partd_store_listen_reset(j->opt.store);
        return;
    }
    p->data = j;
    uv_poll_start(p, UV_READABLE, on_announced);
    j->listen_poll = p;
}

static void on_poll(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    partd__jobs_share *sh = j->share;
    if (!j->listen_poll && !sh->listening) {
        task *tk = calloc(1, sizeof *tk);
        if (tk) {
            tk->kind = TASK_LISTEN;
            tk->fd = -1;
            sh->listening = 1;
            post_task(sh, tk);
        }
    }
    /* Jobs whose replica died are announced by nobody. */
    new_work(j);
}

/* ---- life cycle --------------------------------------------------------- */

void partd__jobs_share_start(partd_jobs *j)
{
    if (!j->shared || j->share_started)
        return;
    partd__jobs_share *sh = calloc(1, sizeof *sh);
    int rc = PARTD_ENOMEM;
    if (sh) {
        sh->j = j;
        rc = partd_worker_start(&sh->thread, j->loop, run_task, task_done, sh);
    }
    if (rc != PARTD_OK) {
        free(sh);
        if (rc == PARTD_ENOMEM)
            partd_log_msg("error", "job", "out of memory starting work sharing; this replica "
                          "claims no jobs");
        else
            partd_log_msg("error", "job", "cannot start the store thread; this replica claims "
                          "no jobs");
        return;
    }
    j->share = sh;
    j->share_started = 1;
    partd__jobs_writer_start(j);
    uv_timer_init(j->loop, &j->poll_timer);
    j->poll_timer.data = j;
    uv_timer_init(j->loop, &j->renew_timer);
    j->renew_timer.data = j;
    uint64_t renew = lease_ms(j) / 3 ? lease_ms(j) / 3 : 1;
    uv_timer_start(&j->poll_timer, on_poll, 0, POLL_MS);
    uv_timer_start(&j->renew_timer, on_renew, renew, renew);
    atomic_store(&j->opt.metrics->shared_store, j->opt.store);
}

void partd__jobs_share_drain(partd_jobs *j)
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

void partd__jobs_share_close(partd_jobs *j)
{
    if (!j->share_started)
        return;
    partd__jobs_share *sh = j->share;
    j->closing = 1;
    atomic_store(&j->opt.metrics->shared_store, NULL);
    stop_listening(j);
    uv_close((uv_handle_t *)&j->poll_timer, on_timer_closed);
    uv_close((uv_handle_t *)&j->renew_timer, on_timer_closed);
    /* The store thread ends after the call it is in (bounded by the
     * store's timeouts); what it finished is handled here: jobs it claimed
     * go back to the queue (closing), a LISTEN connection is closed. */
    partd_worker_close(sh->thread);
    /* Ends still being written are written first (runs normally have all
     * ended by now: a drain waits for them). */
    partd__jobs_writer_close(j);
    j->share = NULL;
    free(sh);
}
