/*
 * jobs_table.c - the jobs the engine holds and the table that finds them by
 * id: a job's record, its status (kept in step with the queued, running
 * and finished metrics) and its log line. See jobs_internal.h.
 *
 * Threads: the loop thread writes the table and the records' status under
 * table_lock; HTTP threads read them under it (jobs.c: lookup).
 */
#include "jobs_internal.h"

#include <stdlib.h>

#include "core/log.h"
#include "core/map.h"
#include "partd/partd.h"

void partd__jobs_table_init(partd_jobs *j)
{
    pthread_mutex_init(&j->table_lock, NULL);
    partd_map_init(&j->table);
}

void partd__jobs_table_free(partd_jobs *j)
{
    partd_map_free(&j->table);
    pthread_mutex_destroy(&j->table_lock);
}

partd__jobs_job *partd__jobs_job_new(const partd_job_row *row)
{
    partd__jobs_job *jb = calloc(1, sizeof *jb);
    if (!jb)
        return NULL;
    jb->row = *row;
    jb->row.summary = jb->row.error = NULL;
    jb->row.status = PARTD_JOB_QUEUED;
    return jb;
}

void partd__jobs_job_free(partd__jobs_job *jb)
{
    partd_job_row_clear(&jb->row);
    partd_job_row_clear(&jb->end);
    free(jb);
}

void partd__jobs_log(const partd__jobs_job *jb, const char *extra_key, double extra)
{
    partd_log_field f[] = {
        PARTD_LF_S("id", jb->row.id),
        PARTD_LF_S("status", partd_job_status_name(jb->row.status)),
        PARTD_LF_S("cache_key", jb->row.cache_key),
        extra_key ? PARTD_LF_N(extra_key, extra) : PARTD_LF_END,
        PARTD_LF_END};
    partd_log("info", "job", f);
}

void partd__jobs_set_status(partd_jobs *j, partd__jobs_job *jb, partd_job_status status)
{
    partd_metrics *m = j->opt.metrics;
    partd_job_status old = jb->row.status;
    if (old == PARTD_JOB_QUEUED)
        atomic_fetch_sub(&m->jobs_queued, 1);
    else if (old == PARTD_JOB_RUNNING)
        atomic_fetch_sub(&m->jobs_running, 1);
    if (status == PARTD_JOB_RUNNING)
        atomic_fetch_add(&m->jobs_running, 1);
    else if (partd_job_finished(status))
        atomic_fetch_add(&m->jobs_finished[status], 1);
    pthread_mutex_lock(&j->table_lock);
    jb->row.status = status;
    pthread_mutex_unlock(&j->table_lock);
}

int partd__jobs_table_put(partd_jobs *j, partd__jobs_job *jb)
{
    pthread_mutex_lock(&j->table_lock);
    int rc = partd_map_put(&j->table, jb->row.id, jb);
    pthread_mutex_unlock(&j->table_lock);
    return rc;
}

partd__jobs_job *partd__jobs_table_get(partd_jobs *j, const char *id)
{
    pthread_mutex_lock(&j->table_lock);
    partd__jobs_job *jb = partd_map_get(&j->table, id);
    pthread_mutex_unlock(&j->table_lock);
    return jb;
}

void partd__jobs_table_remove(partd_jobs *j, partd__jobs_job *jb)
{
    pthread_mutex_lock(&j->table_lock);
    partd_map_remove(&j->table, jb->row.id);
    pthread_mutex_unlock(&j->table_lock);
}
