/*
 * jobs_internal.h - the job engine's shared internal types; private to
 * the jobs_*.c units (everyone else uses jobs.h).
 *
 * The engine is these units around one struct partd_jobs:
 *   jobs_queue.c    the job table and the message queue: submit, lookup and
 *                   cancel from HTTP threads (mutex + uv_async_send), the
 *                   loop side that handles the messages, drain and close.
 *   jobs_pool.c     runs on libuv's pool: plan_work on a pool thread,
 *                   after_plan on the loop thread, finishing jobs into the
 *                   store and the cache, retrying store writes that failed.
 *   jobs_recover.c  queueing again, at start, the jobs the store holds as
 *                   unfinished; decoding stored requests and failing jobs
 *                   that cannot run (recovery and claims alike).
 *   jobs_share.c    on a shared store (replicas): claiming jobs from the
 *                   store, renewing their leases (both on its own store
 *                   thread), waking on announcements.
 *   jobs_claimed.c  on a shared store: the jobs claimed here, their
 *                   requests decoded on the pool before they run.
 *   jobs_write.c    on a shared store: the end of each run written on a
 *                   writer thread of its own.
 *                   Then the store is the queue: a submitted job is only
 *                   announced, and runs here once claimed (by any replica);
 *                   the table holds only the jobs this replica runs.
 *
 * Threads:
 *   HTTP threads  push messages (submit, cancel) and read the table under
 *                 table_lock.
 *   loop thread   pops messages, owns runs, writes the table under
 *                 table_lock, writes the store, calls uv_queue_work/uv_cancel.
 *   pool threads  plan one run each (plan_work); they touch only their run
 *                 and post a "started" message.
 *   writer thread (shared store) writes a run's end as the loop decided it
 *                 (run.end); it touches only that and the store.
 *
 * Ownership: the table owns its jobs (freed with partd_jobs_job_free when
 * they leave it); a run owns its request, result forms and problem; the
 * message queue owns submit and cancel messages (the started message is
 * embedded in its run).
 *
 * Errors: the daemon's convention: functions return PARTD_OK or a negative
 * PARTD_E* code (lib/partd.h), or a pointer that is NULL on failure; the
 * loop-thread functions below cannot report to a caller and log what went
 * wrong instead (a job they cannot queue stays queued in the store for the
 * next start).
 */
#ifndef PARTD_DAEMON_JOBS_INTERNAL_H
#define PARTD_DAEMON_JOBS_INTERNAL_H

#include <pthread.h>

#include "cancel.h"
#include "jobs.h"
#include "problem.h"

typedef struct run run;
struct claimed;
struct partd_writer;
struct partd_share;

typedef struct job {
    partd_job_row row;         /* status and times: written under table_lock */
    run *run;
    struct job *run_next;
    struct job *unsaved_next;  /* finished, but the store refused the write */
    int lost;                  /* shared store: the claim ended while its
                                * run's end was being written */
} job;

enum msg_kind { MSG_SUBMIT, MSG_CANCEL, MSG_STARTED, MSG_CANCELLED };

typedef struct cancel_reply {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int rc;
    partd_job_row row;
} cancel_reply;

typedef struct msg {
    enum msg_kind kind;
    struct msg *next;
    job *job;                  /* SUBMIT */
    partd_request *req;        /* SUBMIT */
    char id[PARTD_ID_LEN + 1]; /* CANCEL, CANCELLED */
    cancel_reply *reply;       /* CANCEL */
    int attempts;              /* CANCELLED: the claim the cancel ended */
    run *run;                  /* STARTED */
} msg;

struct run {
    uv_work_t work;
    partd_jobs *owner;
    partd_request *req;
    partd_cancel cancel;
    char cache_key[72];
    job *jobs;                 /* attached jobs */
    unsigned n_jobs;
    int started;               /* loop side: the started message was handled */
    /* Set by the loop once the run's jobs are durably marked running (their
     * attempt counted); the pool thread waits for it before planning, so a
     * plan that takes the process down is always counted. */
    pthread_mutex_t ack_lock;
    pthread_cond_t ack_cond;
    int acked;
    int abandoned;             /* stopped by a shutdown: leave jobs queued */
    int keyed;                 /* still in runs_by_key */
    run *prev, *next;          /* all live runs */
    msg started_msg;           /* preallocated so the pool thread never mallocs it */
    /* Written by the pool thread, read by the loop after completion. */
    int64_t start_ms, start_ns, end_ns;
    int rc;
    /* The result document and its coded forms, made on the worker thread. */
    partd_blob forms[PARTD_CODINGS];
    char etag[72];
    char *summary;
    partd_problem problem;
    /* How the run ends: decided on the loop once planning is over, written
     * to the store there or on the writer thread, then applied on the loop
     * (jobs_pool.c). The rows are copies of the jobs' rows taken at the
     * decision, so the writer never reads a job the loop may free. */
    struct run_end {
        int result_only;       /* no job waits: only the result is kept */
        partd_job_status status;
        char *error;           /* problem document when failed (owned) */
        int error_status;
        int64_t now;
        partd_job_row *copies; /* the rows written; NULL: each job's own */
        const partd_job_row **rows;
        size_t n_rows;
        int stored;            /* the store took it */
        int decided;           /* the rows above are being written */
    } end;
    run *write_next;           /* the writer's queues */
};

struct partd_jobs {
    partd_service *svc;
    uv_loop_t *loop;
    uv_async_t wakeup;
    uv_timer_t grace;
    uv_timer_t retry;          /* store writes that failed */
    job *unsaved;
    void (*on_drained)(void *ctx);
    void *drained_ctx;

    pthread_mutex_t queue_lock;
    msg *head, *tail;
    int closed;                /* no more messages accepted */

    pthread_mutex_t table_lock;
    partd_map table;           /* id -> job (unfinished jobs) */

    partd_map runs_by_key;     /* cache_key -> run (loop thread only) */
    run *runs;                 /* every live run (loop thread only) */
    unsigned n_runs;
    int draining;
    int grace_over;            /* a drain's grace period has run out */
    int drained_called;

    /* Shared store (jobs_share.c; loop thread only). */
    int shared;                /* the store is shared (set at creation) */
    int share_started;         /* timers and announcements are set up */
    int closing;
    uv_timer_t poll_timer;     /* claims without an announcement */
    uv_timer_t renew_timer;    /* leases of the jobs this replica runs */
    uv_poll_t *listen_poll;    /* the store's announcement socket, or NULL */
    struct claimed *decoding;  /* claimed jobs whose requests the pool decodes */
    unsigned n_decoding;       /* those, and the jobs a claim out asks for */
    struct partd_share *share; /* the store thread and its tasks */
    struct partd_writer *writer; /* the writer thread (jobs_write.c) */
};

/* ---- jobs_queue.c: table and messages ----------------------------------- */

/* Logs a job's state (and one extra number when extra_key is not NULL). */
void partd_jobs_log(const job *jb, const char *extra_key, double extra);
/* Moves the job to status, keeping the queued/running/finished gauges. */
void partd_jobs_set_status(partd_jobs *j, job *jb, partd_job_status status);
void partd_jobs_table_remove(partd_jobs *j, job *jb);
/* A queued job with a copy of row (without summary and error); NULL on
 * ENOMEM. */
job *partd_jobs_job_new(const partd_job_row *row);
void partd_jobs_job_free(job *jb);
/* Appends m to the message queue; the caller holds queue_lock. */
void partd_jobs_post(partd_jobs *j, msg *m);
/* Loop thread: handles every queued message. */
void partd_jobs_process_messages(partd_jobs *j);
/* Loop thread: puts a job (counted in jobs_queued) in the table and in a
 * run, or finishes it from the cache. Takes ownership of jb and req. */
void partd_jobs_enqueue(partd_jobs *j, job *jb, partd_request *req);
/* Loop thread: calls on_drained once a drain has no runs left. */
void partd_jobs_maybe_drained(partd_jobs *j);

/* ---- jobs_pool.c: runs on the pool -------------------------------------- */

/* Loop thread: a run planning req on the pool, registered under its
 * cache_key; NULL (req still the caller's) when it cannot be queued. */
run *partd_jobs_run_new(partd_jobs *j, partd_request *req);
void partd_jobs_attach(run *r, job *jb);
void partd_jobs_detach(run *r, job *jb);
/* Stops a run nobody waits for any more. */
void partd_jobs_stop_run(partd_jobs *j, run *r);
/* Later identical jobs no longer join r. */
void partd_jobs_unkey(partd_jobs *j, run *r);
/* The run started planning: its jobs turn running. */
void partd_jobs_on_started(partd_jobs *j, run *r);
void partd_jobs_mark_running(partd_jobs *j, job *jb, run *r);
/* Any thread: writes r's end (r->end, decided on the loop) to the store. */
void partd_jobs_end_store(partd_jobs *j, run *r);
/* Loop thread: r's end is written (or refused): the cache, the table and
 * the metrics follow, and the run is freed; its planner is free. */
void partd_jobs_end_written(partd_jobs *j, run *r);

/* ---- jobs_recover.c: jobs taken from the store ---------------------------- */

/* Any thread: decodes a request as stored with job row; on failure
 * *problem says why (a 422 when the decoder did not). */
int partd_jobs_decode_stored(const partd_jobs *j, const char *body, size_t len,
                             partd_request **req, partd_problem *problem);
/* Any thread: fails a job taken from the store that does not run (its
 * request no longer decodes, or its runs ended too often) with problem
 * document `error` (JSON; NULL when memory ran out) of HTTP status
 * `status`, and counts it failed; the caller logs why. On a shared store
 * the write is made only while the job is still this claim. */
void partd_jobs_fail_unrun(partd_jobs *j, const partd_job_row *row, char *error, int status);

/* ---- jobs_write.c: the writer thread (shared store) ---------------------- */

/* Loop thread, at start on a shared store. Without it (no memory, no
 * thread) ends are written on the loop. */
void partd_jobs_writer_start(partd_jobs *j);
/* Loop thread: queues r's end for the writer (1; partd_jobs_end_written
 * follows on the loop), or 0 when there is no writer or r's rows were not
 * copied (the caller writes it itself). */
int partd_jobs_write_later(partd_jobs *j, run *r);
/* Loop thread: the writer writes what it holds and stops; those ends are
 * applied here. */
void partd_jobs_writer_close(partd_jobs *j);

/* ---- jobs_claimed.c: claimed jobs (shared store) -------------------------- */

/* A job claimed here whose request a pool thread decodes before it runs. */
typedef struct claimed {
    uv_work_t work;
    partd_jobs *j;
    partd_job_row row;       /* without summary and error */
    char *body;              /* the stored request; freed once decoded */
    size_t len;
    partd_request *req;
    partd_problem problem;
    int rc;
    int lost;                /* cancelled or taken over meanwhile */
    struct claimed *next;
} claimed;

/* Any thread: a claim of row with a copy of its stored request body;
 * NULL on ENOMEM. */
claimed *partd_jobs_claimed_new(partd_jobs *j, const partd_job_row *row, const char *body,
                                size_t len);
void partd_jobs_claimed_free(claimed *c);
/* Loop thread: decodes c's request on the pool, then queues the job here
 * (or gives it back, or fails it). Takes ownership of c. */
void partd_jobs_claimed_decode(partd_jobs *j, claimed *c);
/* Any thread: hands a claim back (queued, the attempt not counted). */
void partd_jobs_give_back(partd_jobs *j, const partd_job_row *row);

/* ---- jobs_share.c: a shared store ---------------------------------------- */

/* At start (recovery), when the store is shared: timers and announcements. */
void partd_jobs_share_start(partd_jobs *j);
/* Claims as many jobs as there are free planners (no-op unless shared),
 * unless the last claim found the queue empty. */
void partd_jobs_share_kick(partd_jobs *j);
/* A job was submitted here: claim it (when the LISTEN connection is down;
 * else on its announcement, which follows). */
void partd_jobs_share_announce(partd_jobs *j);
/* A job of ours whose claim `attempts` is no longer ours (cancelled, or
 * taken over after our lease ran out): its run here stops and the job is
 * forgotten. Returns 1 when it was in the table (then it counts as
 * cancelled here), 0 when no run of it was here. */
int partd_jobs_share_lost(partd_jobs *j, const char *id, int attempts);
/* A drain: no more claims. */
void partd_jobs_share_drain(partd_jobs *j);
void partd_jobs_share_close(partd_jobs *j);

#endif
