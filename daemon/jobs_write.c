/*
 * jobs_write.c - on a shared store, the end of each run (its result and its
 * jobs' final rows, one transaction and one round trip: store.h) is written
 * on a writer thread of its own, in the order the runs ended. The loop only
 * decides the end and applies it once written (jobs_pool.c), so it never
 * waits for the database, however slowly it answers; the jobs keep their
 * leases (renewed by jobs_share.c's store thread) until their end is
 * written. Not the store thread: a large result takes a while to write,
 * and lease renewals must not wait behind it.
 *
 * The writer touches only the run's decided end (run.end, r's result) and
 * the store; finished ends come back to the loop through a uv_async.
 * Errors: a write the store refuses is recorded in the run's end (its jobs
 * fail or are let go, as jobs_pool.c decides), never lost silently.
 */
#include "jobs_internal.h"

#include <pthread.h>
#include <stdlib.h>

#include "log.h"
#include "service.h"

typedef struct partd_writer {
    partd_jobs *j;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    run *todo, *todo_tail;     /* loop -> writer, oldest first */
    run *done, *done_tail;     /* writer -> loop, oldest first */
    int quit;                  /* write what is queued, then stop */
    uv_async_t async;
} partd_writer;

static void append(run **head, run **tail, run *r)
{
    r->write_next = NULL;
    if (*tail)
        (*tail)->write_next = r;
    else
        *head = r;
    *tail = r;
}

static void *writer_thread(void *arg)
{
    partd_writer *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->todo && !w->quit)
            pthread_cond_wait(&w->cond, &w->lock);
        run *r = w->todo;
        if (!r)
            break; /* told to stop, and every end handed over is written */
        w->todo = r->write_next;
        if (!w->todo)
            w->todo_tail = NULL;
        pthread_mutex_unlock(&w->lock);
        partd_jobs_end_store(w->j, r);
        atomic_fetch_sub(&w->j->svc->metrics.ends_unwritten, 1);
        pthread_mutex_lock(&w->lock);
        append(&w->done, &w->done_tail, r);
        uv_async_send(&w->async);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Loop thread: applies the ends written so far. */
static void on_written(uv_async_t *a)
{
    partd_writer *w = a->data;
    pthread_mutex_lock(&w->lock);
    run *r = w->done;
    w->done = w->done_tail = NULL;
    pthread_mutex_unlock(&w->lock);
    while (r) {
        run *next = r->write_next;
        partd_jobs_end_written(w->j, r);
        r = next;
    }
}

static void on_closed(uv_handle_t *h)
{
    partd_writer *w = h->data;
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
}

void partd_jobs_writer_start(partd_jobs *j)
{
    partd_writer *w = calloc(1, sizeof *w);
    if (!w) {
        partd_log_msg("warn", "job", "out of memory starting the writer thread; the ends of "
                      "runs are written on the loop");
        return;
    }
    w->j = j;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    uv_async_init(j->loop, &w->async, on_written);
    w->async.data = w;
    if (pthread_create(&w->thread, NULL, writer_thread, w) != 0) {
        partd_log_msg("warn", "job", "cannot start the writer thread; the ends of runs are "
                      "written on the loop");
        uv_close((uv_handle_t *)&w->async, on_closed);
        return;
    }
    j->writer = w;
}

int partd_jobs_write_later(partd_jobs *j, run *r)
{
    partd_writer *w = j->writer;
    /* Without the copied rows only the loop may read the jobs. */
    if (!w || (!r->end.result_only && !r->end.copies))
        return 0;
    atomic_fetch_add(&j->svc->metrics.ends_unwritten, 1);
    pthread_mutex_lock(&w->lock);
    append(&w->todo, &w->todo_tail, r);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return 1;
}

void partd_jobs_writer_close(partd_jobs *j)
{
    partd_writer *w = j->writer;
    if (!w)
        return;
    /* Bounded by the store's timeouts: nothing handed over is dropped. */
    pthread_mutex_lock(&w->lock);
    w->quit = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    j->writer = NULL;
    on_written(&w->async);
    uv_close((uv_handle_t *)&w->async, on_closed);
}
