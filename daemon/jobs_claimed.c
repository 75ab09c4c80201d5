/*
 * jobs_claimed.c - on a shared store, the jobs this replica has claimed
 * until they run here: the request each one's row carries is decoded on
 * libuv's pool (a large model takes seconds: never on the loop), then the
 * job joins the table and a run like a job submitted here. A claim that
 * cannot go on is handed back (queued, its attempt not counted) or failed
 * with a problem (its request no longer decodes, or its runs ended without
 * finishing too often). See jobs_internal.h; jobs_share.c claims and
 * renews.
 *
 * Threads: partd_jobs_claimed_new and partd_jobs_give_back run on any
 * thread (the store thread claims); a request that no longer decodes fails
 * on the pool thread that decoded it (partd_jobs_fail_unrun); the rest
 * runs on the loop thread, where a claim is handed back only at shutdown
 * or when memory runs out. A write the store refuses while handing back or
 * failing is not retried here: the claim's lease runs out and the job is
 * claimed again (by any replica).
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "partd.h"

claimed *partd_jobs_claimed_new(partd_jobs *j, const partd_job_row *row, const char *body,
                                size_t len)
{
    claimed *c = calloc(1, sizeof *c);
    if (c)
        c->body = malloc(len + 1);
    if (!c || !c->body) {
        free(c);
        return NULL;
    }
    memcpy(c->body, body, len);
    c->body[len] = '\0';
    c->len = len;
    c->j = j;
    c->row = *row;
    c->row.summary = c->row.error = NULL;
    partd_problem_init(&c->problem);
    c->work.data = c;
    return c;
}

void partd_jobs_claimed_free(claimed *c)
{
    partd_request_free(c->req);
    partd_problem_free(&c->problem);
    free(c->body);
    free(c);
}

/* Pool thread. A request that no longer decodes fails its job here, off
 * the loop (the store leaves a job cancelled or taken over meanwhile as it
 * is). */
static void decode_work(uv_work_t *w)
{
    claimed *c = w->data;
    c->rc = partd_jobs_decode_stored(c->j, c->body, c->len, &c->req, &c->problem);
    free(c->body);
    c->body = NULL;
    if (c->rc == PARTD_OK)
        return;
    char *error = partd_problem_to_json(&c->problem, NULL);
    partd_jobs_fail_unrun(c->j, &c->row, error, c->problem.status);
    free(error);
    partd_log_msg("warn", "job", "job %s failed: its request no longer decodes", c->row.id);
}

void partd_jobs_give_back(partd_jobs *j, const partd_job_row *row)
{
    partd_job_row back = *row;
    back.status = PARTD_JOB_QUEUED;
    const partd_job_row *rows[1] = {&back};
    partd_store_finish_jobs(j->svc->store, NULL, rows, 1);
}

static void after_decode(uv_work_t *w, int status)
{
    claimed *c = w->data;
    partd_jobs *j = c->j;
    for (claimed **p = &j->decoding; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    j->n_decoding--;
    if (c->lost) {
        partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                      c->row.id);
    } else if (status == UV_ECANCELED) {
        partd_jobs_give_back(j, &c->row); /* never decoded */
    } else if (c->rc != PARTD_OK) {
        /* failed on the pool */
    } else if (j->grace_over) {
        partd_jobs_give_back(j, &c->row);
    } else {
        job *jb = partd_jobs_job_new(&c->row);
        if (jb) {
            atomic_fetch_add(&j->svc->metrics.jobs_queued, 1);
            partd_jobs_enqueue(j, jb, c->req);
            c->req = NULL;
        } else {
            partd_jobs_give_back(j, &c->row);
        }
    }
    partd_jobs_claimed_free(c);
    partd_jobs_maybe_drained(j);
    partd_jobs_share_kick(j);
}

void partd_jobs_claimed_decode(partd_jobs *j, claimed *c)
{
    if (j->closing || j->grace_over || uv_queue_work(j->loop, &c->work, decode_work,
                                                     after_decode) != 0) {
        partd_jobs_give_back(j, &c->row);
        partd_jobs_claimed_free(c);
        return;
    }
    c->next = j->decoding;
    j->decoding = c;
    j->n_decoding++;
}
