/*
 * worker.c - a thread, a FIFO queue and a uv_async wake-up; see worker.h.
 *
 * Two queues under one mutex: `todo` (loop -> thread) and `done` (thread ->
 * loop), both oldest first. The thread sleeps on a condition variable while
 * there is nothing to do; the loop is woken by uv_async_send, which libuv
 * coalesces, so the loop side always takes the whole `done` queue.
 */
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>

#include "partd/partd.h"

typedef struct partd_worker_queue {
    partd_worker_item *head, *tail;
} partd_worker_queue;

struct partd_worker {
    partd_worker_work_cb work;
    partd_worker_done_cb done_cb;
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    partd_worker_queue todo;
    partd_worker_queue done;
    int stopping;
    int drop_queued;
    uv_async_t async;
};

static void push(partd_worker_queue *q, partd_worker_item *item)
{
    item->next = NULL;
    if (q->tail)
        q->tail->next = item;
    else
        q->head = item;
    q->tail = item;
}

/* Empties q; returns what it held, oldest first. */
static partd_worker_item *take_all(partd_worker_queue *q)
{
    partd_worker_item *all = q->head;
    q->head = q->tail = NULL;
    return all;
}

static void *worker_main(void *arg)
{
    partd_worker *w = arg;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->todo.head && !w->stopping)
            pthread_cond_wait(&w->cond, &w->lock);
        if (!w->todo.head || (w->stopping && w->drop_queued))
            break;
        partd_worker_item *item = w->todo.head;
        w->todo.head = item->next;
        if (!w->todo.head)
            w->todo.tail = NULL;
        pthread_mutex_unlock(&w->lock);
        w->work(item, w->ctx);
        pthread_mutex_lock(&w->lock);
        push(&w->done, item);
        uv_async_send(&w->async);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Loop thread: calls done for each item of the list. */
static void hand_back(partd_worker *w, partd_worker_item *item, int status)
{
    while (item) {
        partd_worker_item *next = item->next;
        w->done_cb(item, status, w->ctx);
        item = next;
    }
}

static void on_wakeup(uv_async_t *a)
{
    partd_worker *w = a->data;
    pthread_mutex_lock(&w->lock);
    partd_worker_item *done = take_all(&w->done);
    pthread_mutex_unlock(&w->lock);
    hand_back(w, done, PARTD_OK);
}

static void worker_free(partd_worker *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

static void on_closed(uv_handle_t *h)
{
    worker_free(h->data);
}

int partd_worker_start(partd_worker **out, uv_loop_t *loop, partd_worker_work_cb work,
                       partd_worker_done_cb done, void *ctx)
{
    *out = NULL;
    partd_worker *w = calloc(1, sizeof *w);
    if (!w)
        return PARTD_ENOMEM;
    w->work = work;
    w->done_cb = done;
    w->ctx = ctx;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    /* The thread sends no wake-up before an item is posted, and nothing is
     * posted before this returns: the uv_async can follow the thread, and
     * each failure is undone at once. */
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        worker_free(w);
        return PARTD_EINTERNAL;
    }
    if (uv_async_init(loop, &w->async, on_wakeup) != 0) {
        partd_worker_stop(w, 1);
        pthread_join(w->thread, NULL);
        worker_free(w);
        return PARTD_EINTERNAL;
    }
    w->async.data = w;
    *out = w;
    return PARTD_OK;
}

void partd_worker_post(partd_worker *w, partd_worker_item *item)
{
    pthread_mutex_lock(&w->lock);
    push(&w->todo, item);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void partd_worker_stop(partd_worker *w, int drop_queued)
{
    pthread_mutex_lock(&w->lock);
    if (!w->stopping) {
        w->stopping = 1;
        w->drop_queued = drop_queued;
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->lock);
}

void partd_worker_close(partd_worker *w)
{
    partd_worker_stop(w, 1);
    pthread_join(w->thread, NULL);
    /* The thread is gone; a `done` that posts again only adds to `todo`,
     * which is handed back in the next round. */
    for (;;) {
        pthread_mutex_lock(&w->lock);
        partd_worker_item *done = take_all(&w->done);
        partd_worker_item *dropped = take_all(&w->todo);
        pthread_mutex_unlock(&w->lock);
        if (!done && !dropped)
            break;
        hand_back(w, done, PARTD_OK);
        hand_back(w, dropped, PARTD_ECANCELLED);
    }
    uv_close((uv_handle_t *)&w->async, on_closed);
}
