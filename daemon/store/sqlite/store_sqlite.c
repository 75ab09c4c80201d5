/*
 * store_sqlite.c - the SQLite backend's operations on jobs and results, and
 * its partd_store_ops table. See sqlite_internal.h and store.h.
 *
 * Statements come prepared from store_sqlite_schema.c. Writes go
 * through the one writer connection; reads through this thread's reader.
 * A value that cannot be bound (out of memory, over SQLite's size limits) is
 * an error of that call, logged, and does not count against the store's
 * health: only a failed statement or commit does.
 */
#include "sqlite_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/time.h"
#include "partd/partd.h"
#include "store/store_backend.h"

/* ---- binding ------------------------------------------------------------- */

/* Binds parameters one after another, keeping the first failure, so a
 * statement's binds read as a list and are checked once (bound()). */
typedef struct binder {
    sqlite3_stmt *st;
    int rc; /* SQLite code of the first failed bind */
} binder;

static void bind_text(binder *b, int i, const char *text)
{
    if (b->rc == SQLITE_OK)
        b->rc = text ? sqlite3_bind_text(b->st, i, text, -1, SQLITE_STATIC)
                     : sqlite3_bind_null(b->st, i);
}

static void bind_blob(binder *b, int i, const void *data, size_t len)
{
    if (b->rc == SQLITE_OK)
        b->rc = data ? sqlite3_bind_blob64(b->st, i, data, len, SQLITE_STATIC)
                     : sqlite3_bind_null(b->st, i);
}

static void bind_int64(binder *b, int i, int64_t v)
{
    if (b->rc == SQLITE_OK)
        b->rc = sqlite3_bind_int64(b->st, i, v);
}

/* Times of 0 mean "not yet": stored as NULL. */
static void bind_ms(binder *b, int i, int64_t ms)
{
    if (b->rc == SQLITE_OK)
        b->rc = ms > 0 ? sqlite3_bind_int64(b->st, i, ms) : sqlite3_bind_null(b->st, i);
}

/* PARTD_OK when every bind succeeded, else (logged) PARTD_ENOMEM or
 * PARTD_EIO (a value over SQLite's limits). */
static int bound(const binder *b, const char *what)
{
    if (b->rc == SQLITE_OK)
        return PARTD_OK;
    partd_log_msg("error", "store", "%s failed: cannot bind a value: %s", what,
                  sqlite3_errstr(b->rc));
    return (b->rc & 0xff) == SQLITE_NOMEM ? PARTD_ENOMEM : PARTD_EIO;
}

/* ---- reading columns ------------------------------------------------------ */

static char *column_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? strdup((const char *)t) : NULL;
}

/* A malloc'd copy of a BLOB column, NUL-terminated for text documents.
 * PARTD_OK (out->data NULL for SQL NULL) or PARTD_ENOMEM. */
static int column_blob(sqlite3_stmt *st, int i, partd_blob *out)
{
    out->data = NULL;
    out->len = 0;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return PARTD_OK;
    const void *b = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    out->data = malloc(n + 1);
    if (!out->data)
        return PARTD_ENOMEM;
    if (n)
        memcpy(out->data, b, n);
    out->data[n] = '\0';
    out->len = n;
    return PARTD_OK;
}

static void copy_column(sqlite3_stmt *st, int i, char *out, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(out, cap, "%s", t ? (const char *)t : "");
}

/* Reads the job columns starting at column 0 (sqlite_internal.h). */
static int read_row(sqlite3_stmt *st, partd_job_row *row)
{
    memset(row, 0, sizeof *row);
    copy_column(st, 0, row->id, sizeof row->id);
    row->seq = sqlite3_column_int64(st, 1);
    const unsigned char *status = sqlite3_column_text(st, 2);
    int s = status ? partd_job_status_parse((const char *)status) : -1;
    row->status = s < 0 ? PARTD_JOB_FAILED : (partd_job_status)s;
    row->created_ms = sqlite3_column_int64(st, 3);
    row->started_ms = sqlite3_column_int64(st, 4);
    row->finished_ms = sqlite3_column_int64(st, 5);
    copy_column(st, 6, row->graph_hash, sizeof row->graph_hash);
    copy_column(st, 7, row->cache_key, sizeof row->cache_key);
    row->cached = sqlite3_column_int(st, 8);
    row->summary = column_dup(st, 9);
    row->error = column_dup(st, 10);
    row->error_status = sqlite3_column_int(st, 11);
    row->attempts = sqlite3_column_int(st, 12);
    copy_column(st, 13, row->runner, sizeof row->runner);
    if (sqlite3_column_bytes(st, 14) < (int)sizeof row->about) /* JSON: whole or none */
        copy_column(st, 14, row->about, sizeof row->about);
    if ((sqlite3_column_type(st, 9) != SQLITE_NULL && !row->summary) ||
        (sqlite3_column_type(st, 10) != SQLITE_NULL && !row->error)) {
        partd_job_row_clear(row);
        return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

/* ---- jobs ---------------------------------------------------------------- */

static int insert_job(void *state, const partd_job_row *row, const char *idem_key,
                      const char *digest, const void *body, size_t body_len)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_INSERT_JOB), SQLITE_OK};
    int rc = PARTD_EIO;
    if (b.st) {
        bind_text(&b, 1, row->id);
        bind_text(&b, 2, partd_job_status_name(row->status));
        bind_int64(&b, 3, row->created_ms);
        bind_ms(&b, 4, row->started_ms);
        bind_ms(&b, 5, row->finished_ms);
        bind_text(&b, 6, row->graph_hash);
        bind_text(&b, 7, row->cache_key);
        bind_int64(&b, 8, row->cached);
        bind_text(&b, 9, row->summary);
        bind_text(&b, 10, row->error);
        bind_int64(&b, 11, row->error_status);
        bind_text(&b, 12, idem_key);
        bind_text(&b, 13, digest);
        /* Only an unfinished job needs its request again after a restart. */
        bind_blob(&b, 14, partd_job_finished(row->status) ? NULL : body, body_len);
        bind_text(&b, 15, row->about[0] ? row->about : NULL);
        rc = bound(&b, "inserting a job");
    }
    if (rc == PARTD_OK) {
        int step = sqlite3_step(b.st);
        if (step == SQLITE_DONE) {
            atomic_store(&s->healthy, 1);
        } else if (step == SQLITE_CONSTRAINT_UNIQUE && idem_key) {
            rc = PARTD_STORE_CONFLICT;
        } else {
            rc = partd__sqlite_write_failed(s, c, "inserting a job");
        }
        sqlite3_reset(b.st);
    }
    partd__sqlite_release(c);
    return rc;
}

static int get_job_where(partd__sqlite_store *s, partd__sqlite_stmt_id which, const char *key,
                         partd_job_row *row, char digest[72])
{
    partd__sqlite_conn *c = partd__sqlite_reader(s);
    binder b = {partd__sqlite_stmt(c, which), SQLITE_OK};
    int rc = PARTD_EIO;
    if (b.st) {
        bind_text(&b, 1, key);
        rc = bound(&b, "reading a job");
    }
    if (rc == PARTD_OK) {
        int step = sqlite3_step(b.st);
        if (step == SQLITE_ROW) {
            rc = read_row(b.st, row);
            if (digest)
                copy_column(b.st, PARTD_SQLITE_JOB_COLUMNS, digest, 72);
        } else if (step == SQLITE_DONE) {
            rc = PARTD_STORE_MISSING;
        } else {
            partd_log_msg("error", "store", "reading a job failed: %s", sqlite3_errmsg(c->db));
            rc = PARTD_EIO;
        }
        sqlite3_reset(b.st);
    }
    partd__sqlite_release(c);
    return rc;
}

static int get_job(void *state, const char *id, partd_job_row *row)
{
    return get_job_where(state, PARTD_SQLITE_ST_GET_JOB, id, row, NULL);
}

static int get_job_by_idem(void *state, const char *idem_key, partd_job_row *row,
                           char digest[72])
{
    return get_job_where(state, PARTD_SQLITE_ST_GET_JOB_BY_IDEM, idem_key, row, digest);
}

/* Runs a bound write statement on the writer: PARTD_OK with *changed rows,
 * or PARTD_EIO (unhealthy, logged as `what`). The caller marks the store
 * healthy once its write (or transaction) is committed. */
static int run_write(partd__sqlite_store *s, partd__sqlite_conn *c, sqlite3_stmt *st,
                     const char *what, int *changed)
{
    int step = sqlite3_step(st);
    sqlite3_reset(st);
    if (step != SQLITE_DONE)
        return partd__sqlite_write_failed(s, c, what);
    if (changed)
        *changed = sqlite3_changes(c->db);
    return PARTD_OK;
}

/* Sets one value of the row whose key is `key` (statement ?1 = key,
 * ?2 = value): PARTD_STORE_MISSING when there is no such row. */
static int update_by_key(partd__sqlite_store *s, partd__sqlite_stmt_id which, const char *key,
                         int64_t value, const char *what)
{
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    binder b = {partd__sqlite_stmt(c, which), SQLITE_OK};
    int rc = PARTD_EIO, changed = 0;
    if (b.st) {
        bind_text(&b, 1, key);
        bind_int64(&b, 2, value);
        rc = bound(&b, what);
    }
    if (rc == PARTD_OK && (rc = run_write(s, c, b.st, what, &changed)) == PARTD_OK)
        atomic_store(&s->healthy, 1);
    if (rc == PARTD_OK && changed == 0)
        rc = PARTD_STORE_MISSING;
    partd__sqlite_release(c);
    return rc;
}

static int mark_running(void *state, const char *id, int64_t started_ms, const char *runner)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_MARK_RUNNING), SQLITE_OK};
    int rc = PARTD_EIO, changed = 0;
    if (b.st) {
        bind_text(&b, 1, id);
        bind_int64(&b, 2, started_ms);
        bind_text(&b, 3, runner && *runner ? runner : NULL);
        rc = bound(&b, "marking a job running");
    }
    if (rc == PARTD_OK &&
        (rc = run_write(s, c, b.st, "marking a job running", &changed)) == PARTD_OK)
        atomic_store(&s->healthy, 1);
    if (rc == PARTD_OK && changed == 0)
        rc = PARTD_STORE_MISSING;
    partd__sqlite_release(c);
    return rc;
}

/* ---- finishing ------------------------------------------------------------ */

/* Within finish_jobs' transaction, logged as "finishing jobs" whatever
 * fails (operators and tests look for it): a bind failure as bound(), a
 * failed statement as partd__sqlite_write_failed. */
static int put_result(partd__sqlite_store *s, partd__sqlite_conn *c,
                      const partd_store_result *result)
{
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_PUT_RESULT), SQLITE_OK};
    if (!b.st)
        return partd__sqlite_write_failed(s, c, "finishing jobs");
    const partd_blob *f = result->forms;
    bind_text(&b, 1, result->cache_key);
    bind_text(&b, 2, result->etag);
    bind_text(&b, 3, result->summary);
    bind_blob(&b, 4, f[PARTD_CODING_IDENTITY].data, f[PARTD_CODING_IDENTITY].len);
    bind_int64(&b, 5, partd_time_now_ms());
    bind_blob(&b, 6, f[PARTD_CODING_ZSTD].data, f[PARTD_CODING_ZSTD].len);
    bind_blob(&b, 7, f[PARTD_CODING_GZIP].data, f[PARTD_CODING_GZIP].len);
    int rc = bound(&b, "finishing jobs");
    return rc == PARTD_OK ? run_write(s, c, b.st, "finishing jobs", NULL) : rc;
}

static int finish_one(partd__sqlite_store *s, partd__sqlite_conn *c, const partd_job_row *row)
{
    if (!partd_job_finished(row->status)) {
        binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_REQUEUE_JOB), SQLITE_OK};
        if (!b.st)
            return partd__sqlite_write_failed(s, c, "finishing jobs");
        bind_text(&b, 1, row->id);
        int rc = bound(&b, "finishing jobs");
        return rc == PARTD_OK ? run_write(s, c, b.st, "finishing jobs", NULL) : rc;
    }
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_FINISH_JOB), SQLITE_OK};
    if (!b.st)
        return partd__sqlite_write_failed(s, c, "finishing jobs");
    bind_text(&b, 1, row->id);
    bind_text(&b, 2, partd_job_status_name(row->status));
    bind_int64(&b, 3, row->finished_ms);
    bind_text(&b, 4, row->summary);
    bind_text(&b, 5, row->error);
    bind_int64(&b, 6, row->error_status);
    bind_ms(&b, 7, row->started_ms); /* 0: keep the one marked running */
    bind_int64(&b, 8, row->cached);
    int rc = bound(&b, "finishing jobs");
    return rc == PARTD_OK ? run_write(s, c, b.st, "finishing jobs", NULL) : rc;
}

static int finish_jobs(void *state, const partd_store_result *result,
                       const partd_job_row *const *rows, size_t n_rows)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    int rc = PARTD_OK;
    if (partd__sqlite_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK)
        rc = partd__sqlite_write_failed(s, c, "finishing jobs");
    if (rc == PARTD_OK && result)
        rc = put_result(s, c, result);
    for (size_t i = 0; rc == PARTD_OK && i < n_rows; i++)
        rc = finish_one(s, c, rows[i]);
    if (rc == PARTD_OK && partd__sqlite_exec(c, "COMMIT") != SQLITE_OK)
        rc = partd__sqlite_write_failed(s, c, "finishing jobs");
    if (rc != PARTD_OK)
        partd__sqlite_exec(c, "ROLLBACK");
    else
        atomic_store(&s->healthy, 1);
    partd__sqlite_release(c);
    return rc;
}

/* After a cancel changed no row: PARTD_STORE_CONFLICT when the job exists
 * (so it had finished), PARTD_STORE_MISSING when not, PARTD_EIO. */
static int why_not_cancelled(partd__sqlite_conn *c, const char *id)
{
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_JOB_EXISTS), SQLITE_OK};
    if (!b.st)
        return PARTD_EIO;
    bind_text(&b, 1, id);
    int rc = bound(&b, "cancelling a job");
    if (rc != PARTD_OK)
        return rc;
    int step = sqlite3_step(b.st);
    sqlite3_reset(b.st);
    if (step == SQLITE_ROW)
        return PARTD_STORE_CONFLICT;
    if (step == SQLITE_DONE)
        return PARTD_STORE_MISSING;
    partd_log_msg("error", "store", "reading a job failed: %s", sqlite3_errmsg(c->db));
    return PARTD_EIO;
}

/* The cancelled row from PARTD_SQLITE_ST_CANCEL_JOB's RETURNING, read before the
 * statement is stepped to its end: the autocommit transaction commits (and
 * may fail, as on a full disk) only there. */
static int cancel_step(partd__sqlite_store *s, partd__sqlite_conn *c, sqlite3_stmt *st,
                       partd_job_row *row, int *cancelled)
{
    int step = sqlite3_step(st);
    int rc = PARTD_OK;
    *cancelled = step == SQLITE_ROW;
    if (*cancelled) {
        partd_job_row got;
        rc = read_row(st, &got);
        step = sqlite3_step(st);
        if (rc == PARTD_OK && row && step == SQLITE_DONE)
            *row = got;
        else if (rc == PARTD_OK)
            partd_job_row_clear(&got);
    }
    sqlite3_reset(st);
    if (step != SQLITE_DONE) {
        *cancelled = 0;
        return partd__sqlite_write_failed(s, c, "cancelling a job");
    }
    atomic_store(&s->healthy, 1);
    return rc;
}

static int cancel_job(void *state, const char *id, int64_t finished_ms, partd_job_row *row)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_CANCEL_JOB), SQLITE_OK};
    int rc = PARTD_EIO, cancelled = 0;
    if (b.st) {
        bind_text(&b, 1, id);
        bind_int64(&b, 2, finished_ms);
        rc = bound(&b, "cancelling a job");
    }
    if (rc == PARTD_OK)
        rc = cancel_step(s, c, b.st, row, &cancelled);
    if (rc == PARTD_OK && !cancelled)
        rc = why_not_cancelled(c, id);
    partd__sqlite_release(c);
    return rc;
}

/* ---- results --------------------------------------------------------------- */

/* The columns of PARTD_SQLITE_ST_GET_RESULT into forms and *summary; on error
 * nothing is left allocated. */
static int read_result(sqlite3_stmt *st, partd_blob *forms, char etag[72], char **summary)
{
    int rc = column_blob(st, 0, &forms[PARTD_CODING_IDENTITY]);
    if (rc == PARTD_OK)
        rc = column_blob(st, 3, &forms[PARTD_CODING_ZSTD]);
    if (rc == PARTD_OK)
        rc = column_blob(st, 4, &forms[PARTD_CODING_GZIP]);
    if (rc == PARTD_OK && sqlite3_column_type(st, 2) != SQLITE_NULL &&
        !(*summary = column_dup(st, 2)))
        rc = PARTD_ENOMEM;
    /* NOT NULL in the schema: the row is damaged. */
    if (rc == PARTD_OK && (!forms[PARTD_CODING_IDENTITY].data || !*summary))
        rc = PARTD_EIO;
    if (rc == PARTD_OK) {
        copy_column(st, 1, etag, 72);
        return PARTD_OK;
    }
    partd_encoding_forms_free(forms);
    free(*summary);
    *summary = NULL;
    return rc;
}

static int get_result(void *state, const char *cache_key, partd_blob *forms, char etag[72],
                      char **summary)
{
    memset(forms, 0, PARTD_CODINGS * sizeof *forms);
    *summary = NULL;
    partd__sqlite_conn *c = partd__sqlite_reader(state);
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_GET_RESULT), SQLITE_OK};
    int rc = PARTD_EIO;
    if (b.st) {
        bind_text(&b, 1, cache_key);
        rc = bound(&b, "reading a result");
    }
    if (rc == PARTD_OK) {
        int step = sqlite3_step(b.st);
        if (step == SQLITE_ROW) {
            rc = read_result(b.st, forms, etag, summary);
        } else if (step == SQLITE_DONE) {
            rc = PARTD_STORE_MISSING;
        } else {
            partd_log_msg("error", "store", "reading a result failed: %s",
                          sqlite3_errmsg(c->db));
            rc = PARTD_EIO;
        }
        sqlite3_reset(b.st);
    }
    partd__sqlite_release(c);
    return rc;
}

static int touch_result(void *state, const char *cache_key, int64_t now_ms)
{
    return update_by_key(state, PARTD_SQLITE_ST_TOUCH_RESULT, cache_key, now_ms,
                         "touching a result");
}

/* ---- listing, recovery, retention ---------------------------------------- */

/* Steps st to its end, handing each job row to row_fn, or to pending_fn
 * with the request body in the column after the job's. */
typedef struct visitor {
    partd_store_row_fn row_fn;
    partd_store_pending_fn pending_fn;
    void *ctx;
} visitor;

static int visit_rows(partd__sqlite_conn *c, sqlite3_stmt *st, const visitor *v,
                      const char *what)
{
    int rc = PARTD_OK, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        partd_job_row row;
        if (read_row(st, &row) != PARTD_OK) {
            rc = PARTD_ENOMEM;
            break;
        }
        if (v->pending_fn) {
            const char *body = sqlite3_column_blob(st, PARTD_SQLITE_JOB_COLUMNS);
            size_t len = (size_t)sqlite3_column_bytes(st, PARTD_SQLITE_JOB_COLUMNS);
            v->pending_fn(&row, body ? body : "", len, v->ctx);
        } else {
            v->row_fn(&row, v->ctx);
        }
        partd_job_row_clear(&row);
    }
    if (rc == PARTD_OK && step != SQLITE_DONE) {
        partd_log_msg("error", "store", "%s failed: %s", what, sqlite3_errmsg(c->db));
        rc = PARTD_EIO;
    }
    sqlite3_reset(st);
    return rc;
}

static int list(void *state, int status, int64_t before_seq, unsigned limit,
                partd_store_row_fn fn, void *ctx)
{
    partd__sqlite_conn *c = partd__sqlite_reader(state);
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_LIST), SQLITE_OK};
    int rc = PARTD_EIO;
    if (b.st) {
        bind_text(&b, 1, status >= 0 ? partd_job_status_name((partd_job_status)status) : NULL);
        bind_ms(&b, 2, before_seq); /* 0: from the newest (NULL) */
        bind_int64(&b, 3, limit);
        rc = bound(&b, "listing jobs");
    }
    if (rc == PARTD_OK)
        rc = visit_rows(c, b.st, &(visitor){fn, NULL, ctx}, "listing jobs");
    partd__sqlite_release(c);
    return rc;
}

static int pending(void *state, partd_store_pending_fn fn, void *ctx)
{
    /* A reader: the callback may write through the writer meanwhile (WAL
     * keeps this snapshot stable). */
    partd__sqlite_conn *c = partd__sqlite_reader(state);
    sqlite3_stmt *st = partd__sqlite_stmt(c, PARTD_SQLITE_ST_PENDING);
    int rc = st ? visit_rows(c, st, &(visitor){NULL, fn, ctx}, "reading unfinished jobs")
                : PARTD_EIO;
    partd__sqlite_release(c);
    return rc;
}

/* Within sweep's transaction: calls fn for each result unused since cutoff,
 * then deletes them and the jobs finished before cutoff. */
static int sweep_rows(partd__sqlite_store *s, partd__sqlite_conn *c, int64_t cutoff_ms,
                      partd_store_key_fn fn, void *ctx, int *jobs, int *results)
{
    binder b = {partd__sqlite_stmt(c, PARTD_SQLITE_ST_SWEEP_RESULT_KEYS), SQLITE_OK};
    if (!b.st)
        return partd__sqlite_write_failed(s, c, "the retention sweep");
    bind_int64(&b, 1, cutoff_ms);
    int rc = bound(&b, "the retention sweep");
    if (rc != PARTD_OK)
        return rc;
    int step;
    while ((step = sqlite3_step(b.st)) == SQLITE_ROW)
        if (fn)
            fn((const char *)sqlite3_column_text(b.st, 0), ctx);
    sqlite3_reset(b.st);
    if (step != SQLITE_DONE)
        return partd__sqlite_write_failed(s, c, "the retention sweep");
    const partd__sqlite_stmt_id deletes[2] = {PARTD_SQLITE_ST_SWEEP_RESULTS,
                                              PARTD_SQLITE_ST_SWEEP_JOBS};
    int *counts[2] = {results, jobs};
    for (int i = 0; i < 2 && rc == PARTD_OK; i++) {
        b = (binder){partd__sqlite_stmt(c, deletes[i]), SQLITE_OK};
        if (!b.st)
            return partd__sqlite_write_failed(s, c, "the retention sweep");
        bind_int64(&b, 1, cutoff_ms);
        rc = bound(&b, "the retention sweep");
        if (rc == PARTD_OK)
            rc = run_write(s, c, b.st, "the retention sweep", counts[i]);
    }
    return rc;
}

static int sweep(void *state, int64_t cutoff_ms, partd_store_key_fn fn, void *ctx,
                 unsigned *jobs_deleted, unsigned *results_deleted)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    int jobs = 0, results = 0;
    int rc = PARTD_OK;
    if (partd__sqlite_exec(c, "BEGIN IMMEDIATE") != SQLITE_OK)
        rc = partd__sqlite_write_failed(s, c, "the retention sweep");
    if (rc == PARTD_OK)
        rc = sweep_rows(s, c, cutoff_ms, fn, ctx, &jobs, &results);
    if (rc == PARTD_OK && partd__sqlite_exec(c, "COMMIT") != SQLITE_OK)
        rc = partd__sqlite_write_failed(s, c, "the retention sweep");
    if (rc != PARTD_OK) {
        partd__sqlite_exec(c, "ROLLBACK");
        jobs = results = 0;
    } else {
        atomic_store(&s->healthy, 1);
    }
    *jobs_deleted = (unsigned)jobs;
    *results_deleted = (unsigned)results;
    partd__sqlite_release(c);
    return rc;
}

const partd_store_ops partd_store_sqlite_ops = {
    .scheme = "sqlite",
    .open = partd__sqlite_open,
    .close = partd__sqlite_close,
    .limit_size = partd__sqlite_limit_size,
    .room = partd__sqlite_room,
    .healthy = partd__sqlite_healthy,
    .probe = partd__sqlite_probe,
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
};
