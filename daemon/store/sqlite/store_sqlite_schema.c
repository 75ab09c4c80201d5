/*
 * store_sqlite_schema.c - the SQLite backend's schema and life cycle: the
 * tables and the SQL of every statement (prepared once per connection),
 * open (the file is a partd store of a known schema and passes quick_check;
 * an older schema is migrated in place), WAL checkpoints on their own thread,
 * close, the size cap and the health probe. See sqlite_internal.h.
 *
 * Durability: WAL with synchronous=FULL, so a job row is on disk when an
 * insert returns and the 202 may go out.
 */
#include "sqlite_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "core/log.h"
#include "partd/partd.h"

#define APPLICATION_ID 0x70617274 /* "part" */
/* 2: attempts; 3: runner; 4: a job's request body may be a zstd frame
 * (intake.h), which no earlier partd can read, so it must refuse the store;
 * 5: what a job says of its request (job.h's about). */
#define SCHEMA_VERSION 5
#define CHECKPOINT_PERIOD_MS 1000
/* The WAL's bound without a size cap (with one: an eighth of the cap). */
#define WAL_LIMIT_BYTES ((uint64_t)8 << 20)
/* A WAL larger than this at close (a log left by an older partd) is left
 * for the next start, so that shutdown stays within its grace. */
#define WAL_FOLD_AT_CLOSE_BYTES (4 * WAL_LIMIT_BYTES)

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
    " request BLOB,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " runner TEXT,"
    " about TEXT);"
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

/* Schema 2 to 3: attempts and runner of jobs (a job that takes its runs
 * down is retried at most twice). Jobs before have made no counted run. */
static const char MIGRATE_FROM_2[] =
    "ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN runner TEXT;";

/* Schema 4 to 5: a job's about (graph name, mode, devices). Jobs before
 * have none, and their documents go without it. */
static const char MIGRATE_FROM_4[] = "ALTER TABLE jobs ADD COLUMN about TEXT;";

/* ---- statements ---------------------------------------------------------- */

/* PARTD_SQLITE_JOB_COLUMNS, in read_row's order (store_sqlite.c). */
#define JOB_COLUMNS \
    "id, seq, status, created_ms, started_ms, finished_ms, graph_hash, cache_key, " \
    "cached, summary, error, error_status, attempts, runner, about"

static const char *const SQL[PARTD_SQLITE_ST_COUNT] = {
    [PARTD_SQLITE_ST_INSERT_JOB] =
        "INSERT INTO jobs (id, status, created_ms, started_ms, finished_ms, graph_hash, "
        "cache_key, cached, summary, error, error_status, idempotency_key, request_digest, "
        "request, about) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
        "?15)",
    [PARTD_SQLITE_ST_GET_JOB] = "SELECT " JOB_COLUMNS " FROM jobs WHERE id = ?1",
    [PARTD_SQLITE_ST_GET_JOB_BY_IDEM] =
        "SELECT " JOB_COLUMNS ", request_digest FROM jobs WHERE idempotency_key = ?1",
    [PARTD_SQLITE_ST_MARK_RUNNING] = "UPDATE jobs SET status = 'running', started_ms = ?2, "
                              "attempts = attempts + 1, runner = ?3 WHERE id = ?1",
    [PARTD_SQLITE_ST_FINISH_JOB] =
        "UPDATE jobs SET status = ?2, finished_ms = ?3, summary = ?4, error = ?5, "
        "error_status = ?6, request = NULL, started_ms = COALESCE(?7, started_ms), "
        "cached = ?8 WHERE id = ?1",
    [PARTD_SQLITE_ST_REQUEUE_JOB] =
        "UPDATE jobs SET status = 'queued', started_ms = NULL, attempts = CASE "
        "WHEN status = 'running' AND attempts > 0 THEN attempts - 1 ELSE attempts END "
        "WHERE id = ?1",
    /* One statement: no other write can finish the job in between. */
    [PARTD_SQLITE_ST_CANCEL_JOB] =
        "UPDATE jobs SET status = 'cancelled', finished_ms = ?2, summary = NULL, "
        "error = NULL, error_status = 0, request = NULL "
        "WHERE id = ?1 AND status IN ('queued', 'running') RETURNING " JOB_COLUMNS,
    [PARTD_SQLITE_ST_JOB_EXISTS] = "SELECT 1 FROM jobs WHERE id = ?1",
    [PARTD_SQLITE_ST_PUT_RESULT] =
        "INSERT INTO results (cache_key, etag, summary, body, body_zstd, body_gzip, "
        "created_ms, used_ms) VALUES (?1, ?2, ?3, ?4, ?6, ?7, ?5, ?5) "
        "ON CONFLICT(cache_key) DO UPDATE SET used_ms = excluded.used_ms, "
        "etag = excluded.etag, summary = excluded.summary, body = excluded.body, "
        "body_zstd = excluded.body_zstd, body_gzip = excluded.body_gzip",
    [PARTD_SQLITE_ST_GET_RESULT] =
        "SELECT body, etag, summary, body_zstd, body_gzip FROM results WHERE cache_key = ?1",
    [PARTD_SQLITE_ST_TOUCH_RESULT] = "UPDATE results SET used_ms = ?2 WHERE cache_key = ?1",
    [PARTD_SQLITE_ST_LIST] = "SELECT " JOB_COLUMNS " FROM jobs WHERE (?1 IS NULL OR status = ?1) "
                      "AND (?2 IS NULL OR seq < ?2) ORDER BY seq DESC LIMIT ?3",
    [PARTD_SQLITE_ST_PENDING] = "SELECT " JOB_COLUMNS ", request FROM jobs "
                         "WHERE status IN ('queued', 'running') ORDER BY seq",
    [PARTD_SQLITE_ST_SWEEP_RESULT_KEYS] = "SELECT cache_key FROM results WHERE used_ms < ?1",
    [PARTD_SQLITE_ST_SWEEP_RESULTS] = "DELETE FROM results WHERE used_ms < ?1",
    [PARTD_SQLITE_ST_SWEEP_JOBS] =
        "DELETE FROM jobs WHERE finished_ms IS NOT NULL AND finished_ms < ?1",
};

sqlite3_stmt *partd__sqlite_stmt(partd__sqlite_conn *c, partd__sqlite_stmt_id id)
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

/* ---- connections --------------------------------------------------------- */

static void conn_close(partd__sqlite_conn *c)
{
    for (int i = 0; i < PARTD_SQLITE_ST_COUNT; i++)
        sqlite3_finalize(c->stmt[i]);
    if (c->db)
        sqlite3_close_v2(c->db);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

static int conn_open(partd__sqlite_conn *c, const char *path, int flags, char *err, size_t cap)
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
partd__sqlite_conn *partd__sqlite_reader(partd__sqlite_store *s)
{
    static _Thread_local int slot = -1;
    if (slot < 0)
        slot = (int)(atomic_fetch_add(&s->next_reader, 1) % PARTD_SQLITE_READERS);
    partd__sqlite_conn *c = &s->readers[slot];
    pthread_mutex_lock(&c->lock);
    return c;
}

partd__sqlite_conn *partd__sqlite_writer(partd__sqlite_store *s)
{
    pthread_mutex_lock(&s->writer.lock);
    return &s->writer;
}

void partd__sqlite_release(partd__sqlite_conn *c)
{
    pthread_mutex_unlock(&c->lock);
}

int partd__sqlite_write_failed(partd__sqlite_store *s, partd__sqlite_conn *c, const char *what)
{
    atomic_store(&s->healthy, 0);
    partd_log_msg("error", "store", "%s failed: %s", what, sqlite3_errmsg(c->db));
    return PARTD_EIO;
}

int partd__sqlite_exec(partd__sqlite_conn *c, const char *sql)
{
    return sqlite3_exec(c->db, sql, NULL, NULL, NULL);
}

/* ---- open ---------------------------------------------------------------- */

static int is_corruption(int rc)
{
    rc &= 0xff;
    return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

static int open_failure_code(int rc)
{
    return is_corruption(rc) ? PARTD_EXIT_STORE_CORRUPT : PARTD_EXIT_STORE_UNWRITABLE;
}

static int pragma_int(partd__sqlite_conn *c, const char *sql, int *out)
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

/* SQLite's quick_check: 0, or -1 with err and *exit_code. */
static int quick_check(partd__sqlite_conn *c, char *err, size_t cap, int *exit_code)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(c->db, "PRAGMA quick_check", -1, &st, NULL);
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

/* An empty database, or a partd store of this schema or an older one that
 * passes quick_check: 0. Else -1 with err and *exit_code. */
static int check_integrity(partd__sqlite_conn *c, char *err, size_t cap, int *exit_code)
{
    int app_id = 0, version = 0, tables = 0;
    int rc = pragma_int(c, "PRAGMA application_id", &app_id);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "SELECT count(*) FROM sqlite_master", &tables);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store is unreadable: %s", sqlite3_errmsg(c->db));
        *exit_code = open_failure_code(rc);
        return -1;
    }
    if (tables > 0 && (app_id != APPLICATION_ID || version > SCHEMA_VERSION)) {
        snprintf(err, cap, "the store is not a partd store of schema %d or older "
                 "(application_id %d, user_version %d); refusing to touch it",
                 SCHEMA_VERSION, app_id, version);
        *exit_code = PARTD_EXIT_STORE_CORRUPT;
        return -1;
    }
    return quick_check(c, err, cap, exit_code);
}

/* Creates the tables, or migrates an older schema, in one transaction. */
static int init_schema(partd__sqlite_conn *c, char *err, size_t cap, int *exit_code)
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
    if (rc == SQLITE_OK && version >= 1 && version <= 2)
        rc = sqlite3_exec(c->db, MIGRATE_FROM_2, NULL, NULL, &msg);
    if (rc == SQLITE_OK && version >= 1 && version <= 4)
        rc = sqlite3_exec(c->db, MIGRATE_FROM_4, NULL, NULL, &msg);
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
        partd__sqlite_exec(c, "ROLLBACK");
        *exit_code = open_failure_code(rc);
        return -1;
    }
    return 0;
}

/* Bytes of the WAL file now (0 when there is none). */
static uint64_t wal_file_bytes(const partd__sqlite_store *s)
{
    struct stat st;
    return stat(s->wal_path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* On the checkpoint thread: copies what it can into the database file
 * without blocking anyone; when that was everything, also cuts the file
 * back to nothing unless a writer or reader is in the way right now (its
 * connection does not wait), so that an idle store leaves no large log. */
static void checkpoint_once(partd__sqlite_store *s)
{
    int log = 0, done = 0;
    sqlite3 *db = s->checkpointer.db;
    if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done) ==
            SQLITE_OK &&
        log > 0 && done == log)
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
}

static void *checkpoint_main(void *arg)
{
    partd__sqlite_store *s = arg;
    pthread_mutex_lock(&s->stop_lock);
    while (!s->stopping) {
        if (!s->checkpoint_wanted) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += (long)CHECKPOINT_PERIOD_MS % 1000 * 1000000;
            ts.tv_sec += CHECKPOINT_PERIOD_MS / 1000 + ts.tv_nsec / 1000000000;
            ts.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&s->stop_cond, &s->stop_lock, &ts);
        }
        if (s->stopping)
            break;
        s->checkpoint_wanted = 0;
        pthread_mutex_unlock(&s->stop_lock);
        checkpoint_once(s);
        pthread_mutex_lock(&s->stop_lock);
    }
    pthread_mutex_unlock(&s->stop_lock);
    return NULL;
}

/* The writer's commit hook (sqlite3_wal_hook): `frames` is the WAL's length
 * in pages. Past a quarter of the bound the checkpoint thread is woken;
 * past the bound the writer checkpoints itself (PASSIVE: it never waits for
 * readers), so that the log cannot outgrow a thread that falls behind. */
static int on_wal_commit(void *arg, sqlite3 *db, const char *name, int frames)
{
    partd__sqlite_store *s = arg;
    uint64_t bytes = (uint64_t)frames * (uint64_t)s->page_size;
    uint64_t limit = atomic_load(&s->wal_limit);
    if (bytes >= limit) {
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    } else if (bytes >= limit / 4 && s->checkpoint_running) {
        pthread_mutex_lock(&s->stop_lock);
        s->checkpoint_wanted = 1;
        pthread_cond_signal(&s->stop_cond);
        pthread_mutex_unlock(&s->stop_lock);
    }
    return SQLITE_OK;
}

/* Sets the WAL's bound: the writer's checkpoint threshold and the size a
 * restarted log is cut back to. SQLite code. */
static int set_wal_limit(partd__sqlite_store *s, uint64_t limit)
{
    atomic_store(&s->wal_limit, limit);
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %llu", (unsigned long long)limit);
    return partd__sqlite_exec(&s->writer, sql);
}

/* DIR/partd.db into path, creating DIR when missing: 0, or -1 with err. */
static int store_path(const char *dir, char *path, size_t path_cap, char *err, size_t cap)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create the data directory %s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, cap, "the data directory %s is not a directory", dir);
        return -1;
    }
    if ((size_t)snprintf(path, path_cap, "%s/partd.db", dir) >= path_cap) {
        snprintf(err, cap, "the data directory path is too long");
        return -1;
    }
    return 0;
}

/* An existing partd.db of 0 bytes is no store at all (truncated, or made
 * by something else): SQLite would take it for a new, empty database and
 * the daemon would start with no jobs. Unless a write-ahead log holds its
 * content (a crash right after creation), refuse it: 0 or -1 with err. */
static int refuse_empty_file(const char *path, char *err, size_t cap, int *exit_code)
{
    struct stat st, wal;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 0)
        return 0;
    char wal_path[4200];
    snprintf(wal_path, sizeof wal_path, "%s-wal", path);
    if (stat(wal_path, &wal) == 0 && wal.st_size > 0)
        return 0;
    snprintf(err, cap, "the store %s is an empty file, not a partd store; refusing to start "
             "on it (restore it from a backup, or move it away to start with a new store)",
             path);
    *exit_code = PARTD_EXIT_STORE_CORRUPT;
    return -1;
}

/* The writer: opened, checked, in WAL mode, with the current schema. */
static int open_writer(partd__sqlite_conn *w, const char *path, char *err, size_t cap,
                       int *exit_code)
{
    if (refuse_empty_file(path, err, cap, exit_code) != 0)
        return -1;
    int rc = conn_open(w, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, cap);
    if (rc != SQLITE_OK) {
        *exit_code = open_failure_code(rc);
        return -1;
    }
    if (check_integrity(w, err, cap, exit_code) != 0)
        return -1;
    /* WAL: readers see the last commit while the writer works. */
    rc = partd__sqlite_exec(w, "PRAGMA journal_mode = WAL");
    if (rc == SQLITE_OK)
        rc = partd__sqlite_exec(w, "PRAGMA synchronous = FULL");
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "the store cannot be written (WAL mode): %s", sqlite3_errmsg(w->db));
        *exit_code = open_failure_code(rc);
        return -1;
    }
    return init_schema(w, err, cap, exit_code);
}

/* The readers, the checkpointer and its thread. */
static int open_helpers(partd__sqlite_store *s, const char *path, char *err, size_t cap)
{
    for (int i = 0; i < PARTD_SQLITE_READERS; i++)
        if (conn_open(&s->readers[i], path, SQLITE_OPEN_READONLY, err, cap) != SQLITE_OK)
            return -1;
    if (conn_open(&s->checkpointer, path, SQLITE_OPEN_READWRITE, err, cap) != SQLITE_OK)
        return -1;
    /* A connection learns that the database is in WAL mode on its first
     * read; until then a checkpoint through it does nothing at all. */
    int tables = 0;
    if (pragma_int(&s->checkpointer, "SELECT count(*) FROM sqlite_master", &tables) !=
            SQLITE_OK ||
        pragma_int(&s->writer, "PRAGMA page_size", &s->page_size) != SQLITE_OK ||
        s->page_size <= 0 || set_wal_limit(s, WAL_LIMIT_BYTES) != SQLITE_OK) {
        snprintf(err, cap, "cannot set up the store's checkpoints: %s",
                 sqlite3_errmsg(s->checkpointer.db));
        return -1;
    }
    /* The checkpoint thread's TRUNCATE gives way at once to any writer. */
    sqlite3_busy_timeout(s->checkpointer.db, 0);
    partd__sqlite_exec(&s->writer, "PRAGMA wal_autocheckpoint = 0");
    sqlite3_wal_hook(s->writer.db, on_wal_commit, s);
    if (pthread_create(&s->checkpoint_thread, NULL, checkpoint_main, s) != 0) {
        snprintf(err, cap, "cannot start the store's checkpoint thread");
        return -1;
    }
    s->checkpoint_running = 1;
    return 0;
}

void *partd__sqlite_open(const char *url, const char *dir, char *err, size_t cap,
                         int *exit_code)
{
    *exit_code = PARTD_EXIT_STORE_URL;
    if (strcasecmp(url, "sqlite") != 0) {
        snprintf(err, cap, "the sqlite store takes no location: it is partd.db in the "
                 "data directory (give \"sqlite\")");
        return NULL;
    }
    *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
    char path[4096];
    if (store_path(dir, path, sizeof path, err, cap) != 0)
        return NULL;
    partd__sqlite_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    snprintf(s->wal_path, sizeof s->wal_path, "%s-wal", path);
    atomic_store(&s->healthy, 1);
    pthread_mutex_init(&s->stop_lock, NULL);
    pthread_cond_init(&s->stop_cond, NULL);
    if (open_writer(&s->writer, path, err, cap, exit_code) != 0)
        goto fail;
    if (open_helpers(s, path, err, cap) != 0) {
        *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
        goto fail;
    }
    return s;
fail:
    partd__sqlite_close(s);
    return NULL;
}

void partd__sqlite_close(void *state)
{
    partd__sqlite_store *s = state;
    if (!s)
        return;
    if (s->checkpoint_running) {
        pthread_mutex_lock(&s->stop_lock);
        s->stopping = 1;
        pthread_cond_signal(&s->stop_cond);
        pthread_mutex_unlock(&s->stop_lock);
        /* A checkpoint under way stops between pages (the log stays valid). */
        sqlite3_interrupt(s->checkpointer.db);
        pthread_join(s->checkpoint_thread, NULL);
    }
    if (s->checkpointer.db)
        conn_close(&s->checkpointer);
    for (int i = 0; i < PARTD_SQLITE_READERS; i++)
        if (s->readers[i].db)
            conn_close(&s->readers[i]);
    if (s->writer.db) {
        /* Folds the WAL back into the database file on a clean stop: quick,
         * since it stays near its bound. A far larger one (left by an older
         * partd) is left for the next start rather than overrun the
         * shutdown's grace; SQLite reads it back as it is. */
        uint64_t wal = wal_file_bytes(s);
        if (wal <= WAL_FOLD_AT_CLOSE_BYTES)
            partd__sqlite_exec(&s->writer, "PRAGMA wal_checkpoint(TRUNCATE)");
        else
            partd_log_msg("warn", "store", "left a write-ahead log of %llu bytes to be "
                          "folded in at the next start", (unsigned long long)wal);
        conn_close(&s->writer);
    }
    pthread_cond_destroy(&s->stop_cond);
    pthread_mutex_destroy(&s->stop_lock);
    free(s);
}

/* The cap counts the WAL: the log gets an eighth of it (at most its usual
 * bound), twice over since a commit may overshoot the bound before the
 * writer checkpoints, and the database file the rest. */
int partd__sqlite_limit_size(void *state, uint64_t max_bytes)
{
    partd__sqlite_store *s = state;
    if (max_bytes == 0)
        return PARTD_OK;
    uint64_t page = (uint64_t)s->page_size;
    uint64_t wal = max_bytes / 8 < WAL_LIMIT_BYTES ? max_bytes / 8 : WAL_LIMIT_BYTES;
    if (wal < 4 * page)
        wal = 4 * page;
    uint64_t db = max_bytes > 2 * wal ? max_bytes - 2 * wal : page;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    int rc = set_wal_limit(s, wal);
    if (rc == SQLITE_OK) {
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %llu",
                 (unsigned long long)(db / page ? db / page : 1));
        rc = partd__sqlite_exec(c, sql);
    }
    int pages = 0; /* SQLite keeps at least the pages in use */
    if (rc == SQLITE_OK && (rc = pragma_int(c, "PRAGMA max_page_count", &pages)) == SQLITE_OK)
        atomic_store(&s->max_pages, (uint64_t)pages);
    partd__sqlite_release(c);
    return rc == SQLITE_OK ? PARTD_OK : PARTD_EIO;
}

/* The pages the cap leaves, free pages inside the file counted, as of the
 * last commit (a reader sees it). */
int partd__sqlite_room(void *state, uint64_t *bytes)
{
    partd__sqlite_store *s = state;
    uint64_t max_pages = atomic_load(&s->max_pages);
    if (max_pages == 0) {
        *bytes = UINT64_MAX;
        return PARTD_OK;
    }
    partd__sqlite_conn *c = partd__sqlite_reader(s);
    int pages = 0, free_pages = 0;
    int rc = pragma_int(c, "PRAGMA page_count", &pages);
    if (rc == SQLITE_OK)
        rc = pragma_int(c, "PRAGMA freelist_count", &free_pages);
    partd__sqlite_release(c);
    if (rc != SQLITE_OK)
        return PARTD_EIO;
    uint64_t used = (uint64_t)pages - (uint64_t)free_pages;
    *bytes = used < max_pages ? (max_pages - used) * (uint64_t)s->page_size : 0;
    return PARTD_OK;
}

int partd__sqlite_healthy(void *state)
{
    partd__sqlite_store *s = state;
    return atomic_load(&s->healthy);
}

int partd__sqlite_probe(void *state)
{
    partd__sqlite_store *s = state;
    partd__sqlite_conn *c = partd__sqlite_writer(s);
    char sql[96];
    /* Rewriting the unchanged schema version is a real (one-page) write. */
    snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; PRAGMA user_version = %d; COMMIT",
             SCHEMA_VERSION);
    int rc = PARTD_OK;
    if (partd__sqlite_exec(c, sql) == SQLITE_OK) {
        atomic_store(&s->healthy, 1);
    } else {
        partd__sqlite_exec(c, "ROLLBACK");
        rc = PARTD_EIO;
    }
    partd__sqlite_release(c);
    return rc;
}
