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
 * Threads: partd__jobs_claimed_new runs on any thread (the store thread
 * claims); a request that no longer decodes fails on the pool thread that
 * decoded it (jobs_stored.c); the rest runs on the loop thread, where a
 * claim is handed back (jobs_stored.c) only at shutdown or when memory
 * runs out. A decode still under way when a drain's grace runs out is
 * stopped (the engine's decode_stop) and its claim handed back.
 */
#include "jobs_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "partd/partd.h"

partd__jobs_claimed *partd__jobs_claimed_new(partd_jobs *j, const partd_job_row *row,
                                             const char *body, size_t len)
{
    partd__jobs_claimed *c = calloc(1, sizeof *c);
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

void partd__jobs_claimed_free(partd__jobs_claimed *c)
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
    partd__jobs_claimed *c = w->data;
    c->rc = partd__jobs_decode_stored(c->j, c->body, c->len, &c->req, &c->problem);
    free(c->body);
    c->body = NULL;
    if (c->rc == PARTD_OK || c->rc == PARTD_ECANCELLED)
        return;
    partd__jobs_fail_unrun(c->j, &c->row, &c->problem);
    partd_log_msg("warn", "job", "job %s failed: its request no longer decodes", c->row.id);
}

static void after_decode(uv_work_t *w, int status)
{
    partd__jobs_claimed *c = w->data;
    partd_jobs *j = c->j;
    for (partd__jobs_claimed **p = &j->decoding; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    j->n_decoding--;
    if (c->lost) {
        partd_log_msg("info", "job", "job %s is no longer ours (cancelled or taken over)",
                      c->row.id);
    } else if (status == UV_ECANCELED) {
        partd__jobs_give_back(j, &c->row); /* never decoded */
    } else if (c->rc == PARTD_ECANCELLED) {
        /* stopped when the drain's grace ran out */
        partd_log_msg("info", "shutdown", "job %s: decoding its request stopped; handed back",
                      c->row.id);
        partd__jobs_give_back(j, &c->row);
    } else if (c->rc != PARTD_OK) {
        /* failed on the pool */
    } else if (j->grace_over) {
        partd__jobs_give_back(j, &c->row);
    } else {
        partd__jobs_job *jb = partd__jobs_job_new(&c->row);
        if (jb) {
            atomic_fetch_add(&j->opt.metrics->jobs_queued, 1);
            partd__jobs_enqueue(j, jb, c->req);
            c->req = NULL;
        } else {
            partd__jobs_give_back(j, &c->row);
        }
    }
    partd__jobs_claimed_free(c);
    j->on.planner_free(j);
}

void partd__jobs_claimed_decode(partd_jobs *j, partd__jobs_claimed *c)
{
    if (j->closing || j->grace_over || uv_queue_work(j->loop, &c->work, decode_work,
                                                     after_decode) != 0) {
        partd__jobs_give_back(j, &c->row);
        partd__jobs_claimed_free(c);
        return;
    }
    c->next = j->decoding;
    j->decoding = c;
    j->n_decoding++;
}
