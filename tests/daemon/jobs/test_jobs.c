/* test_jobs.c - the job engine (daemon/jobs/jobs*.c) on a real libuv loop with a
 * real store in a temporary directory: a job planned into the store and the
 * cache, a failing plan, a cache hit, identical jobs sharing one run,
 * cancelling a queued job, the --queue-max reservation, drain (jobs left
 * queued), refusal after close, and recovery of unfinished jobs after the
 * store is opened again.
 *
 * The libuv pool has one thread (UV_THREADPOOL_SIZE=1, set before any work
 * is queued). A "gate" work request occupies it while a test needs a job to
 * stay queued, so no outcome depends on timing; a 60 s timer only turns a
 * hang into a failure. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <uv.h>

#include "partd/clock.h"
#include "testutil.h"

#include "core/time.h"
#include "jobs/jobs.h"
#include "partd/partd.h"

static const char *const REQ =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":0.25}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100}]}";

/* The same graph on a device too small for it: no feasible plan (422). */
static const char *const REQ_INFEASIBLE =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":0.25}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1}]}";

/* ---- the engine's surroundings, wired as serve.c does ------------------- */

typedef struct env {
    char dir[64];
    partd_store *store;
    partd_cache *cache;
    partd_metrics metrics;
    partd_jobs *jobs;
    uint64_t job_timeout_ms;   /* the engine's --job-timeout-ms; 0 = none */
    uv_loop_t loop;
    uv_timer_t deadline;
    int timed_out;
    int drained;
    int closed;
} env;

static void on_deadline(uv_timer_t *t)
{
    env *e = t->data;
    e->timed_out = 1;
}

static void on_drained(void *ctx)
{
    env *e = ctx;
    e->drained = 1;
    partd_jobs_close(e->jobs);
    e->closed = 1;
}

static void env_open(env *e)
{
    char err[512];
    int code = 0;
    e->store = partd_store_open(e->dir, err, sizeof err, &code);
    if (!e->store)
        fail_msg("store: %s", err);
    e->cache = partd_cache_new(1 << 20);
    assert_non_null(e->cache);
    partd_metrics_init(&e->metrics);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    partd_jobs_options opt = {
        .store = e->store,
        .cache = e->cache,
        .metrics = &e->metrics,
        .workers = 1,
        .queue_max = 3,
        .job_timeout_ms = e->job_timeout_ms,
        .max_result_bytes = 1 << 20,
        .on_drained = on_drained,
        .ctx = e,
    };
    e->jobs = partd_jobs_new(&e->loop, &opt);
    assert_non_null(e->jobs);
    uv_timer_init(&e->loop, &e->deadline);
    e->deadline.data = e;
    uv_timer_start(&e->deadline, on_deadline, 60000, 0);
    e->timed_out = e->drained = e->closed = 0;
}

/* Runs the loop until *flag is set (by a callback or another thread that
 * wakes the loop). */
static void run_until(env *e, const atomic_int *flag)
{
    while (!atomic_load(flag)) {
        if (e->timed_out)
            fail_msg("the loop did not get there within 60 s");
        uv_run(&e->loop, UV_RUN_ONCE);
    }
}

static void env_close(env *e)
{
    if (!e->closed) {
        partd_jobs_drain(e->jobs, 0);
        while (!e->drained && !e->timed_out)
            uv_run(&e->loop, UV_RUN_ONCE);
        assert_true(e->drained);
    }
    uv_close((uv_handle_t *)&e->deadline, NULL);
    uv_run(&e->loop, UV_RUN_DEFAULT); /* until every handle and request is done */
    partd_jobs_free(e->jobs);
    assert_int_equal(uv_loop_close(&e->loop), 0);
    partd_cache_free(e->cache);
    partd_store_close(e->store);
}

static int setup(void **state)
{
    env *e = calloc(1, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/partd-jobs-XXXXXX");
    if (!mkdtemp(e->dir))
        return -1;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    int rc = system(cmd);
    free(e);
    return rc == 0 ? 0 : -1;
}

/* ---- the gate: holds the only pool thread ------------------------------- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_entered, gate_open;
static atomic_int gate_done;
static uv_work_t gate_req;

static void gate_work(uv_work_t *w)
{
    (void)w;
    pthread_mutex_lock(&gate_lock);
    gate_entered = 1;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static void gate_after(uv_work_t *w, int status)
{
    (void)w;
    (void)status;
    atomic_store(&gate_done, 1);
}

/* Returns once the pool thread is inside the gate. */
static void gate_close(env *e)
{
    gate_entered = gate_open = 0;
    atomic_store(&gate_done, 0);
    assert_int_equal(uv_queue_work(&e->loop, &gate_req, gate_work, gate_after), 0);
    pthread_mutex_lock(&gate_lock);
    while (!gate_entered)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static void gate_release(env *e)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    run_until(e, &gate_done);
}

/* ---- jobs --------------------------------------------------------------- */

/* Commits a queued job to the store as the HTTP layer does; the row gets
 * the request's hashes. */
static void store_job(env *e, const char *json, partd_job_row *row)
{
    partd_request *req = tu_decode_ok(json);
    memset(row, 0, sizeof *row);
    assert_int_equal(partd_id_new(row->id), PARTD_OK);
    row->created_ms = partd_time_now_ms();
    snprintf(row->graph_hash, sizeof row->graph_hash, "%s", req->graph_hash);
    snprintf(row->cache_key, sizeof row->cache_key, "%s", req->cache_key);
    partd_request_free(req);
    assert_int_equal(partd_store_insert_job(e->store, row, NULL, NULL, json, strlen(json)),
                     PARTD_OK);
}

static void submit(env *e, const char *json, partd_job_row *row)
{
    store_job(e, json, row);
    assert_true(partd_jobs_reserve(e->jobs));
    assert_int_equal(partd_jobs_submit(e->jobs, row, tu_decode_ok(json)), PARTD_OK);
}

static partd_job_status stored_status(env *e, const char *id)
{
    partd_job_row row;
    assert_int_equal(partd_store_get_job(e->store, id, &row), PARTD_OK);
    partd_job_row_clear(&row);
    return row.status;
}

/* Runs the loop until the store holds the job as finished. */
static void run_until_finished(env *e, const char *id)
{
    while (!partd_job_finished(stored_status(e, id))) {
        if (e->timed_out)
            fail_msg("job %s did not finish within 60 s", id);
        uv_run(&e->loop, UV_RUN_ONCE);
    }
}

/* Cancelling blocks until the loop answers: done from a thread, as HTTP
 * threads do, while this thread runs the loop. */
typedef struct canceller {
    partd_jobs *jobs;
    char id[PARTD_ID_LEN + 1];
    partd_job_row row;
    int rc;
    atomic_int done;
    uv_async_t wake;
} canceller;

static void *cancel_thread(void *arg)
{
    canceller *c = arg;
    c->rc = partd_jobs_cancel(c->jobs, c->id, &c->row);
    atomic_store(&c->done, 1);
    uv_async_send(&c->wake);
    return NULL;
}

static int cancel_on_loop(env *e, const char *id, partd_job_row *out)
{
    canceller c;
    memset(&c, 0, sizeof c);
    c.jobs = e->jobs;
    snprintf(c.id, sizeof c.id, "%s", id);
    atomic_init(&c.done, 0);
    uv_async_init(&e->loop, &c.wake, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, cancel_thread, &c), 0);
    run_until(e, &c.done);
    pthread_join(t, NULL);
    uv_close((uv_handle_t *)&c.wake, NULL);
    uv_run(&e->loop, UV_RUN_NOWAIT); /* the close callback, before c goes */
    if (out)
        *out = c.row;
    return c.rc;
}

static uint64_t observations(partd_histogram *h)
{
    uint64_t n = 0;
    for (unsigned i = 0; i <= h->n_bounds; i++)
        n += atomic_load(&h->counts[i]);
    return n;
}

/* ---- tests -------------------------------------------------------------- */

static void test_job_is_planned_into_store_and_cache(void **state)
{
    env *e = *state;
    env_open(e);
    partd_job_row row;
    submit(e, REQ, &row);
    run_until_finished(e, row.id);

    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, row.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_true(got.started_ms >= row.created_ms);
    assert_true(got.finished_ms >= got.started_ms);
    assert_false(got.cached);
    assert_non_null(got.summary);
    assert_non_null(strstr(got.summary, "\"partitions\":1"));
    assert_null(got.error);

    partd_blob forms[PARTD_CODINGS];
    memset(forms, 0, sizeof forms);
    char etag[72];
    char *summary = NULL;
    assert_int_equal(partd_store_get_result(e->store, row.cache_key, forms, etag, &summary),
                     PARTD_OK);
    assert_string_equal(summary, got.summary);
    assert_non_null(strstr(forms[PARTD_CODING_IDENTITY].data, "\"summary\":"));
    partd_cache_entry *c = partd_cache_get(e->cache, row.cache_key);
    assert_non_null(c);
    assert_string_equal(c->etag, etag);
    assert_int_equal(c->forms[PARTD_CODING_IDENTITY].len, forms[PARTD_CODING_IDENTITY].len);
    assert_memory_equal(c->forms[PARTD_CODING_IDENTITY].data, forms[PARTD_CODING_IDENTITY].data,
                        forms[PARTD_CODING_IDENTITY].len);
    partd_cache_entry_release(c);
    partd_encoding_forms_free(forms);
    free(summary);
    partd_job_row_clear(&got);

    /* The finished job has left the table: polls read the store. */
    partd_job_row out;
    assert_int_equal(partd_jobs_lookup(e->jobs, row.id, &out), PARTD_STORE_MISSING);
    assert_int_equal(cancel_on_loop(e, row.id, NULL), PARTD_STORE_MISSING);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_SUCCEEDED]), 1);
    assert_int_equal(partd_jobs_queued(e->jobs), 0);
    assert_int_equal(atomic_load(&e->metrics.jobs_running), 0);
    env_close(e);
}

static void test_same_request_again_is_a_cache_hit(void **state)
{
    env *e = *state;
    env_open(e);
    partd_job_row first, second;
    submit(e, REQ, &first);
    run_until_finished(e, first.id);
    submit(e, REQ, &second);
    run_until_finished(e, second.id);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, second.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_non_null(got.summary);
    /* The stored job says so, with a start time (started_at is never null
     * for a succeeded job). */
    assert_int_equal(got.cached, 1);
    assert_true(got.started_ms >= second.created_ms);
    assert_true(got.finished_ms >= got.started_ms);
    partd_job_row_clear(&got);
    /* Answered from the cache, not planned again: one hit, one planning. */
    assert_int_equal(atomic_load(&e->metrics.cache_hits), 1);
    assert_int_equal(observations(&e->metrics.job_duration), 1);
    assert_int_equal(partd_jobs_queued(e->jobs), 0);
    env_close(e);
}

static void test_infeasible_plan_fails_with_its_problem(void **state)
{
    env *e = *state;
    env_open(e);
    partd_job_row row;
    submit(e, REQ_INFEASIBLE, &row);
    run_until_finished(e, row.id);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, row.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_int_equal(got.error_status, 422);
    assert_non_null(got.error);
    assert_non_null(strstr(got.error, "/devices/0/memory_bytes"));
    assert_null(got.summary);
    partd_job_row_clear(&got);
    assert_null(partd_cache_get(e->cache, row.cache_key));
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_FAILED]), 1);
    env_close(e);
}

static void test_identical_jobs_share_one_run(void **state)
{
    env *e = *state;
    env_open(e);
    gate_close(e);
    partd_job_row a, b;
    submit(e, REQ, &a);
    submit(e, REQ, &b);
    /* Both wait behind the gate; the table answers polls for them. */
    uv_run(&e->loop, UV_RUN_NOWAIT);
    partd_job_row out;
    assert_int_equal(partd_jobs_lookup(e->jobs, b.id, &out), PARTD_OK);
    assert_int_equal(out.status, PARTD_JOB_QUEUED);
    partd_job_row_clear(&out);
    gate_release(e);
    run_until_finished(e, a.id);
    run_until_finished(e, b.id);
    assert_int_equal(stored_status(e, a.id), PARTD_JOB_SUCCEEDED);
    assert_int_equal(stored_status(e, b.id), PARTD_JOB_SUCCEEDED);
    /* One run planned both: neither was a cache hit. */
    assert_int_equal(atomic_load(&e->metrics.cache_hits), 0);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_SUCCEEDED]), 2);
    env_close(e);
}

static void test_cancel_a_queued_job(void **state)
{
    env *e = *state;
    env_open(e);
    gate_close(e);
    partd_job_row row;
    submit(e, REQ, &row);
    partd_job_row out;
    assert_int_equal(cancel_on_loop(e, row.id, &out), PARTD_OK);
    assert_string_equal(out.id, row.id);
    assert_int_equal(out.status, PARTD_JOB_CANCELLED);
    assert_true(out.finished_ms > 0);
    assert_int_equal(stored_status(e, row.id), PARTD_JOB_CANCELLED);
    /* Gone from the table; a second cancel is the caller's 409 (from the
     * store), an unknown id its 404. */
    assert_int_equal(partd_jobs_lookup(e->jobs, row.id, &out), PARTD_STORE_MISSING);
    assert_int_equal(cancel_on_loop(e, row.id, NULL), PARTD_STORE_MISSING);
    assert_int_equal(cancel_on_loop(e, "0123456789abcdef0123456789abcdef", NULL),
                     PARTD_STORE_MISSING);
    gate_release(e);
    assert_int_equal(partd_jobs_queued(e->jobs), 0);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_CANCELLED]), 1);
    /* The cancelled run never planned: nothing was stored or cached. */
    assert_null(partd_cache_get(e->cache, row.cache_key));
    env_close(e);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_SUCCEEDED]), 0);
}

/* Runs SQL on the store's file through a connection of the test's own. */
static void store_sql(env *e, const char *sql)
{
    char path[128];
    snprintf(path, sizeof path, "%s/partd.db", e->dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* A cancel the store refuses (as on a full disk) changes nothing: the job
 * stays in the engine and the store as it was, and runs; a later cancel
 * that is recorded works. */
static void test_cancel_the_store_refuses_changes_nothing(void **state)
{
    env *e = *state;
    env_open(e);
    gate_close(e);
    partd_job_row a, b;
    submit(e, REQ, &a);
    submit(e, REQ_INFEASIBLE, &b);
    uv_run(&e->loop, UV_RUN_NOWAIT);
    store_sql(e, "CREATE TRIGGER refuse_cancel BEFORE UPDATE OF status ON jobs "
                 "WHEN NEW.status = 'cancelled' BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    assert_int_equal(cancel_on_loop(e, a.id, NULL), PARTD_EIO);
    assert_int_equal(cancel_on_loop(e, b.id, NULL), PARTD_EIO);
    partd_job_row out;
    assert_int_equal(partd_jobs_lookup(e->jobs, a.id, &out), PARTD_OK);
    assert_int_equal(out.status, PARTD_JOB_QUEUED);
    assert_int_equal(stored_status(e, a.id), PARTD_JOB_QUEUED);
    assert_int_equal(partd_jobs_queued(e->jobs), 2);
    store_sql(e, "DROP TRIGGER refuse_cancel");
    assert_int_equal(cancel_on_loop(e, b.id, &out), PARTD_OK);
    assert_int_equal(out.status, PARTD_JOB_CANCELLED);
    assert_int_equal(stored_status(e, b.id), PARTD_JOB_CANCELLED);
    gate_release(e);
    run_until_finished(e, a.id);
    assert_int_equal(stored_status(e, a.id), PARTD_JOB_SUCCEEDED);
    assert_int_equal(stored_status(e, b.id), PARTD_JOB_CANCELLED);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_CANCELLED]), 1);
    env_close(e);
}

/* The store refuses every state change but cancel (as on a full disk): a
 * job reads as the store holds it (queued: not even its start was
 * recorded), never as a final state the store does not have; a cancel is
 * still taken. After a restart with space back, a job never shown final
 * runs and succeeds, and the one shown cancelled stays so. */
static void test_states_the_store_refuses_are_not_shown(void **state)
{
    env *e = *state;
    env_open(e);
    gate_close(e);
    partd_job_row a, b, got;
    submit(e, REQ, &a);
    submit(e, REQ, &b); /* joins a's run */
    uv_run(&e->loop, UV_RUN_NOWAIT);
    store_sql(e, "CREATE TRIGGER refuse BEFORE UPDATE OF status ON jobs WHEN NEW.status IN "
                 "('running', 'succeeded', 'failed') BEGIN SELECT RAISE(ABORT, 'disk full'); END");
    gate_release(e);
    while (observations(&e->metrics.job_duration) < 2) {
        assert_false(e->timed_out);
        uv_run(&e->loop, UV_RUN_ONCE);
    }
    for (int k = 0; k < 2; k++) {
        const char *id = k ? b.id : a.id;
        assert_int_equal(partd_jobs_lookup(e->jobs, id, &got), PARTD_OK);
        assert_int_equal(got.status, PARTD_JOB_QUEUED);
        assert_int_equal(stored_status(e, id), PARTD_JOB_QUEUED);
        partd_job_row_clear(&got);
    }
    assert_int_equal(cancel_on_loop(e, b.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_CANCELLED);
    assert_int_equal(partd_jobs_lookup(e->jobs, b.id, &got), PARTD_STORE_MISSING);
    assert_int_equal(stored_status(e, b.id), PARTD_JOB_CANCELLED);
    env_close(e);

    store_sql(e, "DROP TRIGGER refuse");
    env_open(e);
    assert_int_equal(partd_jobs_recover(e->jobs), 1);
    run_until_finished(e, a.id);
    assert_int_equal(stored_status(e, a.id), PARTD_JOB_SUCCEEDED);
    assert_int_equal(stored_status(e, b.id), PARTD_JOB_CANCELLED);
    env_close(e);
}

/* The deadline holds past planning: a job whose time is up by the time
 * its result would be stored fails with the timeout problem, and nothing
 * is stored or cached. */
static void test_a_job_past_its_deadline_is_not_stored(void **state)
{
    env *e = *state;
    e->job_timeout_ms = 1;
    env_open(e);
    partd_job_row row, got;
    submit(e, REQ, &row);
    uv_run(&e->loop, UV_RUN_NOWAIT); /* the run is on the pool's queue */
    /* The one pool thread takes the gate only after planning the job: from
     * here its deadline is set, and its completion waits for the loop. */
    gate_close(e);
    int64_t past = partd_clock_ns() + 2000000; /* beyond start + 1 ms */
    while (partd_clock_ns() < past)
        ;
    gate_release(e);
    run_until_finished(e, row.id);
    assert_int_equal(partd_store_get_job(e->store, row.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_non_null(strstr(got.error, "job-timeout"));
    partd_job_row_clear(&got);
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(e->store, row.cache_key, forms, etag, &summary),
                     PARTD_STORE_MISSING);
    assert_null(partd_cache_get(e->cache, row.cache_key));
    env_close(e);
}

static void test_reserve_honours_queue_max(void **state)
{
    env *e = *state;
    env_open(e); /* queue_max 3 */
    for (int i = 0; i < 3; i++)
        assert_true(partd_jobs_reserve(e->jobs));
    assert_false(partd_jobs_reserve(e->jobs));
    assert_int_equal(partd_jobs_queued(e->jobs), 3);
    partd_jobs_unreserve(e->jobs);
    assert_true(partd_jobs_reserve(e->jobs));
    for (int i = 0; i < 3; i++)
        partd_jobs_unreserve(e->jobs);
    assert_int_equal(partd_jobs_queued(e->jobs), 0);
    env_close(e);
}

/* A drain leaves a job that has not started queued in the store; after
 * close the engine refuses submissions and cancellations; the next start
 * recovers and plans the job. */
static void test_drain_leaves_jobs_queued_and_recovery_runs_them(void **state)
{
    env *e = *state;
    env_open(e);
    gate_close(e);
    partd_job_row row;
    submit(e, REQ, &row);
    uv_run(&e->loop, UV_RUN_NOWAIT); /* the run is queued behind the gate */
    partd_jobs_drain(e->jobs, 1000);
    gate_release(e);
    while (!e->drained) {
        assert_false(e->timed_out);
        uv_run(&e->loop, UV_RUN_ONCE);
    }
    assert_true(e->closed);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, row.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    assert_int_equal(got.started_ms, 0);
    partd_job_row_clear(&got);

    /* Closed: nothing is taken any more, nothing waits on the loop. */
    partd_job_row late;
    store_job(e, REQ, &late);
    assert_true(partd_jobs_reserve(e->jobs));
    assert_int_equal(partd_jobs_submit(e->jobs, &late, tu_decode_ok(REQ)), PARTD_EIO);
    /* The engine holds nothing now: the caller cancels in the store. */
    assert_int_equal(partd_jobs_cancel(e->jobs, row.id, &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_jobs_queued(e->jobs), 0);
    env_close(e);

    env_open(e);
    assert_int_equal(partd_jobs_recover(e->jobs), 2);
    /* Both wait for one run (same request); none started yet. */
    assert_int_equal(partd_jobs_queued(e->jobs), 2);
    run_until_finished(e, row.id);
    run_until_finished(e, late.id);
    assert_int_equal(stored_status(e, row.id), PARTD_JOB_SUCCEEDED);
    assert_int_equal(stored_status(e, late.id), PARTD_JOB_SUCCEEDED);
    env_close(e);
}

/* Recovery queues running jobs again and fails a job whose stored request
 * no longer decodes, with the decoder's problem. */
static void test_recovery_requeues_running_and_fails_undecodable(void **state)
{
    env *e = *state;
    env_open(e);
    partd_job_row running, broken;
    store_job(e, REQ, &running);
    assert_int_equal(partd_store_mark_running(e->store, running.id, partd_time_now_ms(), "r1"), PARTD_OK);
    memset(&broken, 0, sizeof broken);
    assert_int_equal(partd_id_new(broken.id), PARTD_OK);
    broken.created_ms = partd_time_now_ms();
    snprintf(broken.graph_hash, sizeof broken.graph_hash, "sha256:g");
    snprintf(broken.cache_key, sizeof broken.cache_key, "sha256:k");
    assert_int_equal(partd_store_insert_job(e->store, &broken, NULL, NULL, "{\"graph\":", 9),
                     PARTD_OK);

    assert_int_equal(partd_jobs_recover(e->jobs), 1);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, broken.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_int_equal(got.error_status, 400);
    assert_non_null(got.error);
    partd_job_row_clear(&got);
    assert_int_equal(atomic_load(&e->metrics.jobs_finished[PARTD_JOB_FAILED]), 1);

    run_until_finished(e, running.id);
    assert_int_equal(stored_status(e, running.id), PARTD_JOB_SUCCEEDED);
    /* Nothing left to recover. */
    assert_int_equal(partd_jobs_recover(e->jobs), 0);
    env_close(e);
}

/* A job that was running when the process died is retried while it has
 * attempts left (each counted in the store), then fails with a problem
 * saying the planner crashed; it is never started again. */
static void test_recovery_fails_a_job_that_crashed_three_times(void **state)
{
    env *e = *state;
    env_open(e);
    partd_job_row retried, exhausted;
    store_job(e, REQ, &retried);
    store_job(e, REQ, &exhausted);
    for (int i = 0; i < PARTD_JOBS_MAX_ATTEMPTS - 1; i++)
        assert_int_equal(partd_store_mark_running(e->store, retried.id, 1, "r1"), PARTD_OK);
    for (int i = 0; i < PARTD_JOBS_MAX_ATTEMPTS; i++)
        assert_int_equal(partd_store_mark_running(e->store, exhausted.id, 1, "r1"),
                         PARTD_OK);

    assert_int_equal(partd_jobs_recover(e->jobs), 1);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(e->store, exhausted.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_int_equal(got.attempts, PARTD_JOBS_MAX_ATTEMPTS);
    assert_int_equal(got.error_status, 500);
    assert_non_null(strstr(got.error, "planner-crashed"));
    assert_non_null(strstr(got.error, "3 times"));
    partd_job_row_clear(&got);

    run_until_finished(e, retried.id);
    assert_int_equal(partd_store_get_job(e->store, retried.id, &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_int_equal(got.attempts, PARTD_JOBS_MAX_ATTEMPTS);
    partd_job_row_clear(&got);
    env_close(e);
}

int main(void)
{
    /* libuv sizes its pool when the first work request is queued. */
    setenv("UV_THREADPOOL_SIZE", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_job_is_planned_into_store_and_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_request_again_is_a_cache_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_infeasible_plan_fails_with_its_problem, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_identical_jobs_share_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_a_queued_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_the_store_refuses_changes_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_states_the_store_refuses_are_not_shown, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_job_past_its_deadline_is_not_stored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reserve_honours_queue_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_leaves_jobs_queued_and_recovery_runs_them,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_fails_a_job_that_crashed_three_times,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_requeues_running_and_fails_undecodable,
                                        setup, teardown),
    };
    return cmocka_run_group_tests_name("jobs", tests, NULL, NULL);
}
