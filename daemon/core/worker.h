/*
 * worker.h - a thread of its own beside the libuv loop: it runs the items
 * the loop posts, one at a time and in the order they were posted, and
 * hands each back to the loop thread, in the same order, through a
 * uv_async. A thread, a FIFO queue and a wake-up on the loop.
 *
 * For work that may wait a long time on something outside the process (a
 * database that answers slowly or not at all) and that must wait neither
 * on the loop nor behind the plans on libuv's pool: the job engine's store
 * thread (jobs/jobs_share.c) and end-writer (jobs/jobs_write.c).
 *
 * Items are intrusive, as libuv's requests are: the caller embeds a
 * partd_worker_item in its own struct and gets it back in both callbacks
 * (container_of). The worker never allocates per item, so posting cannot
 * fail; the caller owns the item throughout, and may free it in `done`.
 *
 * Threads: partd_worker_start and partd_worker_close on the loop thread;
 * partd_worker_post and partd_worker_stop on any thread; `work` on the
 * worker's thread, `done` on the loop thread (from the loop, or from
 * partd_worker_close). A `done` may post again.
 *
 * Errors: partd_worker_start returns PARTD_OK, PARTD_ENOMEM, or
 * PARTD_EINTERNAL when the thread or the wake-up cannot be made (partd.h);
 * nothing is left behind on failure. The rest cannot fail.
 */
#ifndef PARTD_DAEMON_WORKER_H
#define PARTD_DAEMON_WORKER_H

#include <stddef.h>
#include <uv.h>

typedef struct partd_worker partd_worker;

typedef struct partd_worker_item {
    struct partd_worker_item *next;  /* the worker's: its queues */
} partd_worker_item;

/* The struct of `type` whose member `field` is the item. */
#define PARTD_WORKER_CONTAINER(item, type, field) \
    ((type *)(void *)((char *)(item) - offsetof(type, field)))

/* On the worker's thread. */
typedef void (*partd_worker_work_cb)(partd_worker_item *item, void *ctx);
/* On the loop thread: status PARTD_OK once `work` ran on the item,
 * PARTD_ECANCELLED when the worker stopped before it ran (it never will). */
typedef void (*partd_worker_done_cb)(partd_worker_item *item, int status, void *ctx);

/* Starts the thread; *out is the worker on PARTD_OK, NULL otherwise. */
int partd_worker_start(partd_worker **out, uv_loop_t *loop, partd_worker_work_cb work,
                       partd_worker_done_cb done, void *ctx);

/* Appends item to the queue and wakes the thread. Not after
 * partd_worker_stop. */
void partd_worker_post(partd_worker *w, partd_worker_item *item);

/* Asks the thread to stop, and returns at once: after the item it is
 * working on when drop_queued, else once every item posted has run. The
 * first call decides; later ones change nothing. */
void partd_worker_stop(partd_worker *w, int drop_queued);

/* Stops the worker as partd_worker_stop(w, 1) unless it was asked to stop
 * already, waits for its thread (which may be in the middle of a `work`),
 * then calls `done` for every item it still holds: those that ran first
 * (PARTD_OK), then those that never will (PARTD_ECANCELLED), each in the
 * order posted. w is freed once the loop has run the close of its uv_async:
 * do not use it after this call. */
void partd_worker_close(partd_worker *w);

#endif
