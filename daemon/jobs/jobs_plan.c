/*
 * jobs_plan.c - a run's work on a pool thread of libuv: it tells the loop
 * it has started and waits (bounded) until the loop has durably marked its
 * jobs running, then plans the request, renders the result document under
 * the job's deadline, cancel flag and size limit, hashes it (etag) and
 * encodes its compressed forms. It touches only its run, and sends the
 * run's "started" message (jobs_queue.c).
 *
 * Errors: none returned: the outcome is left in the run (r->rc, a PARTD_E*
 * code, and r->problem where planning or the size limit says why), which
 * the loop reads after completion (jobs_pool.c, jobs_end.c). A failed
 * compression is logged; the result is then served uncompressed only.
 */
#define _GNU_SOURCE
#include "jobs_internal.h"

#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/time.h"
#include "partd/clock.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"

static void result_too_large(partd_problem *p, uint64_t max)
{
    partd_problem_set(p, 422, "result-too-large", "Result too large",
                      "the result document is larger than the server's limit "
                      "(--max-result-bytes = %llu bytes); ask for less detail with "
                      "options.result.detail: \"summary\"",
                      (unsigned long long)max);
}

/* Planner threads run at a lower priority so that the HTTP threads (health
 * checks, polls) stay responsive while every worker is busy. */
static void lower_thread_priority(void)
{
    static _Thread_local int done;
    if (!done) {
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
        done = 1;
    }
}

/* Bounded: a loop that cannot answer (stuck store) does not hold the run
 * back for ever; the attempt is then counted late or not at all. */
#define ACK_WAIT_MS 10000

static void wait_started_ack(partd__jobs_run *r)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ACK_WAIT_MS / 1000;
    pthread_mutex_lock(&r->ack_lock);
    while (!r->acked)
        if (pthread_cond_timedwait(&r->ack_cond, &r->ack_lock, &until) != 0)
            break;
    pthread_mutex_unlock(&r->ack_lock);
}

void partd__jobs_plan_work(uv_work_t *w)
{
    partd__jobs_run *r = w->data;
    partd_jobs *j = r->owner;
    lower_thread_priority();
    r->start_ms = partd_time_now_ms();
    r->start_ns = partd_clock_ns();
    uint64_t timeout = j->opt.job_timeout_ms;
    if (timeout)
        r->cancel.deadline_ns = r->start_ns + (int64_t)timeout * 1000000;

    /* Not posted once the engine is closed: after_plan marks the jobs. */
    if (partd__jobs_send(j, &r->started_msg) == PARTD_OK)
        wait_started_ack(r);

    partd_plan *plan = NULL;
    r->rc = partd_plan_run(r->req, &r->cancel, &plan, &r->problem);
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag, and the size limit. */
        partd_blob *doc = &r->forms[PARTD_CODING_IDENTITY];
        uint64_t max = j->opt.max_result_bytes;
        /* Rendered once; the summary is copied as it is written. */
        doc->data = partd_result_render(r->req, plan, &r->cancel,
                                        max > SIZE_MAX ? SIZE_MAX : (size_t)max, &doc->len,
                                        &r->summary, &r->rc);
        if (r->rc == PARTD_ETOOBIG)
            result_too_large(&r->problem, max);
        if (r->rc == PARTD_OK && partd_hash_bytes(doc->data, doc->len, r->etag) != PARTD_OK)
            r->rc = PARTD_EINTERNAL;
    }
    if (r->rc == PARTD_OK) {
        /* Under the job's deadline and cancel flag too. */
        int rc = partd_encoding_encode_all_within(r->forms, &r->cancel);
        if (rc == PARTD_ECANCELLED || rc == PARTD_ETIMEOUT)
            r->rc = rc;
        else if (rc != PARTD_OK)
            /* The document itself is fine; it is only served uncompressed. */
            partd_log_msg("warn", "job", "compressing the result of %s failed; serving it "
                          "uncompressed only", r->cache_key);
    }
    partd_plan_free(plan);
    /* The model can be large; it is not needed after planning. */
    partd_request_free(r->req);
    r->req = NULL;
    r->end_ns = partd_clock_ns();
}
