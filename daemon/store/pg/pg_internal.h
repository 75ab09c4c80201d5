/*
 * pg_internal.h - the PostgreSQL backend's state, shared by its files:
 * store_pg_conn.c (connection pool with reconnect backoff, open with schema
 * creation and migration, health, the LISTEN connection, close, query
 * parameters), store_pg_row.c (reading binary results: values and job
 * rows), store_pg.c (job and result operations, the partd_store_pg_ops
 * table) and store_pg_claim.c (work sharing: claiming queued and orphaned
 * jobs, renewing leases, counting the queue), store_pg_libpq.c (libpq,
 * loaded when a PostgreSQL store is opened: the PQ* names the backend
 * uses call through its table, below). Private to the backend:
 * its names are partd__pg_*, and only the ops table is public
 * (store_backend.h).
 *
 * Threads: a small pool of connections, each behind its own mutex, so any
 * operation may run on any thread; a call takes one connection for its
 * duration. The LISTEN connection belongs to the loop thread alone.
 * Every call is bounded in time: connect_timeout, statement_timeout and TCP
 * user timeout on every connection, and while the server is unreachable a
 * reconnect is tried at most once per backoff period (calls in between fail
 * at once with PARTD_EIO).
 *
 * Round trips: every statement sent (or pipeline of statements, sent
 * together and answered together) counts one in round_trips, which
 * partd_store_round_trips reports; the tests hold the per-job figures to it.
 *
 * The queue's depth (partd__pg_count_queued) is cached for up to
 * QUEUED_MAX_AGE_MS and adjusted by this replica's own inserts and claims
 * in between; a requeue or cancel here drops the cached figure.
 *
 * Values: parameters go as text (bytea as binary); results come in binary
 * format (store_pg_row.c's readers decode int4/int8/bool/text/bytea).
 *
 * Ownership: partd__pg_open allocates the partd__pg_store and its
 * connections; partd__pg_close frees all of it. A PGresult handed back is
 * the caller's (PQclear).
 *
 * Errors: as store.h.
 */
#ifndef PARTD_DAEMON_PG_INTERNAL_H
#define PARTD_DAEMON_PG_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "partd/dynlib.h"
#include "store/store.h"

/* libpq's functions, loaded by partd__pg_libpq_load (store_pg_libpq.c)
 * when a store is opened; a function added here goes in both lists. */
#define PARTD__PG_LIBPQ_FUNCTIONS(X, p)                     \
    X(p, PQclear)                                           \
    X(p, PQcmdTuples)                                       \
    X(p, PQconnectdbParams)                                 \
    X(p, PQconsumeInput)                                    \
    X(p, PQenterPipelineMode)                               \
    X(p, PQerrorMessage)                                    \
    X(p, PQexec)                                            \
    X(p, PQexecParams)                                      \
    X(p, PQexitPipelineMode)                                \
    X(p, PQfinish)                                          \
    X(p, PQfreemem)                                         \
    X(p, PQftype)                                           \
    X(p, PQgetResult)                                       \
    X(p, PQgetisnull)                                       \
    X(p, PQgetlength)                                       \
    X(p, PQgetvalue)                                        \
    X(p, PQnotifies)                                        \
    X(p, PQntuples)                                         \
    X(p, PQpipelineSync)                                    \
    X(p, PQresultErrorField)                                \
    X(p, PQresultErrorMessage)                              \
    X(p, PQresultStatus)                                    \
    X(p, PQsendQueryParams)                                 \
    X(p, PQsetnonblocking)                                  \
    X(p, PQsocket)                                          \
    X(p, PQstatus)

PARTD_DYNLIB_DECLARE(partd__pg_libpq, PARTD__PG_LIBPQ_FUNCTIONS)

#define PQclear PARTD_DYNLIB_FN(partd__pg_libpq, PQclear)
#define PQcmdTuples PARTD_DYNLIB_FN(partd__pg_libpq, PQcmdTuples)
#define PQconnectdbParams PARTD_DYNLIB_FN(partd__pg_libpq, PQconnectdbParams)
#define PQconsumeInput PARTD_DYNLIB_FN(partd__pg_libpq, PQconsumeInput)
#define PQenterPipelineMode PARTD_DYNLIB_FN(partd__pg_libpq, PQenterPipelineMode)
#define PQerrorMessage PARTD_DYNLIB_FN(partd__pg_libpq, PQerrorMessage)
#define PQexec PARTD_DYNLIB_FN(partd__pg_libpq, PQexec)
#define PQexecParams PARTD_DYNLIB_FN(partd__pg_libpq, PQexecParams)
#define PQexitPipelineMode PARTD_DYNLIB_FN(partd__pg_libpq, PQexitPipelineMode)
#define PQfinish PARTD_DYNLIB_FN(partd__pg_libpq, PQfinish)
#define PQfreemem PARTD_DYNLIB_FN(partd__pg_libpq, PQfreemem)
#define PQftype PARTD_DYNLIB_FN(partd__pg_libpq, PQftype)
#define PQgetResult PARTD_DYNLIB_FN(partd__pg_libpq, PQgetResult)
#define PQgetisnull PARTD_DYNLIB_FN(partd__pg_libpq, PQgetisnull)
#define PQgetlength PARTD_DYNLIB_FN(partd__pg_libpq, PQgetlength)
#define PQgetvalue PARTD_DYNLIB_FN(partd__pg_libpq, PQgetvalue)
#define PQnotifies PARTD_DYNLIB_FN(partd__pg_libpq, PQnotifies)
#define PQntuples PARTD_DYNLIB_FN(partd__pg_libpq, PQntuples)
#define PQpipelineSync PARTD_DYNLIB_FN(partd__pg_libpq, PQpipelineSync)
#define PQresultErrorField PARTD_DYNLIB_FN(partd__pg_libpq, PQresultErrorField)
#define PQresultErrorMessage PARTD_DYNLIB_FN(partd__pg_libpq, PQresultErrorMessage)
#define PQresultStatus PARTD_DYNLIB_FN(partd__pg_libpq, PQresultStatus)
#define PQsendQueryParams PARTD_DYNLIB_FN(partd__pg_libpq, PQsendQueryParams)
#define PQsetnonblocking PARTD_DYNLIB_FN(partd__pg_libpq, PQsetnonblocking)
#define PQsocket PARTD_DYNLIB_FN(partd__pg_libpq, PQsocket)
#define PQstatus PARTD_DYNLIB_FN(partd__pg_libpq, PQstatus)

#define PARTD_PG_CONNS 6
#define PARTD_PG_MAX_PARAMS 16

/* The database's clock in epoch ms: leases are compared on one clock,
 * whatever the replicas' clocks say. */
#define PARTD_PG_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* The channel replicas LISTEN on for new or released jobs. */
#define PARTD_PG_CHANNEL "partd_jobs"

typedef struct partd__pg_conn {
    pthread_mutex_t lock;
    PGconn *pg; /* NULL while disconnected */
} partd__pg_conn;

typedef struct partd__pg_store {
    char *url;
    partd__pg_conn conns[PARTD_PG_CONNS];
    atomic_uint next_conn;
    atomic_int healthy;            /* 0 after a failed call, 1 after a good one */
    pthread_mutex_t backoff_lock;
    int64_t next_connect_ms;       /* monotonic: no reconnect before */
    int64_t backoff_ms;
    atomic_llong lease_ms;         /* the lease claims last used */
    PGconn *listener;              /* one thread at a time (jobs_share.c) */
    atomic_ullong round_trips;
    pthread_mutex_t queued_lock;
    int64_t queued;                /* the queue's depth when queued_ms > 0 */
    int64_t queued_ms;             /* monotonic ms it was counted; 0 = not known */
} partd__pg_store;

/* A query's parameters, built one after another (NULL = SQL NULL). */
typedef struct partd__pg_params {
    int n;
    const char *values[PARTD_PG_MAX_PARAMS];
    int lengths[PARTD_PG_MAX_PARAMS];
    int formats[PARTD_PG_MAX_PARAMS];
    char numbers[PARTD_PG_MAX_PARAMS][24];
} partd__pg_params;

/* ---- store_pg_conn.c ------------------------------------------------------ */

void partd__pg_param_text(partd__pg_params *p, const char *text);
void partd__pg_param_i64(partd__pg_params *p, int64_t v);
/* Times of 0 mean "not yet": NULL. */
void partd__pg_param_ms(partd__pg_params *p, int64_t ms);
void partd__pg_param_bytes(partd__pg_params *p, const void *data, size_t len);

void *partd__pg_open(const char *url, const char *data_dir, char *err, size_t cap,
                     int *exit_code);
void partd__pg_close(void *state);
int partd__pg_limit_size(void *state, uint64_t max_bytes);
int partd__pg_healthy(void *state);
int partd__pg_probe(void *state);
uint64_t partd__pg_round_trips(void *state);

/* A connected connection, locked for the caller, or NULL (logged) when the
 * server cannot be reached now. partd__pg_release unlocks it. */
partd__pg_conn *partd__pg_acquire(partd__pg_store *s);
void partd__pg_release(partd__pg_store *s, partd__pg_conn *c);

/* Runs sql with params (may be NULL) on c; results in binary format. Returns
 * the result when its status is PGRES_COMMAND_OK or PGRES_TUPLES_OK (the
 * store turns healthy), else NULL: a lost connection is dropped (reconnected
 * on a later call) and the store turns unhealthy, logged as `what`. When
 * `sqlstate` is not NULL it receives the error's SQLSTATE ("" if none). */
PGresult *partd__pg_exec(partd__pg_store *s, partd__pg_conn *c, const char *sql,
                         const partd__pg_params *params, const char *what, char sqlstate[6]);
/* Runs n statements (each with its params, none with rows to read back but
 * their tuple counts) in one pipeline: sent together, run by the server in
 * one implicit transaction (all or nothing), answered in one round trip.
 * PARTD_OK with ntuples[i] (when not NULL) set to statement i's row count,
 * or PARTD_EIO (logged as `what`; nothing of it committed; a lost or
 * confused connection is dropped). */
int partd__pg_pipeline(partd__pg_store *s, partd__pg_conn *c, size_t n, const char *const *sql,
                       const partd__pg_params *params, const char *what, int *ntuples);
/* partd__pg_exec of a statement without rows: PARTD_OK or PARTD_EIO. */
int partd__pg_command(partd__pg_store *s, partd__pg_conn *c, const char *sql, const char *what);

/* The LISTEN connection's socket (connecting it when needed), or -1. */
int partd__pg_listen_fd(void *state);
/* After the socket turned readable: 1 when notifications arrived, 0 when
 * none, -1 when the connection is lost (the caller stops watching the
 * socket first, then calls partd__pg_listen_reset). */
int partd__pg_listen_consume(void *state);
void partd__pg_listen_reset(void *state);

/* ---- store_pg_row.c -------------------------------------------------------- */

/* The job columns every job query selects first, in partd__pg_read_job's
 * order. */
#define PARTD_PG_JOB_COLUMNS \
    "id, seq, status, created_ms, started_ms, finished_ms, graph_hash, cache_key, " \
    "cached, summary, error, error_status, attempts, runner, about"
#define PARTD_PG_N_JOB_COLUMNS 15

/* Reads row `i` of a binary result's job columns. PARTD_OK or ENOMEM. */
int partd__pg_read_job(const PGresult *res, int i, partd_job_row *row);
/* An int4, int8 or bool column as a number (0 for SQL NULL). */
int64_t partd__pg_int(const PGresult *res, int i, int col);
/* A malloc'd copy of a text column (NULL for SQL NULL or ENOMEM). */
char *partd__pg_text_dup(const PGresult *res, int i, int col);
/* A text column into out[cap], cut to fit ("" for SQL NULL). */
void partd__pg_text_copy(const PGresult *res, int i, int col, char *out, size_t cap);
/* A malloc'd copy of a bytea column, NUL-terminated past its length (data
 * NULL for SQL NULL). PARTD_OK or PARTD_ENOMEM. */
int partd__pg_bytes_dup(const PGresult *res, int i, int col, partd_blob *out);

/* ---- store_pg_claim.c ------------------------------------------------------ */

int partd__pg_claim(void *state, const char *runner, int64_t lease_ms, unsigned max_jobs,
                    int max_attempts, partd_store_claimed_fn fn, void *ctx);
int64_t partd__pg_count_queued(void *state);
/* The cached depth of the queue: adds delta to it when it is known; with
 * forget, drops it (the next count asks the server). */
void partd__pg_queued_changed(partd__pg_store *s, int64_t delta, int forget);
int partd__pg_renew(void *state, const char *runner, int64_t lease_ms,
                    const partd_store_lease *leases, size_t n, partd_store_key_fn lost,
                    void *ctx);

#endif
