/*
 * store.c - SQLite store. See store.h.
 *
 * Durability: WAL with synchronous=FULL, so a job row is on disk when
 * partd_store_insert_job returns and the 202 may go out. Every connection has
 * its statements prepared once and reused.
 */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "partd.h"

#define APPLICATION_ID 0x70617274 /* "part" */
#define SCHEMA_VERSION 2
#define N_READERS 8

enum stmt_id {
    ST_INSERT_JOB,
    ST_GET_JOB,
    ST_GET_JOB_BY_IDEM,
    ST_MARK_RUNNING,
    ST_FINISH_JOB,
    ST_REQUEUE_JOB,
    ST_PUT_RESULT,
    ST_GET_RESULT,
    ST_TOUCH_RESULT,
    ST_LIST,
    ST_PENDING,
    ST_SWEEP_RESULT_KEYS,
    ST_SWEEP_RESULTS,
    ST_SWEEP_JOBS,
    ST_COUNT
};

#define JOB_COLUMNS \
    "id, seq, status, created_ms, started_ms, finished_ms, graph_hash, cache_key, " \
    "cached, summary, error, error_status"

static const char *const SQL[ST_COUNT] = {
    [ST_INSERT_JOB] =
        "INSERT INTO jobs (id, status, created_ms, started_ms, finished_ms, graph_hash, "
        "cache_key, cached, summary, error, error_status, idempotency_key, request_digest, "
        "request) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
    [ST_GET_JOB] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [ST_GET_JOB_BY_IDEM] =
        "SELECT " JOB_COLUMNS ", request_digest FROM jobs WHERE idempotency_key = ?1",
    [ST_MARK_RUNNING] = "UPDATE jobs SET status = 'running', started_ms = ?2 WHERE id = ?1",
    [ST_FINISH_JOB] =
        "UPDATE jobs SET status = ?2, finished_ms = ?3, summary = ?4, error = ?5, "
        "error_status = ?6, request = NULL WHERE id = ?1",
    [ST_REQUEUE_JOB] =
        "UPDATE jobs SET status = 'queued', started_ms = NULL WHERE id = ?1",
    [ST_PUT_RESULT] =
        "INSERT INTO results (cache_key, etag, summary, body, body_zstd, body_gzip, "
        "created_ms, used_ms) VALUES (?1, ?2, ?3, ?4, ?6, ?7, ?5, ?5) "
        "ON CONFLICT(cache_key) DO UPDATE SET used_ms = excluded.used_ms",
    [ST_GET_RESULT] = "SELECT body, etag, summary, body_zstd, body_gzip FROM results WHERE cache_key = ?1",
    [ST_TOUCH_RESULT] = "UPDATE results SET used_ms = ?2 WHERE cache_key = ?1",
    [ST_LIST] = "SELECT " JOB_COLUMNS " FROM jobs WHERE (?1 IS NULL OR status = ?1) "
                "AND (?2 IS NULL OR seq < ?2) ORDER BY seq DESC LIMIT ?3",
    [ST_PENDING] = "SELECT " JOB_COLUMNS ", request FROM jobs "
                   "WHERE status IN ('queued', 'running') ORDER BY seq",
    [ST_SWEEP_RESULT_KEYS] = "SELECT cache_key FROM results WHERE used_ms < ?1",
    [ST_SWEEP_RESULTS] = "DELETE FROM results WHERE used_ms < ?1",
    [ST_SWEEP_JOBS] = "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms < ?1",
};

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS jobs ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT NOT NULL UNIQUE,"
    " status TEXT NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " started_ms INTEGER,"
    " finished_ms INTEGER,"
    " graph_hash TEXT NOT NULL,"
    " cache_key TEXT NOT NULL,"
    " cached INTEGER NOT NULL DEFAULT 0,"
    " summary TEXT,"
    " error TEXT,"
    " error_status INTEGER,"
    " idempotency_key TEXT UNIQUE,"
    " request_digest TEXT,"
    " request BLOB);"
    "CREATE INDEX IF NOT EXISTS jobs_status_seq ON jobs (status, seq);"
    "CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_ms);"
    "CREATE TABLE IF NOT EXISTS results ("
    " cache_key TEXT PRIMARY KEY,"
    " etag TEXT NOT NULL,"
    " summary TEXT NOT NULL,"
    " body BLOB NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " used_ms INTEGER NOT NULL,"
    " body_zstd BLOB,"
    " body_gzip BLOB);"
    "CREATE INDEX IF NOT EXISTS results_used ON results (used_ms);";

/* Schema 1 to 2: the coded forms of result documents (encoding.h). Results
 * stored before have none and are served uncompressed. */
static const char MIGRATE_FROM_1[] =
    "ALTER TABLE results ADD COLUMN body_zstd BLOB;"
    "ALTER TABLE results ADD COLUMN body_gzip BLOB;";

typedef struct conn {
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3_stmt *stmt[ST_COUNT];
} conn;

struct partd_store {
    conn writer;
    conn readers[N_READERS];
    /* Checkpoints run on their own connection and thread, so that folding a
     * large WAL (request bodies are stored) never stalls a writer. */
    conn checkpointer;
    pthread_t checkpoint_thread;
    int checkpoint_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    int stopping;
    atomic_uint next_reader;
    atomic_int healthy;
};

/* ---- connections ------------------------------------------------------- */

static sqlite3_stmt *stmt(conn *c, enum stmt_id id)
{
    if (!c->stmt[id]) {
        if (sqlite3_prepare_v3(c->db, SQL[id], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id],
                               NULL) != SQLITE_OK) {
            partd_log_msg("error", "store", "cannot prepare statement: %s",
                          sqlite3_errmsg(c->db));
            return NULL;
        }
    } else {
        sqlite3_reset(c->stmt[id]);
        sqlite3_clear_bindings(c->stmt[id]);
    }
    return c->stmt[id];
}

static void conn_close(conn *c)
{
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(c->stmt[i]);
    if (c->db)
        sqlite3_close_v2(c->db);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

static int conn_open(conn *c, const char *path, int flags, char *err, size_t cap)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    int rc = sqlite3_open_v2(path, &c->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "cannot open %s: %s", path,
                 c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        return rc;
    }
    sqlite3_busy_timeout(c->db, 10000);
    sqlite3_extended_result_codes(c->db, 1);
    return SQLITE_OK;
}

/* Each thread sticks to one reader slot (assigned round-robin on first use),
 * so readers rarely contend. */
static conn *reader(partd_store *s)
{
    static _Thread_local int slot = -1;
    if (slot < 0)
        slot = (int)(atomic_fetch_add(&s->next_reader, 1) % N_READERS);
    conn *c = &s->readers[slot];
    pthread_mutex_lock(&c->lock);
    return c;
}

static conn *writer(partd_store *s)
{
    pthread_mutex_lock(&s->writer.lock);
    return &s->writer;
}

static void release(conn *c)
{
    pthread_mutex_unlock(&c->lock);
}

static int write_failed(partd_store *s, conn *c, const char *what)
{
    atomic_store(&s->healthy, 0);
    partd_log_msg("error", "store", "%s failed: %s", what, sqlite3_errmsg(c->db));
    return PARTD_EIO;
}

static int exec(conn *c, const char *sql)
{
    return sqlite3_exec(c->db, sql, NULL, NULL, NULL);
}

/* ---- open -------------------------------------------------------------- */

static int is_corruption(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

static int pragma_int(conn *c, const char *sql, int *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

static int check_integrity(conn *c, char *err, size_t cap, int *exit_code)
{
    int app_id = 0, version = 0, tables = 0;
    int rc = pragma_int(c, "PRAGMA application_id", &app_id);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "SELECT count(*) FROM sqlite_master", &tables);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store is unreadable: %s", sqlite3_errmsg(c->db));
        *exit_code = is_corruption(rc) ? PARTD_EXIT_STORE_CORRUPT : PARTD_EXIT_STORE_UNWRITABLE;
        return -1;
    }
    if (tables > 0 && (app_id != APPLICATION_ID || version > SCHEMA_VERSION)) {
        snprintf(err, cap, "the store is not a partd store of schema %d or older "
                 "(application_id %d, user_version %d); refusing to touch it",
                 SCHEMA_VERSION, app_id, version);
        *exit_code = PARTD_EXIT_STORE_CORRUPT;
        return -1;
    }
    sqlite3_stmt *st;
    rc = sqlite3_prepare_v2(c->db, "PRAGMA quick_check", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const char *verdict = (const char *)sqlite3_column_text(st, 0);
            if (!verdict || strcmp(verdict, "ok") != 0) {
                snprintf(err, cap, "the store failed SQLite's integrity check: %s; "
                         "restore it from a backup or move it away",
                         verdict ? verdict : "(no answer)");
                sqlite3_finalize(st);
                *exit_code = PARTD_EXIT_STORE_CORRUPT;
                return -1;
            }
            rc = SQLITE_OK;
        }
        sqlite3_finalize(st);
    }
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store failed SQLite's integrity check: %s",
                 sqlite3_errmsg(c->db));
        *exit_code = PARTD_EXIT_STORE_CORRUPT;
        return -1;
    }
    return 0;
}

static int init_schema(conn *c, char *err, size_t cap, int *exit_code)
{
    char *msg = NULL;
    char sql[256];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             APPLICATION_ID, SCHEMA_VERSION);
    int version = 0;
    int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK && version == 1)
        rc = sqlite3_exec(c->db, MIGRATE_FROM_1, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->db, SCHEMA, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->db, sql, NULL, NULL, &msg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store cannot be written: %s",
                 msg ? msg : sqlite3_errmsg(c->db));
        sqlite3_free(msg);
        exec(c, "ROLLBACK");
        *exit_code = is_corruption(rc) ? PARTD_EXIT_STORE_CORRUPT : PARTD_EXIT_STORE_UNWRITABLE;
        return -1;
    }
    return 0;
}

#define CHECKPOINT_PERIOD_MS 1000

static void *checkpoint_main(void *arg)
{
    partd_store *s = arg;
    pthread_mutex_lock(&s->stop_lock);
    while (!s->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)CHECKPOINT_PERIOD_MS % 1000 * 1000000;
        ts.tv_sec += CHECKPOINT_PERIOD_MS / 1000 + ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&s->stop_cond, &s->stop_lock, &ts);
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->stop_lock);
        /* PASSIVE: copies what it can without blocking writers or readers. */
        sqlite3_wal_checkpoint_v2(s->checkpointer.db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                                  NULL);
        pthread_mutex_lock(&s->stop_lock);
    }
    pthread_mutex_unlock(&s->stop_lock);
    return NULL;
}

partd_store *partd_store_open(const char *dir, char *err, size_t cap, int *exit_code)
{
    *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create the data directory %s: %s", dir, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, cap, "the data directory %s is not a directory", dir);
        return NULL;
    }
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/partd.db", dir) >= sizeof path) {
        snprintf(err, cap, "the data directory path is too long");
        return NULL;
    }
    partd_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    atomic_store(&s->healthy, 1);
    pthread_mutex_init(&s->stop_lock, NULL);
    pthread_cond_init(&s->stop_cond, NULL);
    conn *w = &s->writer;
    int rc = conn_open(w, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, cap);
    if (rc != SQLITE_OK) {
        *exit_code = is_corruption(rc) ? PARTD_EXIT_STORE_CORRUPT : PARTD_EXIT_STORE_UNWRITABLE;
        goto fail;
    }
    if (check_integrity(w, err, cap, exit_code) != 0)
        goto fail;
    /* WAL: readers see the last commit while the writer works. */
    rc = exec(w, "PRAGMA journal_mode = WAL");
    if (rc == SQLITE_OK)
        rc = exec(w, "PRAGMA synchronous = FULL");
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store cannot be written (WAL mode): %s", sqlite3_errmsg(w->db));
        *exit_code = is_corruption(rc) ? PARTD_EXIT_STORE_CORRUPT : PARTD_EXIT_STORE_UNWRITABLE;
        goto fail;
    }
    if (init_schema(w, err, cap, exit_code) != 0)
        goto fail;
    for (int i = 0; i < N_READERS; i++) {
        rc = conn_open(&s->readers[i], path, SQLITE_OPEN_READONLY, err, cap);
        if (rc != SQLITE_OK) {
            *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
            goto fail;
        }
    }
    rc = conn_open(&s->checkpointer, path, SQLITE_OPEN_READWRITE, err, cap);
    if (rc != SQLITE_OK) {
        *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
        goto fail;
    }
    exec(w, "PRAGMA wal_autocheckpoint = 0");
    if (pthread_create(&s->checkpoint_thread, NULL, checkpoint_main, s) != 0) {
        snprintf(err, cap, "cannot start the store's checkpoint thread");
        *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
        goto fail;
    }
    s->checkpoint_running = 1;
    return s;
fail:
    partd_store_close(s);
    return NULL;
}

void partd_store_close(partd_store *s)
{
    if (!s)
        return;
    if (s->checkpoint_running) {
        pthread_mutex_lock(&s->stop_lock);
        s->stopping = 1;
        pthread_cond_signal(&s->stop_cond);
        pthread_mutex_unlock(&s->stop_lock);
        pthread_join(s->checkpoint_thread, NULL);
    }
    if (s->checkpointer.db)
        conn_close(&s->checkpointer);
    for (int i = 0; i < N_READERS; i++)
        if (s->readers[i].db)
            conn_close(&s->readers[i]);
    if (s->writer.db) {
        /* Folds the WAL back into the database file on a clean stop. */
        exec(&s->writer, "PRAGMA wal_checkpoint(TRUNCATE)");
        conn_close(&s->writer);
    }
    pthread_cond_destroy(&s->stop_cond);
    pthread_mutex_destroy(&s->stop_lock);
    free(s);
}

int partd_store_limit_size(partd_store *s, uint64_t max_bytes)
{
    if (max_bytes == 0)
        return PARTD_OK;
    conn *c = writer(s);
    int page = 0;
    int rc = pragma_int(c, "PRAGMA page_size", &page);
    if (rc == SQLITE_OK && page > 0) {
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %llu",
                 (unsigned long long)((max_bytes + (uint64_t)page - 1) / (uint64_t)page));
        rc = exec(c, sql);
    }
    release(c);
    return rc == SQLITE_OK ? PARTD_OK : PARTD_EIO;
}

int partd_store_healthy(partd_store *s)
{
    return atomic_load(&s->healthy);
}

/* ---- rows -------------------------------------------------------------- */

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *text)
{
    if (text)
        sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_blob_or_null(sqlite3_stmt *st, int i, const partd_blob *blob)
{
    if (blob->data)
        sqlite3_bind_blob64(st, i, blob->data, blob->len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_ms_or_null(sqlite3_stmt *st, int i, int64_t ms)
{
    if (ms > 0)
        sqlite3_bind_int64(st, i, ms);
    else
        sqlite3_bind_null(st, i);
}

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

/* Reads the JOB_COLUMNS starting at column 0. */
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
    if ((sqlite3_column_type(st, 9) != SQLITE_NULL && !row->summary) ||
        (sqlite3_column_type(st, 10) != SQLITE_NULL && !row->error)) {
        partd_job_row_clear(row);
        return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

int partd_store_insert_job(partd_store *s, const partd_job_row *row, const char *idem_key,
                           const char *digest, const void *body, size_t body_len)
{
    conn *c = writer(s);
    sqlite3_stmt *st = stmt(c, ST_INSERT_JOB);
    int rc = PARTD_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, partd_job_status_name(row->status), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, row->created_ms);
        bind_ms_or_null(st, 4, row->started_ms);
        bind_ms_or_null(st, 5, row->finished_ms);
        sqlite3_bind_text(st, 6, row->graph_hash, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, row->cache_key, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 8, row->cached);
        bind_text_or_null(st, 9, row->summary);
        bind_text_or_null(st, 10, row->error);
        sqlite3_bind_int(st, 11, row->error_status);
        bind_text_or_null(st, 12, idem_key);
        bind_text_or_null(st, 13, digest);
        if (body && !partd_job_finished(row->status))
            sqlite3_bind_blob64(st, 14, body, body_len, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 14);
        int step = sqlite3_step(st);
        if (step == SQLITE_DONE) {
            atomic_store(&s->healthy, 1);
            rc = PARTD_OK;
        } else if (step == SQLITE_CONSTRAINT_UNIQUE && idem_key) {
            rc = PARTD_STORE_CONFLICT;
        } else {
            rc = write_failed(s, c, "inserting a job");
        }
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

static int get_job_where(partd_store *s, enum stmt_id which, const char *key,
                         partd_job_row *row, char digest[72])
{
    conn *c = reader(s);
    sqlite3_stmt *st = stmt(c, which);
    int rc = PARTD_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW) {
            rc = read_row(st, row);
            if (digest)
                copy_column(st, 12, digest, 72);
        } else if (step == SQLITE_DONE) {
            rc = PARTD_STORE_MISSING;
        } else {
            partd_log_msg("error", "store", "reading a job failed: %s", sqlite3_errmsg(c->db));
        }
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

int partd_store_get_job(partd_store *s, const char *id, partd_job_row *row)
{
    return get_job_where(s, ST_GET_JOB, id, row, NULL);
}

int partd_store_get_job_by_idem(partd_store *s, const char *idem_key, partd_job_row *row,
                                char digest[72])
{
    return get_job_where(s, ST_GET_JOB_BY_IDEM, idem_key, row, digest);
}

int partd_store_mark_running(partd_store *s, const char *id, int64_t started_ms)
{
    conn *c = writer(s);
    sqlite3_stmt *st = stmt(c, ST_MARK_RUNNING);
    int rc = PARTD_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, started_ms);
        if (sqlite3_step(st) == SQLITE_DONE) {
            atomic_store(&s->healthy, 1);
            rc = PARTD_OK;
        } else {
            rc = write_failed(s, c, "marking a job running");
        }
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

static int step_done(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE;
}

static int finish_one(conn *c, const partd_job_row *row)
{
    if (row->status == PARTD_JOB_QUEUED || row->status == PARTD_JOB_RUNNING) {
        sqlite3_stmt *st = stmt(c, ST_REQUEUE_JOB);
        if (!st)
            return 0;
        sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
        return step_done(st);
    }
    sqlite3_stmt *st = stmt(c, ST_FINISH_JOB);
    if (!st)
        return 0;
    sqlite3_bind_text(st, 1, row->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, partd_job_status_name(row->status), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, row->finished_ms);
    bind_text_or_null(st, 4, row->summary);
    bind_text_or_null(st, 5, row->error);
    sqlite3_bind_int(st, 6, row->error_status);
    return step_done(st);
}

int partd_store_finish_jobs(partd_store *s, const partd_store_result *result,
                            const partd_job_row *const *rows, size_t n_rows)
{
    conn *c = writer(s);
    int ok = exec(c, "BEGIN IMMEDIATE") == SQLITE_OK;
    if (ok && result) {
        sqlite3_stmt *st = stmt(c, ST_PUT_RESULT);
        ok = st != NULL;
        if (ok) {
            sqlite3_bind_text(st, 1, result->cache_key, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, result->etag, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, result->summary, -1, SQLITE_STATIC);
            const partd_blob *f = result->forms;
            sqlite3_bind_blob64(st, 4, f[PARTD_CODING_IDENTITY].data,
                                f[PARTD_CODING_IDENTITY].len, SQLITE_STATIC);
            sqlite3_bind_int64(st, 5, partd_now_ms());
            bind_blob_or_null(st, 6, &f[PARTD_CODING_ZSTD]);
            bind_blob_or_null(st, 7, &f[PARTD_CODING_GZIP]);
            ok = step_done(st);
        }
    }
    for (size_t i = 0; ok && i < n_rows; i++)
        ok = finish_one(c, rows[i]);
    if (ok)
        ok = exec(c, "COMMIT") == SQLITE_OK;
    int rc = PARTD_OK;
    if (!ok) {
        rc = write_failed(s, c, "finishing jobs");
        exec(c, "ROLLBACK");
    } else {
        atomic_store(&s->healthy, 1);
    }
    release(c);
    return rc;
}

int partd_store_get_result(partd_store *s, const char *cache_key,
                           partd_blob *forms, char etag[72], char **summary)
{
    memset(forms, 0, PARTD_CODINGS * sizeof *forms);
    *summary = NULL;
    conn *c = reader(s);
    sqlite3_stmt *st = stmt(c, ST_GET_RESULT);
    int rc = PARTD_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, cache_key, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step == SQLITE_ROW) {
            rc = column_blob(st, 0, &forms[PARTD_CODING_IDENTITY]);
            if (rc == PARTD_OK)
                rc = column_blob(st, 3, &forms[PARTD_CODING_ZSTD]);
            if (rc == PARTD_OK)
                rc = column_blob(st, 4, &forms[PARTD_CODING_GZIP]);
            if (rc == PARTD_OK && !(*summary = column_dup(st, 2)))
                rc = PARTD_ENOMEM;
            if (rc == PARTD_OK && !forms[PARTD_CODING_IDENTITY].data)
                rc = PARTD_EIO; /* NOT NULL in the schema: the row is damaged */
            if (rc == PARTD_OK) {
                copy_column(st, 1, etag, 72);
            } else {
                partd_blobs_free(forms);
                free(*summary);
                *summary = NULL;
            }
        } else if (step == SQLITE_DONE) {
            rc = PARTD_STORE_MISSING;
        } else {
            partd_log_msg("error", "store", "reading a result failed: %s", sqlite3_errmsg(c->db));
        }
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

int partd_store_touch_result(partd_store *s, const char *cache_key, int64_t now_ms)
{
    conn *c = writer(s);
    sqlite3_stmt *st = stmt(c, ST_TOUCH_RESULT);
    int rc = PARTD_EIO;
    if (st) {
        sqlite3_bind_text(st, 1, cache_key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now_ms);
        if (step_done(st)) {
            atomic_store(&s->healthy, 1);
            rc = sqlite3_changes(c->db) > 0 ? PARTD_OK : PARTD_STORE_MISSING;
        } else {
            rc = write_failed(s, c, "touching a result");
        }
    }
    release(c);
    return rc;
}

int partd_store_list(partd_store *s, int status, int64_t before_seq, unsigned limit,
                     partd_store_row_fn fn, void *ctx)
{
    conn *c = reader(s);
    sqlite3_stmt *st = stmt(c, ST_LIST);
    int rc = PARTD_EIO;
    if (st) {
        if (status >= 0)
            sqlite3_bind_text(st, 1, partd_job_status_name((partd_job_status)status), -1,
                              SQLITE_STATIC);
        if (before_seq > 0)
            sqlite3_bind_int64(st, 2, before_seq);
        sqlite3_bind_int(st, 3, (int)limit);
        int step;
        rc = PARTD_OK;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            partd_job_row row;
            if (read_row(st, &row) != PARTD_OK) {
                rc = PARTD_ENOMEM;
                break;
            }
            fn(&row, ctx);
            partd_job_row_clear(&row);
        }
        if (rc == PARTD_OK && step != SQLITE_DONE) {
            partd_log_msg("error", "store", "listing jobs failed: %s", sqlite3_errmsg(c->db));
            rc = PARTD_EIO;
        }
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

int partd_store_pending(partd_store *s, partd_store_pending_fn fn, void *ctx)
{
    /* A reader: the callback may write through the writer meanwhile (WAL
     * keeps this snapshot stable). */
    conn *c = reader(s);
    sqlite3_stmt *st = stmt(c, ST_PENDING);
    int rc = PARTD_EIO;
    if (st) {
        int step;
        rc = PARTD_OK;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            partd_job_row row;
            if (read_row(st, &row) != PARTD_OK) {
                rc = PARTD_ENOMEM;
                break;
            }
            const char *body = sqlite3_column_blob(st, 12);
            size_t len = (size_t)sqlite3_column_bytes(st, 12);
            fn(&row, body ? body : "", len, ctx);
            partd_job_row_clear(&row);
        }
        if (rc == PARTD_OK && step != SQLITE_DONE)
            rc = PARTD_EIO;
        sqlite3_reset(st);
    }
    release(c);
    return rc;
}

int partd_store_sweep(partd_store *s, int64_t cutoff_ms, void (*fn)(const char *key, void *ctx),
                      void *ctx, unsigned *jobs_deleted, unsigned *results_deleted)
{
    conn *c = writer(s);
    *jobs_deleted = *results_deleted = 0;
    int ok = exec(c, "BEGIN IMMEDIATE") == SQLITE_OK;
    sqlite3_stmt *st = ok ? stmt(c, ST_SWEEP_RESULT_KEYS) : NULL;
    ok = st != NULL;
    if (ok) {
        sqlite3_bind_int64(st, 1, cutoff_ms);
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW)
            if (fn)
                fn((const char *)sqlite3_column_text(st, 0), ctx);
        ok = step == SQLITE_DONE;
        sqlite3_reset(st);
    }
    if (ok) {
        ok = (st = stmt(c, ST_SWEEP_RESULTS)) != NULL;
        if (ok) {
            sqlite3_bind_int64(st, 1, cutoff_ms);
            ok = step_done(st);
            *results_deleted = (unsigned)sqlite3_changes(c->db);
        }
    }
    if (ok) {
        ok = (st = stmt(c, ST_SWEEP_JOBS)) != NULL;
        if (ok) {
            sqlite3_bind_int64(st, 1, cutoff_ms);
            ok = step_done(st);
            *jobs_deleted = (unsigned)sqlite3_changes(c->db);
        }
    }
    if (ok)
        ok = exec(c, "COMMIT") == SQLITE_OK;
    int rc = PARTD_OK;
    if (!ok) {
        rc = write_failed(s, c, "the retention sweep");
        exec(c, "ROLLBACK");
        *jobs_deleted = *results_deleted = 0;
    }
    release(c);
    return rc;
}

int partd_store_probe(partd_store *s)
{
    conn *c = writer(s);
    char sql[96];
    /* Rewriting the unchanged schema version is a real (one-page) write. */
    snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; PRAGMA user_version = %d; COMMIT",
             SCHEMA_VERSION);
    int rc = PARTD_OK;
    if (exec(c, sql) == SQLITE_OK) {
        atomic_store(&s->healthy, 1);
    } else {
        exec(c, "ROLLBACK");
        rc = PARTD_EIO;
    }
    release(c);
    return rc;
}
