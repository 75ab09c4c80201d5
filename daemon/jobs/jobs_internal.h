/*
 * jobs_internal.h - the job engine's types and the functions its files
 * share; private to daemon/jobs/jobs*.c (everyone else uses jobs.h).
 *
 * The engine is the files jobs.h lists (with who calls whom) around one
 * struct partd_jobs. Each calls only those below it; a file tells those
 * above it what happened through the callbacks of partd__jobs_hooks, which
 * jobs.c sets at creation, and a message to the loop carries its handler.
 * Everything declared here is partd__jobs_*: no file outside daemon/jobs/
 * uses it. The sections below follow the files from the bottom up.
 *
 * Threads:
 *   HTTP threads  send messages (submit, cancel) and read the table under
 *                 table_lock.
 *   loop thread   handles messages, owns runs, writes the table under
 *                 table_lock, writes the store, calls uv_queue_work/uv_cancel.
 *   pool threads  plan one run each (plan_work); they touch only their run
 *                 and send a "started" message.
 *   writer thread (shared store) writes a run's end as the loop decided it
 *                 (run.end); it touches only that and the store.
 *   store thread  (shared store) claims and renews leases; it touches only
 *                 the store, the log and atomic metrics.
 *
 * Ownership: the table owns its jobs (freed with partd__jobs_job_free when
 * they leave it); a run owns its request, result forms and problem; the
 * message queue owns submit and cancel messages (the started message is
 * embedded in its run).
 *
 * Errors: the daemon's convention: functions return PARTD_OK or a negative
 * PARTD_E* code (partd/partd.h), or a pointer that is NULL on failure; the
 * loop-thread functions below cannot report to a caller and log what went
 * wrong instead (a job they cannot queue stays queued in the store for the
 * next start).
 */
#ifndef PARTD_DAEMON_JOBS_INTERNAL_H
#define PARTD_DAEMON_JOBS_INTERNAL_H

#include <pthread.h>

#include "core/map.h"
#include "core/worker.h"
#include "jobs.h"
#include "partd/cancel.h"
#include "partd/problem.h"

typedef struct partd__jobs_run partd__jobs_run;
struct partd__jobs_claimed;
struct partd__jobs_share;

typedef struct partd__jobs_job {
    /* What lookups show: the job as the store holds it (a state reaches
     * the row only once written). Status and times: written under
     * table_lock. */
    partd_job_row row;
    partd__jobs_run *run;      /* NULL once its run ended (unsaved) */
    struct partd__jobs_job *run_next;
    /* Finished, but the store refused the final row: `end` (owning its
     * summary and error) waits for a retry, and row stays as stored. */
    struct partd__jobs_job *unsaved_next;
    partd_job_row end;
    int lost;                  /* shared store: the claim ended while its
                                * run's end was being written */
} partd__jobs_job;

typedef struct partd__jobs_cancel_reply {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int rc;
    partd_job_row row;
} partd__jobs_cancel_reply;

/* A message to the loop thread (jobs_queue.c). It carries its handler, as
 * a libuv request carries its callback: the queue knows no kinds. */
typedef struct partd__jobs_msg {
    /* Loop thread: does what the message asks; frees it unless it is
     * embedded in something else (a run's started message). */
    void (*handle)(partd_jobs *j, struct partd__jobs_msg *m);
    struct partd__jobs_msg *next;
    partd__jobs_job *job;      /* submit */
    partd_request *req;        /* submit */
    char id[PARTD_ID_LEN + 1]; /* cancel, cancelled */
    partd__jobs_cancel_reply *reply; /* cancel */
    int attempts;              /* cancelled: the claim the cancel ended */
    partd__jobs_run *run;      /* started */
} partd__jobs_msg;

struct partd__jobs_run {
    uv_work_t work;
    partd_jobs *owner;
    partd_request *req;
    partd_cancel cancel;
    char cache_key[72];
    partd__jobs_job *jobs;     /* attached jobs */
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
    partd__jobs_run *prev, *next; /* all live runs */
    partd__jobs_msg started_msg; /* preallocated so the pool thread never mallocs it */
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
     * (jobs_end.c). The rows are copies of the jobs' rows taken at the
     * decision, so the writer never reads a job the loop may free. */
    struct partd__jobs_run_end {
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
    partd_worker_item write_link; /* the writer's queue (jobs_write.c) */
};

/* What a part of the engine tells the parts above it, never by calling
 * them (libuv's after_work_cb, the store's ops table): set by
 * partd_jobs_new (jobs.c) before anything runs. */
typedef struct partd__jobs_hooks {
    /* Loop thread: a planner is free: a run ended (jobs_pool.c), a claimed
     * job's decode did (jobs_claimed.c), or a claim came back
     * (jobs_share.c). jobs.c: a drain may be over, and on a shared store
     * another job may be claimed. */
    void (*planner_free)(partd_jobs *j);
    /* Loop thread: how r ends is decided (r->end). 1 when it is written
     * elsewhere (jobs_write.c), partd__jobs_end_written following on the
     * loop; 0 when the pool writes it at once. */
    int (*end_decided)(partd_jobs *j, partd__jobs_run *r);
} partd__jobs_hooks;

struct partd_jobs {
    partd_jobs_options opt;    /* as given to partd_jobs_new, but runner */
    char runner[PARTD_RUNNER_LEN + 1];
    uv_loop_t *loop;
    partd__jobs_hooks on;

    /* jobs_queue.c */
    pthread_mutex_t queue_lock;
    uv_async_t wakeup;
    partd__jobs_msg *head, *tail;
    int closed;                /* no more messages accepted */

    /* jobs_table.c */
    pthread_mutex_t table_lock;
    partd_map table;           /* id -> job (unfinished jobs) */

    /* jobs_pool.c (loop thread only) */
    partd_map runs_by_key;     /* cache_key -> run */
    partd__jobs_run *runs;     /* every live run */
    unsigned n_runs;

    /* jobs_unsaved.c (loop thread only) */
    uv_timer_t retry;          /* store writes that failed */
    partd__jobs_job *unsaved;

    /* jobs.c (loop thread only) */
    uv_timer_t grace;
    int draining;
    int grace_over;            /* a drain's grace period has run out */
    int drained_called;

    /* Shared store (jobs_share.c, jobs_claimed.c, jobs_write.c; loop
     * thread only). */
    int shared;                /* the store is shared (set at creation) */
    int share_started;         /* timers and announcements are set up */
    int closing;
    uv_timer_t poll_timer;     /* claims without an announcement */
    uv_timer_t renew_timer;    /* leases of the jobs this replica runs */
    uv_poll_t *listen_poll;    /* the store's announcement socket, or NULL */
    struct partd__jobs_claimed *decoding; /* claimed jobs whose requests the pool decodes */
    partd_cancel decode_stop;  /* raised when a drain's grace runs out: the
                                * pool's decodes of stored requests stop */
    unsigned n_decoding;       /* those, and the jobs a claim out asks for */
    struct partd__jobs_share *share; /* the store thread and its tasks */
    partd_worker *writer;      /* the writer thread (jobs_write.c), or NULL */
};

/* ---- jobs_queue.c: the loop's message queue ----------------------------- */

void partd__jobs_queue_init(partd_jobs *j);
void partd__jobs_queue_free(partd_jobs *j);
/* Any thread: appends m (its handler set) and wakes the loop; PARTD_EIO,
 * m still the caller's, once the queue is closed. */
int partd__jobs_send(partd_jobs *j, partd__jobs_msg *m);
/* Loop thread: handles every queued message, oldest first. */
void partd__jobs_process_messages(partd_jobs *j);
/* Loop thread: refuses later messages, handles those queued. */
void partd__jobs_queue_close(partd_jobs *j);

/* ---- jobs_table.c: jobs and the table ----------------------------------- */

void partd__jobs_table_init(partd_jobs *j);
void partd__jobs_table_free(partd_jobs *j);
/* A queued job with a copy of row (without summary and error); NULL on
 * ENOMEM. */
partd__jobs_job *partd__jobs_job_new(const partd_job_row *row);
void partd__jobs_job_free(partd__jobs_job *jb);
/* Logs a job's state (and one extra number when extra_key is not NULL). */
void partd__jobs_log(const partd__jobs_job *jb, const char *extra_key, double extra);
/* Moves the job to status, keeping the queued/running/finished gauges. */
void partd__jobs_set_status(partd_jobs *j, partd__jobs_job *jb, partd_job_status status);
/* PARTD_OK or PARTD_ENOMEM. */
int partd__jobs_table_put(partd_jobs *j, partd__jobs_job *jb);
/* The job of that id, or NULL. */
partd__jobs_job *partd__jobs_table_get(partd_jobs *j, const char *id);
void partd__jobs_table_remove(partd_jobs *j, partd__jobs_job *jb);

/* ---- jobs_stored.c: jobs taken from the store --------------------------- */

/* Any thread: decodes a request as stored with job row; on failure
 * *problem says why (a 422 when the decoder did not). PARTD_ECANCELLED,
 * no problem, when the engine's decode_stop was raised meanwhile. */
int partd__jobs_decode_stored(const partd_jobs *j, const char *body, size_t len,
                              partd_request **req, partd_problem *problem);
/* Any thread: fails a job taken from the store that does not run (its
 * request no longer decodes, or its runs ended too often) with problem p
 * (without its text when memory runs out), and counts it failed; the
 * caller logs why. On a shared store the write is made only while the job
 * is still this claim. */
void partd__jobs_fail_unrun(partd_jobs *j, const partd_job_row *row, const partd_problem *p);
/* Any thread: fails a job whose runs ended row->attempts times without
 * finishing (PARTD_JOBS_MAX_ATTEMPTS) with a "planner-crashed" problem. */
void partd__jobs_fail_crashed(partd_jobs *j, const partd_job_row *row);
/* Any thread: hands a claim back (queued, the attempt not counted). */
void partd__jobs_give_back(partd_jobs *j, const partd_job_row *row);

/* ---- jobs_unsaved.c: final rows the store refused, written again ------- */

void partd__jobs_unsaved_init(partd_jobs *j);
void partd__jobs_unsaved_close(partd_jobs *j);
/* The jobs still waiting are freed (the store has them unfinished). */
void partd__jobs_unsaved_free(partd_jobs *j);
/* Loop thread: jb (its final row in jb->end, still in the table) waits for
 * the store; the retry timer runs until every such row is written. */
void partd__jobs_unsaved_add(partd_jobs *j, partd__jobs_job *jb);
/* Loop thread: jb no longer waits (it is cancelled instead). */
void partd__jobs_unsaved_forget(partd_jobs *j, partd__jobs_job *jb);

/* ---- jobs_end.c: a run's end decided, written, applied ------------------ */

/* Loop thread: how r ends (r->end), once planning is over; the rows of
 * its jobs are copied for the write. Returns whether there is anything to
 * write: the jobs' final rows, or only the result of a plan every job of
 * which was cancelled meanwhile (kept for the cache). */
int partd__jobs_end_decide(partd_jobs *j, partd__jobs_run *r);
/* Any thread: writes r's end (r->end, decided on the loop) to the store;
 * when the store refuses a computed plan, its jobs fail with a problem
 * that says so (and that is written instead). */
void partd__jobs_end_store(partd_jobs *j, partd__jobs_run *r);
/* Loop thread: r's jobs after their end was written (or refused): the
 * cache, the table and the metrics; the jobs leave r. */
void partd__jobs_end_apply(partd_jobs *j, partd__jobs_run *r);

/* ---- jobs_plan.c: a run's work on a pool thread ------------------------- */

/* Pool thread (uv_work_cb; w->data is the run): plans, renders, hashes and
 * encodes; the outcome is left in the run. */
void partd__jobs_plan_work(uv_work_t *w);

/* ---- jobs_pool.c: runs on the pool -------------------------------------- */

void partd__jobs_pool_init(partd_jobs *j);
void partd__jobs_pool_close(partd_jobs *j);
void partd__jobs_pool_free(partd_jobs *j);
/* Loop thread: puts a job (counted in jobs_queued) in the table and in a
 * run, or finishes it from the cache. Takes ownership of jb and req. */
void partd__jobs_enqueue(partd_jobs *j, partd__jobs_job *jb, partd_request *req);
/* Loop thread: jb leaves its run (a run no job waits for any more is
 * stopped), or, when its run ended but the store refused its final row,
 * the retry of that row. */
void partd__jobs_leave_run(partd_jobs *j, partd__jobs_job *jb);
/* Later identical jobs no longer join r. */
void partd__jobs_unkey(partd_jobs *j, partd__jobs_run *r);
/* Loop thread: r's end is written (or refused): the cache, the table and
 * the metrics follow, and the run is freed; its planner is free. */
void partd__jobs_end_written(partd_jobs *j, partd__jobs_run *r);

/* ---- jobs_write.c: the writer thread (shared store) --------------------- */

/* Loop thread, at start on a shared store. Without it (no memory, no
 * thread) ends are written on the loop. */
void partd__jobs_writer_start(partd_jobs *j);
/* Loop thread: queues r's end for the writer (1; partd__jobs_end_written
 * follows on the loop), or 0 when there is no writer or r's rows were not
 * copied (the caller writes it itself). */
int partd__jobs_write_later(partd_jobs *j, partd__jobs_run *r);
/* Loop thread: the writer writes what it holds and stops; those ends are
 * applied here. */
void partd__jobs_writer_close(partd_jobs *j);

/* ---- jobs_claimed.c: claimed jobs (shared store) ------------------------ */

/* A job claimed here whose request a pool thread decodes before it runs. */
typedef struct partd__jobs_claimed {
    uv_work_t work;
    partd_jobs *j;
    partd_job_row row;       /* without summary and error */
    char *body;              /* the stored request; freed once decoded */
    size_t len;
    partd_request *req;
    partd_problem problem;
    int rc;
    int lost;                /* cancelled or taken over meanwhile */
    struct partd__jobs_claimed *next;
} partd__jobs_claimed;

/* Any thread: a claim of row with a copy of its stored request body;
 * NULL on ENOMEM. */
partd__jobs_claimed *partd__jobs_claimed_new(partd_jobs *j, const partd_job_row *row,
                                             const char *body, size_t len);
void partd__jobs_claimed_free(partd__jobs_claimed *c);
/* Loop thread: decodes c's request on the pool, then queues the job here
 * (or gives it back, or fails it). Takes ownership of c. */
void partd__jobs_claimed_decode(partd_jobs *j, partd__jobs_claimed *c);

/* ---- jobs_share.c: a shared store --------------------------------------- */

/* At start (recovery), when the store is shared: timers and announcements. */
void partd__jobs_share_start(partd_jobs *j);
/* Claims as many jobs as there are free planners (no-op unless shared),
 * unless the last claim found the queue empty. */
void partd__jobs_share_kick(partd_jobs *j);
/* A job was submitted here: claim it (when the LISTEN connection is down;
 * else on its announcement, which follows). */
void partd__jobs_share_announce(partd_jobs *j);
/* A job of ours whose claim `attempts` is no longer ours (cancelled, or
 * taken over after our lease ran out): its run here stops and the job is
 * forgotten. Returns 1 when it was in the table (then it counts as
 * cancelled here), 0 when no run of it was here. */
int partd__jobs_share_lost(partd_jobs *j, const char *id, int attempts);
/* A drain: no more claims. */
void partd__jobs_share_drain(partd_jobs *j);
void partd__jobs_share_close(partd_jobs *j);

#endif
