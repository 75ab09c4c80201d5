/*
 * store_sqlite.h - the SQLite backend's state, shared by its two files:
 * store_sqlite_schema.c (connections, open with integrity check and schema
 * migration, checkpoints, close, size cap, health probe) and store_sqlite.c
 * (the job and result operations, and the partd_store_sqlite_ops table).
 * Private to the backend.
 *
 * Threads: one write connection behind a mutex, and a small pool of read
 * connections (WAL readers never block the writer), so any operation may run
 * on any thread. A separate connection and thread run the checkpoints.
 *
 * Ownership: partd_sqlite_open allocates the partd_sqlite_store (its
 * connections, statements and thread); partd_sqlite_close frees all of it.
 *
 * Errors: as store.h (PARTD_OK, a negative PARTD_E* code, or
 * PARTD_STORE_MISSING / PARTD_STORE_CONFLICT); functions that return SQLite
 * codes say so.
 */
#ifndef PARTD_DAEMON_STORE_SQLITE_H
#define PARTD_DAEMON_STORE_SQLITE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>

#include "store.h"

#define PARTD_SQLITE_READERS 8

/* Statements that read a job select its 14 columns first (store_sqlite.c's
 * read_row order); the digest or request body, when read, comes next. */
#define PARTD_SQLITE_JOB_COLUMNS 14

/* The statements of the operations; each connection prepares one on first
 * use and keeps it. */
typedef enum partd_sqlite_stmt_id {
    PARTD_ST_INSERT_JOB,
    PARTD_ST_GET_JOB,
    PARTD_ST_GET_JOB_BY_IDEM,
    PARTD_ST_MARK_RUNNING,
    PARTD_ST_FINISH_JOB,
    PARTD_ST_REQUEUE_JOB,
    PARTD_ST_CANCEL_JOB,
    PARTD_ST_JOB_EXISTS,
    PARTD_ST_PUT_RESULT,
    PARTD_ST_GET_RESULT,
    PARTD_ST_TOUCH_RESULT,
    PARTD_ST_LIST,
    PARTD_ST_PENDING,
    PARTD_ST_SWEEP_RESULT_KEYS,
    PARTD_ST_SWEEP_RESULTS,
    PARTD_ST_SWEEP_JOBS,
    PARTD_ST_COUNT
} partd_sqlite_stmt_id;

typedef struct partd_sqlite_conn {
    pthread_mutex_t lock;
    sqlite3 *db;
    sqlite3_stmt *stmt[PARTD_ST_COUNT];
} partd_sqlite_conn;

typedef struct partd_sqlite_store {
    partd_sqlite_conn writer;
    partd_sqlite_conn readers[PARTD_SQLITE_READERS];
    /* Checkpoints run on their own connection and thread, so that folding a
     * large WAL (request bodies are stored) never stalls a writer. */
    partd_sqlite_conn checkpointer;
    pthread_t checkpoint_thread;
    int checkpoint_running;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    int stopping;
    atomic_uint next_reader;
    atomic_int healthy; /* 0 after a failed write, 1 after a successful one */
} partd_sqlite_store;

/* ---- store_sqlite_schema.c ---------------------------------------------- */

/* The state for "sqlite" (DIR/partd.db), or NULL with err and *exit_code. */
void *partd_sqlite_open(const char *url, const char *data_dir, char *err, size_t cap,
                        int *exit_code);
void partd_sqlite_close(void *state);
int partd_sqlite_limit_size(void *state, uint64_t max_bytes);
int partd_sqlite_healthy(void *state);
int partd_sqlite_probe(void *state);

/* The connection locked for the caller: the writer, or this thread's reader
 * slot. partd_sqlite_release unlocks it. */
partd_sqlite_conn *partd_sqlite_writer(partd_sqlite_store *s);
partd_sqlite_conn *partd_sqlite_reader(partd_sqlite_store *s);
void partd_sqlite_release(partd_sqlite_conn *c);

/* A failed write: the store turns unhealthy and the reason is logged.
 * Returns PARTD_EIO. */
int partd_sqlite_write_failed(partd_sqlite_store *s, partd_sqlite_conn *c, const char *what);

/* Statement `id` of connection c, prepared on first use, else reset with its
 * bindings cleared; NULL (logged) when it cannot be prepared. */
sqlite3_stmt *partd_sqlite_stmt(partd_sqlite_conn *c, partd_sqlite_stmt_id id);

/* sqlite3_exec without a callback; returns the SQLite code. */
int partd_sqlite_exec(partd_sqlite_conn *c, const char *sql);

#endif
