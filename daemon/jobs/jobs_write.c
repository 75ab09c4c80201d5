/*
 * jobs_write.c - on a shared store, the end of each run (its result and its
 * jobs' final rows, one transaction and one round trip: store.h) is written
 * on a writer thread of its own, in the order the runs ended. The loop only
 * decides the end and applies it once written (jobs_end.c), so it never
 * waits for the database, however slowly it answers; the jobs keep their
 * leases (renewed by jobs_share.c's store thread) until their end is
 * written. Not the store thread: a large result takes a while to write,
 * and lease renewals must not wait behind it.
 *
 * The writer is a partd_worker (core/worker.h): it touches only the run's
 * decided end (run.end, r's result) and the store, and hands each end back
 * to the loop once written.
 * Errors: a write the store refuses is recorded in the run's end (its jobs
 * fail or are let go, as jobs_end.c decides), never lost silently.
 */
#include "jobs_internal.h"

#include <stdlib.h>

#include "core/log.h"
#include "core/worker.h"
#include "partd/partd.h"

/* Writer thread. */
static void write_end(partd_worker_item *item, void *ctx)
{
    partd_jobs *j = ctx;
    partd__jobs_end_store(j, PARTD_WORKER_CONTAINER(item, partd__jobs_run, write_link));
    atomic_fetch_sub(&j->opt.metrics->ends_unwritten, 1);
}

/* Loop thread: applies an end once written. The writer finishes its queue
 * before it stops, so an end it did not write is one handed over while it
 * stopped: written here, not dropped. */
static void end_written(partd_worker_item *item, int status, void *ctx)
{
    partd_jobs *j = ctx;
    partd__jobs_run *r = PARTD_WORKER_CONTAINER(item, partd__jobs_run, write_link);
    if (status != PARTD_OK)
        write_end(item, ctx);
    partd__jobs_end_written(j, r);
}

void partd__jobs_writer_start(partd_jobs *j)
{
    int rc = partd_worker_start(&j->writer, j->loop, write_end, end_written, j);
    if (rc == PARTD_ENOMEM)
        partd_log_msg("warn", "job", "out of memory starting the writer thread; the ends of "
                      "runs are written on the loop");
    else if (rc != PARTD_OK)
        partd_log_msg("warn", "job", "cannot start the writer thread; the ends of runs are "
                      "written on the loop");
}

int partd__jobs_write_later(partd_jobs *j, partd__jobs_run *r)
{
    /* Without the copied rows only the loop may read the jobs. */
    if (!j->writer || (!r->end.result_only && !r->end.copies))
        return 0;
    atomic_fetch_add(&j->opt.metrics->ends_unwritten, 1);
    partd_worker_post(j->writer, &r->write_link);
    return 1;
}

void partd__jobs_writer_close(partd_jobs *j)
{
    if (!j->writer)
        return;
    /* Bounded by the store's timeouts: nothing handed over is dropped. */
    partd_worker_stop(j->writer, 0);
    partd_worker_close(j->writer);
    j->writer = NULL;
}
