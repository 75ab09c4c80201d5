/*
 * jobs_queue.c - the loop thread's message queue: HTTP threads (a job
 * submitted or cancelled) and pool threads (a run started) append a
 * message under queue_lock and wake the loop with uv_async_send; the loop
 * takes them all at once and hands each to the handler it carries, oldest
 * first. The queue knows no kind of message: whoever sends one says what
 * the loop does with it (jobs.c; jobs_plan.c for a run started). See
 * jobs_internal.h.
 *
 * Once closed the queue refuses messages (PARTD_EIO), so no thread waits
 * on a loop that is gone.
 */
#include "jobs_internal.h"

#include "partd/partd.h"

static void on_wakeup(uv_async_t *a)
{
    partd__jobs_process_messages(a->data);
}

void partd__jobs_queue_init(partd_jobs *j)
{
    pthread_mutex_init(&j->queue_lock, NULL);
    uv_async_init(j->loop, &j->wakeup, on_wakeup);
    j->wakeup.data = j;
}

void partd__jobs_queue_free(partd_jobs *j)
{
    pthread_mutex_destroy(&j->queue_lock);
}

int partd__jobs_send(partd_jobs *j, partd__jobs_msg *m)
{
    /* Sent under the lock: partd__jobs_queue_close() cannot close the
     * handle between the check and the send. */
    pthread_mutex_lock(&j->queue_lock);
    int closed = j->closed;
    if (!closed) {
        m->next = NULL;
        if (j->tail)
            j->tail->next = m;
        else
            j->head = m;
        j->tail = m;
        uv_async_send(&j->wakeup);
    }
    pthread_mutex_unlock(&j->queue_lock);
    return closed ? PARTD_EIO : PARTD_OK;
}

void partd__jobs_process_messages(partd_jobs *j)
{
    pthread_mutex_lock(&j->queue_lock);
    partd__jobs_msg *m = j->head;
    j->head = j->tail = NULL;
    pthread_mutex_unlock(&j->queue_lock);
    while (m) {
        partd__jobs_msg *next = m->next;
        m->handle(j, m);
        m = next;
    }
}

static void on_closed(uv_handle_t *h)
{
    (void)h;
}

void partd__jobs_queue_close(partd_jobs *j)
{
    pthread_mutex_lock(&j->queue_lock);
    j->closed = 1;
    pthread_mutex_unlock(&j->queue_lock);
    /* Nothing can be added now; answer what is left. */
    partd__jobs_process_messages(j);
    uv_close((uv_handle_t *)&j->wakeup, on_closed);
}
