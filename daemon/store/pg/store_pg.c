/*
 * store_pg.c - the PostgreSQL backend's operations on jobs and results, and
 * its partd_store_ops table. See pg_internal.h and store.h.
 *
 * Each operation takes one pooled connection for its duration; multi-row
 * results are read in full and the connection released before callbacks
 * run, so a callback may call the store again. New and released jobs are
 * announced on PARTD_PG_CHANNEL (delivered when their transaction commits).
 */
#include "pg_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "partd/partd.h"
#include "store/store_backend.h"

/* ---- one statement ------------------------------------------------------------ */

/* run1's flags. */
#define CONFLICT_OK 1 /* a unique key taken is PARTD_STORE_CONFLICT */
#define READ_ONLY 2   /* safe to run again on a fresh connection */

/* Runs sql on a pooled connection: the result (caller clears) or NULL with
 * *rc set (PARTD_EIO, or PARTD_STORE_CONFLICT). A read whose connection
 * turns out lost (the server restarted since it was last used) is tried
 * again on another (each pooled one may be stale; a lost one is dropped,
 * so at most one try per connection). The connection is released before
 * returning. */
static PGresult *run1(partd__pg_store *s, const char *sql, const partd__pg_params *p,
                      const char *what, int flags, int *rc)
{
    *rc = PARTD_EIO;
    for (int tries = 0; tries <= PARTD_PG_CONNS; tries++) {
        partd__pg_conn *c = partd__pg_acquire(s);
        if (!c)
            return NULL;
        char state[6];
        PGresult *r = partd__pg_exec(s, c, sql, p, what, state);
        int lost = c->pg == NULL;
        partd__pg_release(s, c);
        if (r) {
            *rc = PARTD_OK;
            return r;
        }
        if ((flags & CONFLICT_OK) && strcmp(state, "23505") == 0) {
            *rc = PARTD_STORE_CONFLICT;
            return NULL;
        }
        if (!lost || !(flags & READ_ONLY))
            return NULL;
    }
    return NULL;
}

/* ---- jobs ---------------------------------------------------------------------- */

static int insert_job(void *state, const partd_job_row *row, const char *idem_key,
                      const char *digest, const void *body, size_t body_len)
{
    partd__pg_params p = {0};
    partd__pg_param_text(&p, row->id);
    partd__pg_param_text(&p, partd_job_status_name(row->status));
    partd__pg_param_i64(&p, row->created_ms);
    partd__pg_param_ms(&p, row->started_ms);
    partd__pg_param_ms(&p, row->finished_ms);
    partd__pg_param_text(&p, row->graph_hash);
    partd__pg_param_text(&p, row->cache_key);
    partd__pg_param_i64(&p, row->cached);
    partd__pg_param_text(&p, row->summary);
    partd__pg_param_text(&p, row->error);
    partd__pg_param_i64(&p, row->error_status);
    partd__pg_param_text(&p, idem_key);
    partd__pg_param_text(&p, digest);
    /* Only an unfinished job needs its request again (on any replica). */
    partd__pg_param_bytes(&p, partd_job_finished(row->status) ? NULL : body, body_len);
    partd__pg_param_text(&p, row->about[0] ? row->about : NULL);
    int rc;
    PGresult *r = run1(state,
                       "WITH ins AS (INSERT INTO jobs (id, status, created_ms, started_ms, "
                       "finished_ms, graph_hash, cache_key, cached, summary, error, error_status, "
                       "idempotency_key, request_digest, request, about) VALUES ($1, $2, $3, $4, "
                       "CASE WHEN $5::bigint IS NULL THEN NULL ELSE " PARTD_PG_NOW_MS " END, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING status) "
                       "SELECT pg_notify('" PARTD_PG_CHANNEL "', '') FROM ins "
                       "WHERE status = 'queued'",
                       &p, "inserting a job", idem_key ? CONFLICT_OK : 0, &rc);
    if (r && PQntuples(r) > 0)
        partd__pg_queued_changed(state, 1, 0);
    PQclear(r);
    return rc;
}

static int get_job_where(partd__pg_store *s, const char *sql, const char *key,
                         partd_job_row *row, char digest[72])
{
    partd__pg_params p = {0};
    partd__pg_param_text(&p, key);
    int rc;
    PGresult *r = run1(s, sql, &p, "reading a job", READ_ONLY, &rc);
    if (!r)
        return rc;
    if (PQntuples(r) == 0) {
        rc = PARTD_STORE_MISSING;
    } else {
        rc = partd__pg_read_job(r, 0, row);
        if (digest)
            partd__pg_text_copy(r, 0, PARTD_PG_N_JOB_COLUMNS, digest, 72);
    }
    PQclear(r);
    return rc;
}

static int get_job(void *state, const char *id, partd_job_row *row)
{
    return get_job_where(state, "SELECT " PARTD_PG_JOB_COLUMNS " FROM jobs WHERE id = $1", id,
                         row, NULL);
}

static int get_job_by_idem(void *state, const char *idem_key, partd_job_row *row,
                           char digest[72])
{
    return get_job_where(state,
                         "SELECT " PARTD_PG_JOB_COLUMNS ", request_digest FROM jobs "
                         "WHERE idempotency_key = $1",
                         idem_key, row, digest);
}

/* A write of one row by key: PARTD_STORE_MISSING when it changed none. */
static int write_by_key(partd__pg_store *s, const char *sql, partd__pg_params *p,
                        const char *what)
{
    int rc;
    PGresult *r = run1(s, sql, p, what, 0, &rc);
    if (r && strcmp(PQcmdTuples(r), "0") == 0)
        rc = PARTD_STORE_MISSING;
    PQclear(r);
    return rc;
}

static int mark_running(void *state, const char *id, int64_t started_ms, const char *runner)
{
    partd__pg_store *s = state;
    partd__pg_params p = {0};
    partd__pg_param_text(&p, id);
    partd__pg_param_i64(&p, started_ms);
    partd__pg_param_text(&p, runner && *runner ? runner : NULL);
    partd__pg_param_i64(&p, atomic_load(&s->lease_ms));
    return write_by_key(s,
                        "UPDATE jobs SET status = 'running', started_ms = $2, "
                        "attempts = attempts + 1, runner = $3, "
                        "lease_until_ms = " PARTD_PG_NOW_MS " + $4 WHERE id = $1",
                        &p, "marking a job running");
}

/* ---- finishing --------------------------------------------------------------- */

/* The result's statement, for finish_jobs' pipeline. */
static const char PUT_RESULT_SQL[] =
    /* Content-addressed: every replica plans the same bytes for the same
     * key, so a later copy differs only from a damaged one, which it
     * replaces (store.h: partd_store_load_result). */
    /* Stored at the database's time, which the retention sweep compares
     * with (store.h: partd_store_now_ms). */
    "INSERT INTO results (cache_key, etag, summary, body, created_ms, used_ms, body_zstd, "
    "body_gzip) VALUES ($1, $2, $3, $4, " PARTD_PG_NOW_MS ", " PARTD_PG_NOW_MS ", $5, $6) "
    "ON CONFLICT (cache_key) DO UPDATE SET "
    "etag = excluded.etag, summary = excluded.summary, body = excluded.body, "
    "used_ms = excluded.used_ms, body_zstd = excluded.body_zstd, body_gzip = excluded.body_gzip";

static void result_params(const partd_store_result *res, partd__pg_params *p)
{
    const partd_blob *f = res->forms;
    partd__pg_param_text(p, res->cache_key);
    partd__pg_param_text(p, res->etag);
    partd__pg_param_text(p, res->summary);
    partd__pg_param_bytes(p, f[PARTD_CODING_IDENTITY].data, f[PARTD_CODING_IDENTITY].len);
    partd__pg_param_bytes(p, f[PARTD_CODING_ZSTD].data, f[PARTD_CODING_ZSTD].len);
    partd__pg_param_bytes(p, f[PARTD_CODING_GZIP].data, f[PARTD_CODING_GZIP].len);
}

/* The job is still the row's claim: unfinished, same runner and attempt. */
#define STILL_CLAIMED \
    " AND status IN ('queued', 'running') AND coalesce(runner, '') = $2 AND attempts = $3"

/* Stopped, not lost: the attempt does not count, and the job is announced
 * to the other replicas. */
static const char REQUEUE_SQL[] =
    "WITH q AS (UPDATE jobs SET status = 'queued', started_ms = NULL, lease_until_ms = NULL, "
    "attempts = CASE WHEN status = 'running' AND attempts > 0 THEN attempts - 1 ELSE attempts "
    "END WHERE id = $1" STILL_CLAIMED " RETURNING 1) "
    "SELECT pg_notify('" PARTD_PG_CHANNEL "', '') FROM q";

/* The start time when given (a job finished from the cache was never marked
 * running), else the one its claim wrote stays. */
static const char FINISH_SQL[] =
    "UPDATE jobs SET status = $4, finished_ms = " PARTD_PG_NOW_MS ", summary = $5, error = $6, "
    "error_status = $7, cached = $8, started_ms = coalesce($9, started_ms), "
    "request = NULL, lease_until_ms = NULL WHERE id = $1" STILL_CLAIMED;

static const char *finish_params(const partd_job_row *row, partd__pg_params *p)
{
    partd__pg_param_text(p, row->id);
    partd__pg_param_text(p, row->runner);
    partd__pg_param_i64(p, row->attempts);
    if (!partd_job_finished(row->status))
        return REQUEUE_SQL;
    partd__pg_param_text(p, partd_job_status_name(row->status));
    partd__pg_param_text(p, row->summary);
    partd__pg_param_text(p, row->error);
    partd__pg_param_i64(p, row->error_status);
    partd__pg_param_i64(p, row->cached);
    partd__pg_param_ms(p, row->started_ms);
    return FINISH_SQL;
}

/* The result and every row in one pipeline: one transaction (a row is
 * written only under its claim), one round trip. */
static int finish_jobs(void *state, const partd_store_result *result,
                       const partd_job_row *const *rows, size_t n_rows)
{
    partd__pg_store *s = state;
    size_t n = n_rows + (result != NULL);
    if (n == 0)
        return PARTD_OK;
    const char **sql = calloc(n, sizeof *sql);
    partd__pg_params *params = calloc(n, sizeof *params);
    int *ntuples = calloc(n, sizeof *ntuples);
    int rc = PARTD_ENOMEM;
    if (sql && params && ntuples) {
        size_t k = 0;
        if (result) {
            result_params(result, &params[k]);
            sql[k++] = PUT_RESULT_SQL;
        }
        for (size_t i = 0; i < n_rows; i++, k++)
            sql[k] = finish_params(rows[i], &params[k]);
        partd__pg_conn *c = partd__pg_acquire(s);
        rc = c ? partd__pg_pipeline(s, c, n, sql, params, "finishing jobs", ntuples) : PARTD_EIO;
        if (c)
            partd__pg_release(s, c);
        /* A job queued again changes the queue's depth. */
        for (size_t i = n - n_rows; rc == PARTD_OK && i < n; i++)
            if (sql[i] == REQUEUE_SQL && ntuples[i] > 0)
                partd__pg_queued_changed(s, 0, 1);
    }
    free(sql);
    free(params);
    free(ntuples);
    return rc;
}

static int cancel_job(void *state, const char *id, int64_t finished_ms, partd_job_row *row)
{
    (void)finished_ms; /* the database's clock instead (store.h) */
    partd__pg_params p = {0};
    partd__pg_param_text(&p, id);
    int rc;
    /* One statement: no replica can finish the job in between. */
    PGresult *r = run1(state,
                       "UPDATE jobs SET status = 'cancelled', finished_ms = " PARTD_PG_NOW_MS ", "
                       "summary = NULL, "
                       "error = NULL, error_status = 0, request = NULL, lease_until_ms = NULL "
                       "WHERE id = $1 AND status IN ('queued', 'running') RETURNING "
                       PARTD_PG_JOB_COLUMNS,
                       &p, "cancelling a job", 0, &rc);
    if (!r)
        return rc;
    partd__pg_queued_changed(state, 0, 1);
    int cancelled = PQntuples(r) > 0;
    if (cancelled && row)
        rc = partd__pg_read_job(r, 0, row);
    PQclear(r);
    if (cancelled)
        return rc;
    partd_job_row got;
    rc = get_job(state, id, &got);
    if (rc == PARTD_OK) {
        partd_job_row_clear(&got);
        return PARTD_STORE_CONFLICT;
    }
    return rc;
}

/* ---- results ---------------------------------------------------------------- */

static int get_result(void *state, const char *cache_key, partd_blob *forms, char etag[72],
                      char **summary)
{
    memset(forms, 0, PARTD_CODINGS * sizeof *forms);
    *summary = NULL;
    partd__pg_params p = {0};
    partd__pg_param_text(&p, cache_key);
    int rc;
    PGresult *r = run1(state,
                       "SELECT body, etag, summary, body_zstd, body_gzip FROM results "
                       "WHERE cache_key = $1",
                       &p, "reading a result", READ_ONLY, &rc);
    if (!r)
        return rc;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return PARTD_STORE_MISSING;
    }
    rc = partd__pg_bytes_dup(r, 0, 0, &forms[PARTD_CODING_IDENTITY]);
    if (rc == PARTD_OK)
        rc = partd__pg_bytes_dup(r, 0, 3, &forms[PARTD_CODING_ZSTD]);
    if (rc == PARTD_OK)
        rc = partd__pg_bytes_dup(r, 0, 4, &forms[PARTD_CODING_GZIP]);
    if (rc == PARTD_OK && !(*summary = partd__pg_text_dup(r, 0, 2)))
        rc = PARTD_ENOMEM;
    if (rc == PARTD_OK)
        partd__pg_text_copy(r, 0, 1, etag, 72);
    PQclear(r);
    if (rc != PARTD_OK) {
        partd_encoding_forms_free(forms);
        free(*summary);
        *summary = NULL;
    }
    return rc;
}

static int touch_result(void *state, const char *cache_key, int64_t now_ms)
{
    (void)now_ms; /* the database's clock instead (store.h) */
    partd__pg_params p = {0};
    partd__pg_param_text(&p, cache_key);
    return write_by_key(state,
                        "UPDATE results SET used_ms = " PARTD_PG_NOW_MS " WHERE cache_key = $1", &p,
                        "touching a result");
}

/* ---- listing, recovery, retention ---------------------------------------- */

static int list(void *state, int status, int64_t before_seq, unsigned limit,
                partd_store_row_fn fn, void *ctx)
{
    partd__pg_params p = {0};
    partd__pg_param_text(&p, status >= 0 ? partd_job_status_name((partd_job_status)status) : NULL);
    partd__pg_param_ms(&p, before_seq);
    partd__pg_param_i64(&p, limit);
    int rc;
    PGresult *r = run1(state,
                       "SELECT " PARTD_PG_JOB_COLUMNS " FROM jobs WHERE ($1::text IS NULL OR "
                       "status = $1) AND ($2::bigint IS NULL OR seq < $2) ORDER BY seq DESC "
                       "LIMIT $3",
                       &p, "listing jobs", READ_ONLY, &rc);
    for (int i = 0; r && rc == PARTD_OK && i < PQntuples(r); i++) {
        partd_job_row row;
        rc = partd__pg_read_job(r, i, &row);
        if (rc == PARTD_OK) {
            fn(&row, ctx);
            partd_job_row_clear(&row);
        }
    }
    PQclear(r);
    return rc;
}

static int pending(void *state, partd_store_pending_fn fn, void *ctx)
{
    int rc;
    PGresult *r = run1(state,
                       "SELECT " PARTD_PG_JOB_COLUMNS ", request FROM jobs "
                       "WHERE status IN ('queued', 'running') ORDER BY seq",
                       NULL, "reading unfinished jobs", READ_ONLY, &rc);
    for (int i = 0; r && rc == PARTD_OK && i < PQntuples(r); i++) {
        partd_job_row row;
        rc = partd__pg_read_job(r, i, &row);
        if (rc == PARTD_OK) {
            int col = PARTD_PG_N_JOB_COLUMNS;
            fn(&row, PQgetvalue(r, i, col), (size_t)PQgetlength(r, i, col), ctx);
            partd_job_row_clear(&row);
        }
    }
    PQclear(r);
    return rc;
}

/* The database server's clock, as leases use it: retention on every replica
 * counts from it, whatever the replica's own clock says. */
static int now_ms(void *state, int64_t *out)
{
    partd__pg_store *s = state;
    partd__pg_conn *c = partd__pg_acquire(s);
    if (!c)
        return PARTD_EIO;
    PGresult *r = partd__pg_exec(s, c, "SELECT " PARTD_PG_NOW_MS, NULL,
                                 "reading the database's clock", NULL);
    partd__pg_release(s, c);
    if (!r)
        return PARTD_EIO;
    *out = partd__pg_int(r, 0, 0);
    PQclear(r);
    return PARTD_OK;
}

/* Within sweep's transaction. */
static int sweep_rows(partd__pg_store *s, partd__pg_conn *c, int64_t cutoff_ms,
                      partd_store_key_fn fn, void *ctx, unsigned *jobs, unsigned *results)
{
    partd__pg_params p = {0};
    partd__pg_param_i64(&p, cutoff_ms);
    PGresult *r = partd__pg_exec(s, c,
                                 "DELETE FROM results WHERE used_ms < $1 RETURNING cache_key", &p,
                                 "the retention sweep", NULL);
    if (!r)
        return PARTD_EIO;
    *results = (unsigned)PQntuples(r);
    for (int i = 0; fn && i < PQntuples(r); i++) {
        char key[72];
        partd__pg_text_copy(r, i, 0, key, sizeof key);
        fn(key, ctx);
    }
    PQclear(r);
    r = partd__pg_exec(s, c, "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms < $1",
                       &p, "the retention sweep", NULL);
    if (!r)
        return PARTD_EIO;
    *jobs = (unsigned)strtoul(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return PARTD_OK;
}

static int sweep(void *state, int64_t cutoff_ms, partd_store_key_fn fn, void *ctx,
                 unsigned *jobs_deleted, unsigned *results_deleted)
{
    partd__pg_store *s = state;
    unsigned jobs = 0, results = 0;
    *jobs_deleted = *results_deleted = 0;
    partd__pg_conn *c = partd__pg_acquire(s);
    if (!c)
        return PARTD_EIO;
    int rc = partd__pg_command(s, c, "BEGIN", "the retention sweep");
    if (rc == PARTD_OK)
        rc = sweep_rows(s, c, cutoff_ms, fn, ctx, &jobs, &results);
    if (rc == PARTD_OK)
        rc = partd__pg_command(s, c, "COMMIT", "the retention sweep");
    else if (c->pg)
        partd__pg_command(s, c, "ROLLBACK", "the retention sweep");
    partd__pg_release(s, c);
    if (rc == PARTD_OK) {
        *jobs_deleted = jobs;
        *results_deleted = results;
    }
    return rc;
}

const partd_store_ops partd_store_pg_ops = {
    .scheme = "postgresql",
    .alias = "postgres", /* libpq takes both */
    .open = partd__pg_open,
    .close = partd__pg_close,
    .limit_size = partd__pg_limit_size,
    .healthy = partd__pg_healthy,
    .probe = partd__pg_probe,
    .round_trips = partd__pg_round_trips,
    .now_ms = now_ms,
    .insert_job = insert_job,
    .get_job = get_job,
    .get_job_by_idem = get_job_by_idem,
    .mark_running = mark_running,
    .finish_jobs = finish_jobs,
    .cancel_job = cancel_job,
    .get_result = get_result,
    .touch_result = touch_result,
    .list = list,
    .pending = pending,
    .sweep = sweep,
    .claim = partd__pg_claim,
    .renew = partd__pg_renew,
    .count_queued = partd__pg_count_queued,
    .listen_fd = partd__pg_listen_fd,
    .listen_consume = partd__pg_listen_consume,
    .listen_reset = partd__pg_listen_reset,
};
