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
 * thread, one task at a time, and their results come back to the loop
 * thread through a uv_async; the loop never waits for the database here,
 * whether it answers slowly or not at all. (Not on libuv's pool: renewals
 * must not wait behind long plans.) The store thread touches the job
 * engine only through the store, the log and atomic metrics; everything
 * else here runs on the loop thread.
 */
#include "jobs_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "partd.h"

/* Claims are tried this often without an announcement: a job whose
 * replica died runs again within its lease + this. */
#define POLL_MS 500

static uint64_t lease_ms(const partd_jobs *j)
{
    return j->svc->cfg->lease_ms ? j->svc->cfg->lease_ms : 30000;
}

/* ---- the store thread ------------------------------------------------------- */

typedef enum { TASK_CLAIM, TASK_RENEW, TASK_LISTEN } task_kind;

typedef struct task {
    task_kind kind;
    partd_jobs *j;
    struct task *next;
    int rc;
    unsigned asked;                 /* CLAIM: jobs asked for */
    claimed *got;                   /* CLAIM: claimed jobs to decode */
    unsigned n_got;
    int64_t left;                   /* CLAIM: jobs still queued after it */
    partd_store_lease *leases;      /* RENEW: ids point into `ids` */
    char (*ids)[PARTD_ID_LEN + 1];
    unsigned char *lost;            /* RENEW: leases[i] is no longer ours */
    size_t n;
    int fd;                         /* LISTEN: the socket, or -1 */
} task;

typedef struct partd_share {
    partd_jobs *j;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    task *todo;                     /* loop -> store thread (one of each kind at most) */
    task *done;                     /* store thread -> loop */
    int quit;
    uv_async_t async;
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
} partd_share;

/* Store thread: a claimed job, handed to the loop to decode (or failed
 * here when its attempts are used up). */
static void on_claimed(const partd_job_row *row, const char *body, size_t len, int exhausted,
                       void *ctx)
{
    task *t = ctx;
    partd_jobs *j = t->j;
    t->n_got++;
    if (exhausted) {
        int status = 500;
        char *error = partd_jobs_crash_problem(row->attempts, &status);
        partd_jobs_fail_unrun(j, row, error, status);
        free(error);
        partd_log_msg("warn", "job", "job %s failed: its runs ended without finishing too often",
                      row->id);
        return;
    }
    claimed *c = partd_jobs_claimed_new(j, row, body, len);
    if (!c) {
        partd_jobs_give_back(j, row);
        return;
    }
    claimed **tail = &t->got; /* in the claim's order: oldest first */
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

static void run_task(task *t)
{
    partd_jobs *j = t->j;
    partd_store *store = j->svc->store;
    switch (t->kind) {
    case TASK_CLAIM:
        t->rc = partd_store_claim(store, j->svc->runner, (int64_t)lease_ms(j), t->asked,
                                  PARTD_JOBS_MAX_ATTEMPTS, on_claimed, t);
        /* The claim counted the queue as it went (no round trip here). */
        t->left = t->rc == PARTD_OK && t->n_got == t->asked ? partd_store_count_queued(store) : 0;
        break;
    case TASK_RENEW:
        t->rc = partd_store_renew(store, j->svc->runner, (int64_t)lease_ms(j), t->leases, t->n,
                                  on_lost_lease, t);
        break;
    case TASK_LISTEN:
        t->fd = partd_store_listen_fd(store);
        break;
    }
}

static void *store_thread(void *arg)
{
    partd_share *sh = arg;
    pthread_mutex_lock(&sh->lock);
    for (;;) {
        while (!sh->todo && !sh->quit)
            pthread_cond_wait(&sh->cond, &sh->lock);
        if (sh->quit)
            break;
        task *t = sh->todo;
        sh->todo = t->next;
        pthread_mutex_unlock(&sh->lock);
        run_task(t);
        pthread_mutex_lock(&sh->lock);
        t->next = sh->done;
        sh->done = t;
        uv_async_send(&sh->async);
    }
    pthread_mutex_unlock(&sh->lock);
    return NULL;
}

/* Loop thread: hands t to the store thread. */
static void post_task(partd_share *sh, task *t)
{
    t->j = sh->j;
    pthread_mutex_lock(&sh->lock);
    task **p = &sh->todo;
    while (*p)
        p = &(*p)->next;
    *p = t;
    pthread_cond_signal(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
}

static void task_free(task *t)
{
    while (t->got) {
        claimed *c = t->got;
        t->got = c->next;
        partd_jobs_claimed_free(c);
    }
    free(t->leases);
    free(t->ids);
    free(t->lost);
    free(t);
}

static void start_listening(partd_jobs *j, int fd);

static int lost_before_arriving(const partd_share *sh, const partd_job_row *row)
{
    for (size_t i = 0; i < sizeof sh->recently_lost / sizeof sh->recently_lost[0]; i++)
        if (sh->recently_lost[i].attempts == row->attempts &&
            strcmp(sh->recently_lost[i].id, row->id) == 0)
            return 1;
    return 0;
}

static void remember_lost(partd_share *sh, const char *id, int attempts)
{
    size_t n = sizeof sh->recently_lost / sizeof sh->recently_lost[0];
    struct lost_claim *l = &sh->recently_lost[sh->lost_next++ % n];
    snprintf(l->id, sizeof l->id, "%s", id);
    l->attempts = attempts;
}

/* Loop thread: what a claim brought. */
static void claim_done(partd_jobs *j, partd_share *sh, task *t)
{
    sh->claiming = 0;
    j->n_decoding -= t->asked;
    while (t->got) {
        claimed *c = t->got;
        t->got = c->next;
        if (lost_before_arriving(sh, &c->row)) {
            partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                          c->row.id);
            partd_jobs_claimed_free(c);
            continue;
        }
        partd_jobs_claimed_decode(j, c);
    }
    /* Fewer than asked, or none left: nothing more to claim until new work
     * is announced (or the poll timer looks again). A failed claim waits
     * for the timer too: the database is not asked again at once. */
    sh->empty = !sh->announced && (t->rc != PARTD_OK || t->n_got < t->asked || t->left == 0);
    sh->announced = 0;
    partd_jobs_maybe_drained(j);
    partd_jobs_share_kick(j);
}

static void on_task_done(uv_async_t *a)
{
    partd_share *sh = a->data;
    partd_jobs *j = sh->j;
    pthread_mutex_lock(&sh->lock);
    task *t = sh->done;
    sh->done = NULL;
    pthread_mutex_unlock(&sh->lock);
    while (t) {
        task *next = t->next;
        if (t->kind == TASK_CLAIM) {
            claim_done(j, sh, t);
        } else if (t->kind == TASK_RENEW) {
            sh->renewing = 0;
            for (size_t i = 0; t->rc == PARTD_OK && i < t->n; i++)
                if (t->lost[i])
                    partd_jobs_share_lost(j, t->ids[i], t->leases[i].attempts);
        } else {
            sh->listening = 0;
            start_listening(j, t->fd);
        }
        task_free(t);
        t = next;
    }
}

void partd_jobs_share_kick(partd_jobs *j)
{
    partd_share *sh = j->share;
    if (!j->share_started || j->draining || j->closing || sh->claiming || sh->empty)
        return;
    uint64_t workers = j->svc->cfg->workers ? j->svc->cfg->workers : 1;
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
    partd_share *sh = j->share;
    sh->empty = 0;
    if (sh->claiming)
        sh->announced = 1; /* the claim out may have looked before it */
    partd_jobs_share_kick(j);
}

void partd_jobs_share_announce(partd_jobs *j)
{
    if (!j->share)
        return;
    /* While the LISTEN connection is up, the job's announcement follows
     * (its insert has committed): claim on that, once, not twice. */
    if (j->listen_poll)
        partd_jobs_share_kick(j);
    else
        new_work(j);
}

/* ---- leases --------------------------------------------------------------- */

/* A later claim of the same job (after `attempts`) stays: it is another
 * replica's, or ours again. */
int partd_jobs_share_lost(partd_jobs *j, const char *id, int attempts)
{
    int decoding = 0;
    for (claimed *c = j->decoding; c; c = c->next)
        if (strcmp(c->row.id, id) == 0 && c->row.attempts == attempts)
            c->lost = decoding = 1;
    pthread_mutex_lock(&j->table_lock);
    job *jb = partd_map_get(&j->table, id);
    pthread_mutex_unlock(&j->table_lock);
    if (!jb || !jb->run || jb->row.attempts != attempts) {
        if (!decoding && j->share)
            remember_lost(j->share, id, attempts);
        return 0;
    }
    run *r = jb->run;
    if (r->end.decided) {
        /* Its end is being written, from copies of the rows (which the
         * write leaves as they are now): the job ends once it is written. */
        jb->lost = 1;
        return 1;
    }
    partd_jobs_detach(r, jb);
    if (r->n_jobs == 0)
        partd_jobs_stop_run(j, r);
    partd_jobs_table_remove(j, jb);
    partd_jobs_set_status(j, jb, PARTD_JOB_CANCELLED);
    partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over); "
                  "stopped", jb->row.id);
    partd_jobs_job_free(jb);
    return 1;
}

/* The leases of every job claimed here (running or decoding), renewed on
 * the store thread; one renewal out at a time. */
static void on_renew(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    partd_share *sh = j->share;
    size_t n = j->n_decoding;
    for (run *r = j->runs; r; r = r->next)
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
    for (run *r = j->runs; r; r = r->next)
        for (job *jb = r->jobs; jb && k < n; jb = jb->run_next, k++) {
            memcpy(tk->ids[k], jb->row.id, sizeof tk->ids[k]);
            tk->leases[k] = (partd_store_lease){tk->ids[k], jb->row.attempts};
        }
    for (claimed *c = j->decoding; c && k < n; c = c->next, k++) {
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
        partd_store_listen_reset(j->svc->store);
        return;
    }
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
    partd_share *sh = j->share;
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

/* ---- life cycle ---------------------------------------------------------- */

static void on_async_closed(uv_handle_t *h);

void partd_jobs_share_start(partd_jobs *j)
{
    if (!j->shared || j->share_started)
        return;
    partd_share *sh = calloc(1, sizeof *sh);
    if (!sh) {
        partd_log_msg("error", "job", "out of memory starting work sharing; this replica "
                      "claims no jobs");
        return;
    }
    sh->j = j;
    pthread_mutex_init(&sh->lock, NULL);
    pthread_cond_init(&sh->cond, NULL);
    uv_async_init(j->loop, &sh->async, on_task_done);
    sh->async.data = sh;
    if (pthread_create(&sh->thread, NULL, store_thread, sh) != 0) {
        partd_log_msg("error", "job", "cannot start the store thread; this replica claims "
                      "no jobs");
        uv_close((uv_handle_t *)&sh->async, on_async_closed);
        return;
    }
    j->share = sh;
    j->share_started = 1;
    partd_jobs_writer_start(j);
    uv_timer_init(j->loop, &j->poll_timer);
    j->poll_timer.data = j;
    uv_timer_init(j->loop, &j->renew_timer);
    j->renew_timer.data = j;
    uint64_t renew = lease_ms(j) / 3 ? lease_ms(j) / 3 : 1;
    uv_timer_start(&j->poll_timer, on_poll, 0, POLL_MS);
    uv_timer_start(&j->renew_timer, on_renew, renew, renew);
    atomic_store(&j->svc->metrics.shared_store, j->svc->store);
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

static void on_async_closed(uv_handle_t *h)
{
    partd_share *sh = h->data;
    pthread_mutex_destroy(&sh->lock);
    pthread_cond_destroy(&sh->cond);
    free(sh);
}

void partd_jobs_share_close(partd_jobs *j)
{
    if (!j->share_started)
        return;
    partd_share *sh = j->share;
    j->closing = 1;
    atomic_store(&j->svc->metrics.shared_store, NULL);
    stop_listening(j);
    uv_close((uv_handle_t *)&j->poll_timer, on_timer_closed);
    uv_close((uv_handle_t *)&j->renew_timer, on_timer_closed);
    /* The store thread ends after the call it is in (bounded by the
     * store's timeouts); what it finished is handled here: jobs it claimed
     * go back to the queue (closing), a LISTEN connection is closed. */
    pthread_mutex_lock(&sh->lock);
    sh->quit = 1;
    pthread_cond_signal(&sh->cond);
    pthread_mutex_unlock(&sh->lock);
    pthread_join(sh->thread, NULL);
    on_task_done(&sh->async);
    while (sh->todo) {
        task *t = sh->todo;
        sh->todo = t->next;
        if (t->kind == TASK_CLAIM)
            j->n_decoding -= t->asked;
        task_free(t);
    }
    /* Ends still being written are written first (runs normally have all
     * ended by now: a drain waits for them). */
    partd_jobs_writer_close(j);
    j->share = NULL;
    uv_close((uv_handle_t *)&sh->async, on_async_closed);
}
