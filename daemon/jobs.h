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
 *
 * On a shared store (PostgreSQL, several replicas) the store is the queue:
 * a submitted job is announced, and whichever replica has a free planner
 * claims it and holds a lease on it while planning; the table holds only
 * the jobs this replica runs, and lookups answer from the store.
 *
 * Implemented by jobs_queue.c (table, messages, drain), jobs_pool.c (runs
 * on the pool, finishing into store and cache), jobs_recover.c (queueing
 * unfinished jobs again at start) and jobs_share.c (claims and leases on a
 * shared store), around jobs_internal.h.
 *
 * Ownership: the engine owns the jobs it holds and the requests handed to
 * partd_jobs_submit; rows copied out (lookup, cancel) belong to the caller.
 *
 * Errors: the daemon's convention: functions return PARTD_OK or a negative
 * PARTD_E* code (lib/partd.h: PARTD_ENOMEM, PARTD_EIO) and write a sentence
 * to an err buffer or a problem where the caller needs the reason. Lookup
 * and cancel also return the store's positive outcomes PARTD_STORE_MISSING
 * (not an unfinished job) and PARTD_STORE_CONFLICT (already finished), which
 * the caller maps to 404 and 409; no reason text is needed for those.
 * Failures on the loop thread, which has no caller to tell, are logged.
 */
#ifndef PARTD_DAEMON_JOBS_H
#define PARTD_DAEMON_JOBS_H

#include <uv.h>

#include "job.h"
#include "model.h"
#include "service.h"

typedef struct partd_jobs partd_jobs;

/* Runs a job may start: a run that never ended (the planner took the process
 * down, or its replica died) is retried at most twice, then the job fails
 * with a problem saying so (partd_jobs_crash_problem). */
#define PARTD_JOBS_MAX_ATTEMPTS 3

/* The problem document (malloc'd JSON, NULL on ENOMEM) of a job whose runs
 * ended `attempts` times without finishing; *status gets its HTTP status. */
char *partd_jobs_crash_problem(int attempts, int *status);

/* Loop thread, before uv_run. on_drained is called on the loop thread once
 * a drain has finished (every run done or left queued). */
partd_jobs *partd_jobs_new(partd_service *svc, uv_loop_t *loop,
                           void (*on_drained)(void *ctx), void *ctx);
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
