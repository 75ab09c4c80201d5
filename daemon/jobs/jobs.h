/*
 * jobs.h - the job engine: job table, queue and planner runs on libuv.
 *
 * The libuv loop thread owns the table of unfinished jobs and the runs that
 * plan them. HTTP threads hand new jobs and cancellations over through a
 * mutex-protected message queue and uv_async_send; they read the table under
 * its lock. A run plans one request in uv_queue_work (pool size =
 * --workers); jobs with the same cache_key submitted while a run is queued
 * or running join it instead of planning again. Queued runs are cancelled
 * with uv_cancel, running ones through their partd_cancel flag, which also
 * carries the --job-timeout-ms deadline.
 *
 * Every state change is written to the store before it is visible in the
 * table, and logged. Finished jobs leave the table (the store has them).
 * A change the store refuses (disk full) is not shown: the job reads as
 * stored, so a state shown final stays final after a restart; a final
 * state refused is written again until the store takes it.
 *
 * On a shared store (PostgreSQL, several replicas) the store is the queue:
 * a submitted job is announced, and whichever replica has a free planner
 * claims it and holds a lease on it while planning; the table holds only
 * the jobs this replica runs, and lookups answer from the store.
 *
 * Implemented by these files, each calling only those below it; a file
 * tells those above it what happened through callbacks that jobs.c sets at
 * creation (partd__jobs_hooks: a planner is free, a run's end is decided;
 * a message to the loop carries its own handler), never by calling them.
 * Private to the engine: partd__jobs_* names, declared in jobs_internal.h.
 *
 *   jobs.c          top: this header (create, submit, lookup, cancel, drain,
 *                   close) and the loop's handling of HTTP threads' messages
 *   jobs_recover.c  partd_jobs_recover: at start, the store's unfinished
 *                   jobs queued again
 *   jobs_share.c    shared store: claims, leases, announcements, on a store
 *                   thread (core/worker.h)
 *   jobs_claimed.c  shared store: claimed jobs, their requests decoded on
 *                   the pool
 *   jobs_write.c    shared store: each run's end written on a thread of its
 *                   own (core/worker.h)
 *   jobs_pool.c     runs on libuv's pool: jobs join and leave them, they
 *                   start, they complete
 *   jobs_end.c      a run's end: decided, written to the store, applied to
 *                   the cache and the table
 *   jobs_plan.c     a run's work on a pool thread: plan, render, encode
 *   jobs_unsaved.c  final rows the store refused, written again on a timer
 *   jobs_stored.c   jobs taken from the store: decoded, failed, handed back
 *   jobs_table.c    the jobs and the table of them by id
 *   jobs_queue.c    bottom: the loop's message queue (mutex + uv_async)
 *
 * Who calls whom (-> : calls):
 *   jobs.c         -> jobs_share.c, jobs_write.c, jobs_pool.c, jobs_table.c,
 *                     jobs_queue.c
 *   jobs_recover.c -> jobs_share.c, jobs_pool.c, jobs_stored.c, jobs_table.c
 *   jobs_share.c   -> jobs_claimed.c, jobs_write.c, jobs_pool.c, jobs_stored.c,
 *                     jobs_table.c
 *   jobs_claimed.c -> jobs_pool.c, jobs_stored.c, jobs_table.c
 *   jobs_write.c   -> jobs_pool.c, jobs_end.c
 *   jobs_pool.c    -> jobs_end.c, jobs_plan.c, jobs_unsaved.c, jobs_table.c,
 *                     jobs_queue.c
 *   jobs_end.c     -> jobs_unsaved.c, jobs_table.c
 *   jobs_plan.c    -> jobs_queue.c
 *   jobs_unsaved.c -> jobs_table.c
 *   jobs_stored.c, jobs_table.c, jobs_queue.c -> no other file of the engine
 *
 * Beside the engine, in this folder and used by it: job.h (the job row and
 * its JSON), cache.h (the results' LRU), intake.h (request bodies coming
 * in, and stored ones decoded).
 *
 * Ownership: the engine owns the jobs it holds and the requests handed to
 * partd_jobs_submit; rows copied out (lookup, cancel) belong to the caller.
 *
 * Errors: the daemon's convention: functions return PARTD_OK or a negative
 * PARTD_E* code (partd/partd.h: PARTD_ENOMEM, PARTD_EIO) and write a sentence
 * to an err buffer or a problem where the caller needs the reason. Lookup
 * and cancel also return the store's positive outcomes PARTD_STORE_MISSING
 * (not an unfinished job) and PARTD_STORE_CONFLICT (already finished), which
 * the caller maps to 404 and 409; no reason text is needed for those.
 * Failures on the loop thread, which has no caller to tell, are logged.
 */
#ifndef PARTD_DAEMON_JOBS_H
#define PARTD_DAEMON_JOBS_H

#include <stdint.h>
#include <uv.h>

#include "cache.h"
#include "core/job.h"
#include "core/metrics.h"
#include "partd/decode.h"
#include "partd/model.h"
#include "store/store.h"

typedef struct partd_jobs partd_jobs;

/* What the engine works with, given to partd_jobs_new and copied there.
 * The store, the cache and the metrics are borrowed: they must outlive the
 * engine. The settings are those of `partd serve` (config.h) that the
 * engine reads. */
typedef struct partd_jobs_options {
    partd_store *store;
    partd_cache *cache;              /* results, put here once stored */
    partd_metrics *metrics;          /* updated from any thread (atomics) */
    partd_decode_limits limits;      /* decoding requests taken from the store */
    const char *runner;              /* this replica's name (copied) */
    uint64_t workers;                /* planners (libuv's pool size); 0 = 1 */
    uint64_t queue_max;              /* jobs that may wait (--queue-max) */
    uint64_t job_timeout_ms;         /* a run's deadline; 0 = none */
    uint64_t max_result_bytes;       /* a larger result fails its job (422) */
    uint64_t lease_ms;               /* a claim's lease on a shared store; 0 = 30 s */
    /* Loop thread: a drain has finished (every run done or left queued). */
    void (*on_drained)(void *ctx);
    void *ctx;
} partd_jobs_options;

/* Runs a job may start: a run that never ended (the planner took the process
 * down, or its replica died) is retried at most twice, then the job fails
 * with a problem saying so ("planner-crashed", status 500). */
#define PARTD_JOBS_MAX_ATTEMPTS 3

/* Loop thread, before uv_run. NULL on ENOMEM. */
partd_jobs *partd_jobs_new(uv_loop_t *loop, const partd_jobs_options *opt);
/* After the loop has stopped. */
void partd_jobs_free(partd_jobs *j);

/* Loop thread, before serving: queue again every job the store holds as
 * queued or running. Returns the number of jobs queued again, or a negative
 * PARTD_E* code. */
int partd_jobs_recover(partd_jobs *j);

/* HTTP thread: claims a place in the queue; 0 when --queue-max jobs are
 * already waiting (answer 429). Give it back with partd_jobs_unreserve when
 * the job is not submitted after all. */
int partd_jobs_reserve(partd_jobs *j);
void partd_jobs_unreserve(partd_jobs *j);

/* HTTP thread: hands an accepted job (already committed to the store as
 * queued, with a reserved place) to the loop. Takes ownership of req. On
 * failure (PARTD_ENOMEM, PARTD_EIO when the loop no longer takes jobs) the
 * place is given back and the job stays queued in the store for the next
 * start. */
int partd_jobs_submit(partd_jobs *j, const partd_job_row *row, partd_request *req);

/* HTTP thread: a copy of a job the table holds (unfinished, or finished
 * while the store refused writes; caller clears it), PARTD_STORE_MISSING
 * when the table does not hold it (look in the store). */
int partd_jobs_lookup(partd_jobs *j, const char *id, partd_job_row *out);

/* HTTP thread: cancels an unfinished job. The cancel is written to the
 * store before anything else changes: on a store of its own by the loop,
 * whose answer this thread waits for; on a shared store by this thread
 * (the loop then stops a run of it here, without waiting for it).
 * PARTD_OK with *out the cancelled job, PARTD_STORE_MISSING when the engine
 * does not hold it (also once the loop no longer takes requests: the store
 * alone has it; on a shared store: the store has no such job),
 * PARTD_STORE_CONFLICT when it has finished, PARTD_EIO when the store
 * refused the cancel (the job goes on unchanged). */
int partd_jobs_cancel(partd_jobs *j, const char *id, partd_job_row *out);

/* Loop thread: stop starting jobs; runs get grace_ms to finish, then are
 * stopped and left queued in the store. */
void partd_jobs_drain(partd_jobs *j, uint64_t grace_ms);

/* Loop thread, after on_drained: answers every message still queued and
 * refuses later ones, so no HTTP thread waits on a loop that is gone. */
void partd_jobs_close(partd_jobs *j);

/* Number of jobs waiting (for /readyz). */
int64_t partd_jobs_queued(partd_jobs *j);

#endif
