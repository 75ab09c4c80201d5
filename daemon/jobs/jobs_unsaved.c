/*
 * jobs_unsaved.c - jobs whose final state the store refused (disk full):
 * they stay in the table as the store holds them, their final row kept
 * aside (jb->end), while a timer on the loop writes those rows again every
 * RETRY_MS until the store takes them; then they leave the table. A job
 * cancelled meanwhile is forgotten here. Loop thread only.
 *
 * Errors: none returned: a write the store refuses again is tried again at
 * the next tick; what is never written stays unfinished in the store, so
 * the next start plans it again.
 */
#include "jobs_internal.h"

#include <stdlib.h>

#include "core/log.h"
#include "partd/partd.h"

/* How often the final state of jobs the store refused is written again. */
#define RETRY_MS 1000

/* Writes the final state of jobs the store refused earlier. */
static void on_retry(uv_timer_t *t)
{
    partd_jobs *j = t->data;
    size_t n = 0;
    for (partd__jobs_job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        n++;
    const partd_job_row **rows = calloc(n + 1, sizeof *rows);
    if (!rows)
        return;
    n = 0;
    for (partd__jobs_job *jb = j->unsaved; jb; jb = jb->unsaved_next)
        rows[n++] = &jb->end;
    int rc = partd_store_finish_jobs(j->opt.store, NULL, rows, n);
    free(rows);
    if (rc != PARTD_OK)
        return;
    partd_log_msg("info", "store", "saved the final state of %zu job(s) after a store failure", n);
    while (j->unsaved) {
        partd__jobs_job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        /* Stored: polls read the store from now on. */
        partd__jobs_table_remove(j, jb);
        jb->row.finished_ms = jb->end.finished_ms;
        partd__jobs_set_status(j, jb, jb->end.status);
        partd__jobs_log(jb, NULL, 0);
        partd__jobs_job_free(jb);
    }
    uv_timer_stop(&j->retry);
}

void partd__jobs_unsaved_add(partd_jobs *j, partd__jobs_job *jb)
{
    jb->unsaved_next = j->unsaved;
    j->unsaved = jb;
    if (!uv_is_active((uv_handle_t *)&j->retry))
        uv_timer_start(&j->retry, on_retry, RETRY_MS, RETRY_MS);
}

void partd__jobs_unsaved_forget(partd_jobs *j, partd__jobs_job *jb)
{
    for (partd__jobs_job **p = &j->unsaved; *p; p = &(*p)->unsaved_next)
        if (*p == jb) {
            *p = jb->unsaved_next;
            break;
        }
    jb->unsaved_next = NULL;
    if (!j->unsaved)
        uv_timer_stop(&j->retry);
}

void partd__jobs_unsaved_init(partd_jobs *j)
{
    uv_timer_init(j->loop, &j->retry);
    j->retry.data = j;
}

static void on_retry_closed(uv_handle_t *h)
{
    (void)h;
}

void partd__jobs_unsaved_close(partd_jobs *j)
{
    uv_close((uv_handle_t *)&j->retry, on_retry_closed);
}

void partd__jobs_unsaved_free(partd_jobs *j)
{
    /* Never written: the store still has them unfinished, so the next start
     * plans them again. */
    while (j->unsaved) {
        partd__jobs_job *jb = j->unsaved;
        j->unsaved = jb->unsaved_next;
        partd__jobs_job_free(jb);
    }
}
