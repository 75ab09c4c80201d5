/*
 * sqlite_internal.h - the SQLite backend's state, shared by its two files:
 * store_sqlite_schema.c (connections, open with integrity check and schema
 * migration, checkpoints, close, size cap, health probe) and store_sqlite.c
 * (the job and result operations, and the partd_store_sqlite_ops table).
 * Private to the backend: its names are partd__sqlite_*, and only the ops
 * table is public (store_backend.h).
 *
 * Threads: one write connection behind a mutex, and a small pool of read
 * connections (WAL readers never block the writer), so any operation may run
 * on any thread. A separate connection and thread run the checkpoints.
 *
 * Ownership: partd__sqlite_open allocates the partd__sqlite_store (its
 * connections, statements and thread); partd__sqlite_close frees all of it.
 *
 * Errors: as store.h (PARTD_OK, a negative PARTD_E* code, or
 * PARTD_STORE_MISSING / PARTD_STORE_CONFLICT); functions that return SQLite
 * codes say so.
 */
#ifndef PARTD_DAEMON_SQLITE_INTERNAL_H
#define PARTD_DAEMON_SQLITE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>

#include "store/store.h"

#define PARTD_SQLITE_READERS 8

/* Statements that read a job select its 14 columns first (store_sqlite.c's
 * read_row order); the digest or request body, when read, comes next. */
#define PARTD_SQLITE_JOB_COLUMNS 15

/* The statements of the operations; each connection prepares one on first
 * use and keeps it. */
typedef enum partd__sqlite_stmt_id {
    PARTD_SQLITE_ST_INSERT_JOB,
    PARTD_SQLITE_ST_GET_JOB,
    PARTD_SQLITE_ST_GET_JOB_BY_IDEM,
    PARTD_SQLITE_ST_MARK_RUNNING,
    PARTD_SQLITE_ST_FINISH_JOB,
    PARTD_SQLITE_ST_REQUEUE_JOB,
    PARTD_SQLITE_ST_CANCEL_JOB,
    PARTD_SQLITE_ST_JOB_EXISTS,
    PARTD_SQLITE_ST_PUT_RESULT,
    PARTD_SQLITE_ST_GET_RESULT,
    PARTD_SQLITE_ST_TOUCH_RESULT,
    PARTD_SQLITE_ST_LIST,
    PARTD_SQLITE_ST_PENDING,
    PARTD_SQLITE_ST_SWEEP_RESULT_KEYS,
    PARTD_SQLITE_ST_SWEEP_RESULTS,
    PARTD_SQLITE_ST_SWEEP_JOBS,
    PARTD_SQLITE_ST_COUNT
} partd__sqlite_stmt_id;

typedef struct partd__sqlite_conn {
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3_stmt *stmt[PARTD_SQLITE_ST_COUNT];
} partd__sqlite_conn;

typedef struct partd__sqlite_store {
    partd__sqlite_conn writer;
    partd__sqlite_conn readers[PARTD_SQLITE_READERS];
    /* Checkpoints run on their own connection and thread, so that folding a
     * large WAL (request bodies are stored) never stalls a writer. */
    partd__sqlite_conn checkpointer;
    pthread_t checkpoint_thread;
    int checkpoint_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond; /* wakes the checkpointer: stopping or wanted */
    int stopping;
    int checkpoint_wanted;    /* the WAL passed a quarter of its bound */
    char wal_path[4200];
    int page_size;
    /* The WAL's bound: past it the writer checkpoints after its commit (and
     * journal_size_limit cuts the file back), so that the log stays near it
     * whatever runs; a quarter of it wakes the checkpoint thread first. */
    atomic_uint_fast64_t wal_limit;
    /* Pages the database file may hold (max_page_count), 0 = no cap. */
    atomic_uint_fast64_t max_pages;
    atomic_uint next_reader;
    atomic_int healthy; /* 0 after a failed write, 1 after a successful one */
} partd__sqlite_store;

/* ---- store_sqlite_schema.c ---------------------------------------------- */

/* The state for "sqlite" (DIR/partd.db), or NULL with err and *exit_code. */
void *partd__sqlite_open(const char *url, const char *data_dir, char *err, size_t cap,
                         int *exit_code);
void partd__sqlite_close(void *state);
int partd__sqlite_limit_size(void *state, uint64_t max_bytes);
int partd__sqlite_room(void *state, uint64_t *bytes);
int partd__sqlite_healthy(void *state);
int partd__sqlite_probe(void *state);

/* The connection locked for the caller: the writer, or this thread's reader
 * slot. partd__sqlite_release unlocks it. */
partd__sqlite_conn *partd__sqlite_writer(partd__sqlite_store *s);
partd__sqlite_conn *partd__sqlite_reader(partd__sqlite_store *s);
void partd__sqlite_release(partd__sqlite_conn *c);

/* A failed write: the store turns unhealthy and the reason is logged.
 * Returns PARTD_EIO. */
int partd__sqlite_write_failed(partd__sqlite_store *s, partd__sqlite_conn *c, const char *what);

/* Statement `id` of connection c, prepared on first use, else reset with its
 * bindings cleared; NULL (logged) when it cannot be prepared. */
sqlite3_stmt *partd__sqlite_stmt(partd__sqlite_conn *c, partd__sqlite_stmt_id id);

/* sqlite3_exec without a callback; returns the SQLite code. */
int partd__sqlite_exec(partd__sqlite_conn *c, const char *sql);

#endif
