/*
 * store_pg.h - the PostgreSQL backend's state, shared by its files:
 * store_pg_conn.c (connection pool with reconnect backoff, open with schema
 * creation and migration, health, the LISTEN connection, close),
 * store_pg.c (job and result operations, the partd_store_pg_ops table) and
 * store_pg_claim.c (work sharing: claiming queued and orphaned jobs,
 * renewing leases, counting the queue). Private to the backend.
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
 * The queue's depth (partd_pg_count_queued) is cached for up to
 * QUEUED_MAX_AGE_MS and adjusted by this replica's own inserts and claims
 * in between; a requeue or cancel here drops the cached figure.
 *
 * Values: parameters go as text (bytea as binary); results come in binary
 * format (store_pg.c's readers decode int4/int8/bool/text/bytea).
 *
 * Ownership: partd_pg_open allocates the partd_pg_store and its
 * connections; partd_pg_close frees all of it. A PGresult handed back is
 * the caller's (PQclear).
 *
 * Errors: as store.h.
 */
#ifndef PARTD_DAEMON_STORE_PG_H
#define PARTD_DAEMON_STORE_PG_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define PARTD_PG_CONNS 6
#define PARTD_PG_MAX_PARAMS 16

/* The database's clock in epoch ms: leases are compared on one clock,
 * whatever the replicas' clocks say. */
#define PARTD_PG_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

/* The channel replicas LISTEN on for new or released jobs. */
#define PARTD_PG_CHANNEL "partd_jobs"

typedef struct partd_pg_conn {
    pthread_mutex_t lock;
    PGconn *pg; /* NULL while disconnected */
} partd_pg_conn;

typedef struct partd_pg_store {
    char *url;
    partd_pg_conn conns[PARTD_PG_CONNS];
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
} partd_pg_store;

/* A query's parameters, built one after another (NULL = SQL NULL). */
typedef struct partd_pg_params {
    int n;
    const char *values[PARTD_PG_MAX_PARAMS];
    int lengths[PARTD_PG_MAX_PARAMS];
    int formats[PARTD_PG_MAX_PARAMS];
    char numbers[PARTD_PG_MAX_PARAMS][24];
} partd_pg_params;

void partd_pg_param_text(partd_pg_params *p, const char *text);
void partd_pg_param_i64(partd_pg_params *p, int64_t v);
/* Times of 0 mean "not yet": NULL. */
void partd_pg_param_ms(partd_pg_params *p, int64_t ms);
void partd_pg_param_bytes(partd_pg_params *p, const void *data, size_t len);

/* ---- store_pg_conn.c ------------------------------------------------------ */

void *partd_pg_open(const char *url, const char *data_dir, char *err, size_t cap,
                    int *exit_code);
void partd_pg_close(void *state);
int partd_pg_limit_size(void *state, uint64_t max_bytes);
int partd_pg_healthy(void *state);
int partd_pg_probe(void *state);
uint64_t partd_pg_round_trips(void *state);
/* The cached depth of the queue: adds delta to it when it is known; with
 * forget, drops it (the next count asks the server). */
void partd_pg_queued_changed(partd_pg_store *s, int64_t delta, int forget);

/* A connected connection, locked for the caller, or NULL (logged) when the
 * server cannot be reached now. partd_pg_release unlocks it. */
partd_pg_conn *partd_pg_acquire(partd_pg_store *s);
void partd_pg_release(partd_pg_store *s, partd_pg_conn *c);

/* Runs sql with params (may be NULL) on c; results in binary format. Returns
 * the result when its status is PGRES_COMMAND_OK or PGRES_TUPLES_OK (the
 * store turns healthy), else NULL: a lost connection is dropped (reconnected
 * on a later call) and the store turns unhealthy, logged as `what`. When
 * `sqlstate` is not NULL it receives the error's SQLSTATE ("" if none). */
PGresult *partd_pg_exec(partd_pg_store *s, partd_pg_conn *c, const char *sql,
                        const partd_pg_params *params, const char *what, char sqlstate[6]);
/* Runs n statements (each with its params, none with rows to read back but
 * their tuple counts) in one pipeline: sent together, run by the server in
 * one implicit transaction (all or nothing), answered in one round trip.
 * PARTD_OK with ntuples[i] (when not NULL) set to statement i's row count,
 * or PARTD_EIO (logged as `what`; nothing of it committed; a lost or
 * confused connection is dropped). */
int partd_pg_pipeline(partd_pg_store *s, partd_pg_conn *c, size_t n, const char *const *sql,
                      const partd_pg_params *params, const char *what, int *ntuples);
/* partd_pg_exec of a statement without rows: PARTD_OK or PARTD_EIO. */
int partd_pg_command(partd_pg_store *s, partd_pg_conn *c, const char *sql, const char *what);

/* The LISTEN connection's socket (connecting it when needed), or -1. */
int partd_pg_listen_fd(void *state);
/* After the socket turned readable: 1 when notifications arrived, 0 when
 * none, -1 when the connection is lost (the caller stops watching the
 * socket first, then calls partd_pg_listen_reset). */
int partd_pg_listen_consume(void *state);
void partd_pg_listen_reset(void *state);

/* ---- store_pg.c ------------------------------------------------------------ */

/* The job columns every job query selects first, in read_row's order. */
#define PARTD_PG_JOB_COLUMNS \
    "id, seq, status, created_ms, started_ms, finished_ms, graph_hash, cache_key, " \
    "cached, summary, error, error_status, attempts, runner"
#define PARTD_PG_N_JOB_COLUMNS 14

/* Reads row `i` of a binary result's job columns. PARTD_OK or ENOMEM. */
int partd_pg_read_job(const PGresult *res, int i, partd_job_row *row);
/* A malloc'd copy of a text column (NULL for SQL NULL or ENOMEM). */
char *partd_pg_text_dup(const PGresult *res, int i, int col);
int64_t partd_pg_int(const PGresult *res, int i, int col);

/* ---- store_pg_claim.c ------------------------------------------------------ */

int partd_pg_claim(void *state, const char *runner, int64_t lease_ms, unsigned max_jobs,
                   int max_attempts, partd_store_claimed_fn fn, void *ctx);
int64_t partd_pg_count_queued(void *state);
int partd_pg_renew(void *state, const char *runner, int64_t lease_ms,
                   const partd_store_lease *leases, size_t n, partd_store_key_fn lost,
                   void *ctx);

#endif
