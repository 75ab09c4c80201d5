/*
 * store_pg_conn.c - the PostgreSQL backend's connections and life cycle:
 * the pool with reconnect backoff, queries, open (the schema is created or
 * migrated under an advisory lock; a newer one is refused), health, the
 * LISTEN connection, close. See pg_internal.h.
 */
#include "pg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/partd.h"

/* The schema this partd writes. An older one is migrated by MIGRATIONS;
 * a newer one (a later partd's) is refused. */
#define SCHEMA_VERSION 3
#define SCHEMA_LOCK_KEY 0x70617274 /* "part": serialises schema changes */

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000

/* MIGRATIONS[v] takes a schema of version v to v + 1 (0 = empty database). */
static const char *const MIGRATIONS[SCHEMA_VERSION] = {
    "CREATE TABLE jobs ("
    " seq bigserial PRIMARY KEY,"
    " id text NOT NULL UNIQUE,"
    " status text NOT NULL,"
    " created_ms bigint NOT NULL,"
    " started_ms bigint,"
    " finished_ms bigint,"
    " graph_hash text NOT NULL,"
    " cache_key text NOT NULL,"
    " cached integer NOT NULL DEFAULT 0,"
    " summary text,"
    " error text,"
    " error_status integer NOT NULL DEFAULT 0,"
    " idempotency_key text UNIQUE,"
    " request_digest text,"
    " request bytea,"
    " attempts integer NOT NULL DEFAULT 0,"
    " runner text,"
    " lease_until_ms bigint);"
    "CREATE INDEX jobs_status_seq ON jobs (status, seq);"
    "CREATE INDEX jobs_finished ON jobs (finished_ms);"
    "CREATE TABLE results ("
    " cache_key text PRIMARY KEY,"
    " etag text NOT NULL,"
    " summary text NOT NULL,"
    " body bytea NOT NULL,"
    " body_zstd bytea,"
    " body_gzip bytea,"
    " created_ms bigint NOT NULL,"
    " used_ms bigint NOT NULL);"
    "CREATE INDEX results_used ON results (used_ms);",
    /* 2: a request is written once, read once by its claim and dropped when
     * the job ends; partd packs it as a zstd frame itself (intake.h), which
     * no version-1 partd can read, so PostgreSQL's own compression is off.
     * Claims look only at unfinished jobs, through an index of
     * them alone, however many finished ones the table keeps. */
    ("ALTER TABLE jobs ALTER COLUMN request SET STORAGE EXTERNAL;"
     "CREATE INDEX jobs_unfinished ON jobs (seq) WHERE status IN ('queued', 'running');"),
    /* 3: what a job says of its request (job.h's about): graph name, mode,
     * devices. Jobs before have none; their documents go without it. */
    "ALTER TABLE jobs ADD COLUMN about text;",
};

/* Every call is bounded: the server's statement and lock timeouts, a
 * connect timeout, and TCP timeouts for a server that stops answering. */
static PGconn *connect_url(const char *url)
{
    const char *keys[] = {"dbname", "connect_timeout", "options", "application_name",
                          "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", NULL};
    const char *values[] = {url, "3",
                            "-c statement_timeout=10000 -c lock_timeout=5000 "
                            "-c idle_in_transaction_session_timeout=60000 "
                            "-c client_min_messages=warning",
                            "partd", "1", "5", "2", "2", "10000", NULL};
    return PQconnectdbParams(keys, values, 1);
}

/* ---- parameters ------------------------------------------------------------ */

static void param(partd__pg_params *p, const char *v, int len, int format)
{
    if (p->n >= PARTD_PG_MAX_PARAMS)
        return;
    p->values[p->n] = v;
    p->lengths[p->n] = len;
    p->formats[p->n] = format;
    p->n++;
}

void partd__pg_param_text(partd__pg_params *p, const char *text)
{
    param(p, text, 0, 0);
}

void partd__pg_param_i64(partd__pg_params *p, int64_t v)
{
    if (p->n >= PARTD_PG_MAX_PARAMS)
        return;
    snprintf(p->numbers[p->n], sizeof p->numbers[p->n], "%lld", (long long)v);
    param(p, p->numbers[p->n], 0, 0);
}

void partd__pg_param_ms(partd__pg_params *p, int64_t ms)
{
    if (ms > 0)
        partd__pg_param_i64(p, ms);
    else
        param(p, NULL, 0, 0);
}

void partd__pg_param_bytes(partd__pg_params *p, const void *data, size_t len)
{
    /* bytea in binary: no escaping of large documents. */
    param(p, data ? (data && len == 0 ? "" : data) : NULL, (int)len, 1);
}

/* ---- the pool --------------------------------------------------------------- */

/* 1 when a reconnect may be tried now; a failure doubles the wait. */
static int may_connect(partd__pg_store *s)
{
    pthread_mutex_lock(&s->backoff_lock);
    int ok = partd_clock_ns() / 1000000 >= s->next_connect_ms;
    pthread_mutex_unlock(&s->backoff_lock);
    return ok;
}

static void connect_result(partd__pg_store *s, int ok)
{
    pthread_mutex_lock(&s->backoff_lock);
    if (ok) {
        s->backoff_ms = 0;
        s->next_connect_ms = 0;
    } else {
        s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : BACKOFF_MIN_MS;
        if (s->backoff_ms > BACKOFF_MAX_MS)
            s->backoff_ms = BACKOFF_MAX_MS;
        s->next_connect_ms = partd_clock_ns() / 1000000 + s->backoff_ms;
    }
    pthread_mutex_unlock(&s->backoff_lock);
}

/* A new connection, or NULL (logged, backoff counted). */
static PGconn *reconnect(partd__pg_store *s)
{
    if (!may_connect(s))
        return NULL;
    PGconn *pg = connect_url(s->url);
    if (pg && PQstatus(pg) == CONNECTION_OK) {
        connect_result(s, 1);
        return pg;
    }
    partd_log_msg("error", "store", "cannot connect to PostgreSQL: %s",
                  pg ? PQerrorMessage(pg) : "out of memory");
    PQfinish(pg);
    atomic_store(&s->healthy, 0);
    connect_result(s, 0);
    return NULL;
}

partd__pg_conn *partd__pg_acquire(partd__pg_store *s)
{
    /* A free connection if there is one, else wait for one (round-robin). */
    partd__pg_conn *c = NULL;
    unsigned start = atomic_fetch_add(&s->next_conn, 1);
    for (unsigned i = 0; i < PARTD_PG_CONNS && !c; i++) {
        partd__pg_conn *t = &s->conns[(start + i) % PARTD_PG_CONNS];
        if (pthread_mutex_trylock(&t->lock) == 0)
            c = t;
    }
    if (!c) {
        c = &s->conns[start % PARTD_PG_CONNS];
        pthread_mutex_lock(&c->lock);
    }
    if (c->pg && PQstatus(c->pg) != CONNECTION_OK) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    if (!c->pg)
        c->pg = reconnect(s);
    if (!c->pg) {
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    return c;
}

void partd__pg_release(partd__pg_store *s, partd__pg_conn *c)
{
    (void)s;
    pthread_mutex_unlock(&c->lock);
}

/* r when it succeeded; else NULL, as partd__pg_exec says. */
static PGresult *checked(partd__pg_store *s, partd__pg_conn *c, PGresult *r, const char *what,
                         char sqlstate[6])
{
    if (sqlstate)
        sqlstate[0] = '\0';
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        atomic_store(&s->healthy, 1);
        return r;
    }
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (sqlstate && state)
        snprintf(sqlstate, 6, "%s", state);
    /* A unique key taken is the caller's answer, not the store's trouble. */
    if (!(state && strcmp(state, "23505") == 0)) {
        partd_log_msg("error", "store", "%s failed: %s", what, PQerrorMessage(c->pg));
        atomic_store(&s->healthy, 0);
    }
    PQclear(r);
    if (PQstatus(c->pg) != CONNECTION_OK) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    return NULL;
}

PGresult *partd__pg_exec(partd__pg_store *s, partd__pg_conn *c, const char *sql,
                         const partd__pg_params *params, const char *what, char sqlstate[6])
{
    if (!c->pg) {
        if (sqlstate)
            sqlstate[0] = '\0';
        return NULL;
    }
    atomic_fetch_add(&s->round_trips, 1);
    PGresult *r = PQexecParams(c->pg, sql, params ? params->n : 0, NULL,
                               params ? params->values : NULL, params ? params->lengths : NULL,
                               params ? params->formats : NULL, 1);
    return checked(s, c, r, what, sqlstate);
}

int partd__pg_command(partd__pg_store *s, partd__pg_conn *c, const char *sql, const char *what)
{
    if (!c->pg)
        return PARTD_EIO;
    /* PQexec: the text may hold several statements. */
    atomic_fetch_add(&s->round_trips, 1);
    PGresult *r = checked(s, c, PQexec(c->pg, sql), what, NULL);
    PQclear(r);
    return r ? PARTD_OK : PARTD_EIO;
}

/* ---- pipelines ------------------------------------------------------------ */

/* Drops a connection whose pipeline went wrong: its state is not worth
 * untangling, and the next call reconnects. */
static void pipeline_lost(partd__pg_store *s, partd__pg_conn *c, const char *what)
{
    partd_log_msg("error", "store", "%s failed: %s", what, PQerrorMessage(c->pg));
    atomic_store(&s->healthy, 0);
    PQfinish(c->pg);
    c->pg = NULL;
}

/* Reads the answers of n statements and the sync: PARTD_OK when all ran,
 * PARTD_EIO when one failed (the server skipped the rest and rolled back),
 * -1 when the answers are not what a pipeline gives (connection lost). */
static int pipeline_answers(partd__pg_conn *c, size_t n, const char *what, int *ntuples)
{
    int rc = PARTD_OK;
    for (size_t i = 0; i < n; i++) {
        PGresult *r = PQgetResult(c->pg);
        if (!r)
            return -1;
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            if (ntuples)
                ntuples[i] = st == PGRES_TUPLES_OK ? PQntuples(r) : atoi(PQcmdTuples(r));
        } else {
            if (st != PGRES_PIPELINE_ABORTED)
                partd_log_msg("error", "store", "%s failed: %s", what, PQresultErrorMessage(r));
            rc = PARTD_EIO;
        }
        PQclear(r);
        if ((r = PQgetResult(c->pg)) != NULL) { /* each statement's answer ends with NULL */
            PQclear(r);
            return -1;
        }
    }
    PGresult *sync = PQgetResult(c->pg);
    int synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    return synced ? rc : -1;
}

int partd__pg_pipeline(partd__pg_store *s, partd__pg_conn *c, size_t n, const char *const *sql,
                       const partd__pg_params *params, const char *what, int *ntuples)
{
    if (!c->pg)
        return PARTD_EIO;
    if (!PQenterPipelineMode(c->pg)) {
        pipeline_lost(s, c, what);
        return PARTD_EIO;
    }
    atomic_fetch_add(&s->round_trips, 1);
    int sent = 1;
    for (size_t i = 0; i < n && sent; i++)
        sent = PQsendQueryParams(c->pg, sql[i], params[i].n, NULL, params[i].values,
                                 params[i].lengths, params[i].formats, 1);
    if (!sent || !PQpipelineSync(c->pg)) {
        pipeline_lost(s, c, what);
        return PARTD_EIO;
    }
    int rc = pipeline_answers(c, n, what, ntuples);
    if (rc < 0 || !PQexitPipelineMode(c->pg) || PQstatus(c->pg) != CONNECTION_OK) {
        pipeline_lost(s, c, what);
        return PARTD_EIO;
    }
    atomic_store(&s->healthy, rc == PARTD_OK);
    return rc;
}

/* ---- open: schema ----------------------------------------------------------- */

/* The schema's version (0 when partd has not written one): PARTD_OK, or
 * PARTD_EIO with err. Within the transaction that holds the lock. */
static int schema_version(partd__pg_store *s, partd__pg_conn *c, int *version, char *err,
                          size_t cap)
{
    PGresult *r = NULL;
    if (partd__pg_command(s, c, "CREATE TABLE IF NOT EXISTS partd_schema "
                          "(version integer NOT NULL)", "reading the schema version") == PARTD_OK)
        r = partd__pg_exec(s, c, "SELECT max(version) FROM partd_schema", NULL,
                           "reading the schema version", NULL);
    if (!r) {
        snprintf(err, cap, "cannot read the store's schema version: %s",
                 c->pg ? PQerrorMessage(c->pg) : "connection lost");
        return PARTD_EIO;
    }
    *version = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? (int)partd__pg_int(r, 0, 0) : 0;
    PQclear(r);
    return PARTD_OK;
}

/* Creates or upgrades the schema in one transaction under an advisory lock,
 * so that replicas starting together migrate once. */
static int init_schema(partd__pg_store *s, partd__pg_conn *c, char *err, size_t cap,
                       int *exit_code)
{
    char sql[160];
    snprintf(sql, sizeof sql, "BEGIN; SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK_KEY);
    int version = 0;
    *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
    if (partd__pg_command(s, c, sql, "locking the schema") != PARTD_OK) {
        snprintf(err, cap, "cannot lock the store's schema");
        return -1;
    }
    if (schema_version(s, c, &version, err, cap) != PARTD_OK)
        goto fail;
    if (version > SCHEMA_VERSION) {
        snprintf(err, cap, "the store's schema is version %d, newer than this partd's (%d): "
                 "it was written by a later partd; refusing to touch it (upgrade partd)",
                 version, SCHEMA_VERSION);
        *exit_code = PARTD_EXIT_STORE_CORRUPT;
        goto fail;
    }
    for (int v = version; v < SCHEMA_VERSION; v++)
        if (partd__pg_command(s, c, MIGRATIONS[v], "migrating the schema") != PARTD_OK) {
            snprintf(err, cap, "cannot migrate the store's schema from version %d", v);
            goto fail;
        }
    snprintf(sql, sizeof sql, "DELETE FROM partd_schema; INSERT INTO partd_schema VALUES (%d); "
             "COMMIT", SCHEMA_VERSION);
    if (version == SCHEMA_VERSION ||
        partd__pg_command(s, c, sql, "migrating the schema") == PARTD_OK) {
        if (version == SCHEMA_VERSION)
            partd__pg_command(s, c, "COMMIT", "reading the schema");
        if (version && version < SCHEMA_VERSION)
            partd_log_msg("info", "store", "migrated the schema from version %d to %d",
                          version, SCHEMA_VERSION);
        return 0;
    }
    snprintf(err, cap, "cannot record the store's schema version");
fail:
    if (c->pg)
        partd__pg_command(s, c, "ROLLBACK", "rolling back");
    return -1;
}

void *partd__pg_open(const char *url, const char *data_dir, char *err, size_t cap,
                     int *exit_code)
{
    (void)data_dir;
    const char *why;
    if (partd__pg_libpq_load(&why) != PARTD_OK) {
        snprintf(err, cap, "%s", why);
        *exit_code = PARTD_EXIT_STORE_UNAVAILABLE;
        return NULL;
    }
    partd__pg_store *s = calloc(1, sizeof *s);
    if (!s || !(s->url = strdup(url))) {
        free(s);
        snprintf(err, cap, "out of memory");
        *exit_code = PARTD_EXIT_STORE_UNWRITABLE;
        return NULL;
    }
    for (int i = 0; i < PARTD_PG_CONNS; i++)
        pthread_mutex_init(&s->conns[i].lock, NULL);
    pthread_mutex_init(&s->backoff_lock, NULL);
    pthread_mutex_init(&s->queued_lock, NULL);
    atomic_store(&s->healthy, 1);
    atomic_store(&s->lease_ms, 30000);
    partd__pg_conn *c = &s->conns[0];
    pthread_mutex_lock(&c->lock);
    c->pg = connect_url(url);
    if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
        /* The message names host and database, never the password. */
        snprintf(err, cap, "cannot connect to the PostgreSQL store: %s",
                 c->pg ? PQerrorMessage(c->pg) : "out of memory");
        size_t n = strlen(err);
        while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
            err[--n] = '\0';
        *exit_code = PARTD_EXIT_STORE_UNAVAILABLE;
        pthread_mutex_unlock(&c->lock);
        partd__pg_close(s);
        return NULL;
    }
    int rc = init_schema(s, c, err, cap, exit_code);
    pthread_mutex_unlock(&c->lock);
    if (rc != 0) {
        partd__pg_close(s);
        return NULL;
    }
    return s;
}

void partd__pg_close(void *state)
{
    partd__pg_store *s = state;
    if (!s)
        return;
    for (int i = 0; i < PARTD_PG_CONNS; i++) {
        PQfinish(s->conns[i].pg);
        pthread_mutex_destroy(&s->conns[i].lock);
    }
    PQfinish(s->listener);
    pthread_mutex_destroy(&s->backoff_lock);
    pthread_mutex_destroy(&s->queued_lock);
    free(s->url);
    free(s);
}

int partd__pg_limit_size(void *state, uint64_t max_bytes)
{
    (void)state;
    if (max_bytes)
        partd_log_msg("warn", "store", "--store-max-bytes applies to the sqlite store only; "
                      "a PostgreSQL store is sized by its server");
    return PARTD_OK;
}

int partd__pg_healthy(void *state)
{
    partd__pg_store *s = state;
    return atomic_load(&s->healthy);
}

int partd__pg_probe(void *state)
{
    partd__pg_store *s = state;
    partd__pg_conn *c = partd__pg_acquire(s);
    if (!c)
        return PARTD_EIO;
    /* A real (one-row) write: a read-only standby is not a usable store. */
    int rc = partd__pg_command(s, c, "UPDATE partd_schema SET version = version", "probing");
    partd__pg_release(s, c);
    return rc;
}

uint64_t partd__pg_round_trips(void *state)
{
    partd__pg_store *s = state;
    return atomic_load(&s->round_trips);
}

/* ---- LISTEN ----------------------------------------------------------------- */

int partd__pg_listen_fd(void *state)
{
    partd__pg_store *s = state;
    if (!s->listener) {
        PGconn *pg = reconnect(s);
        if (!pg)
            return -1;
        PGresult *r = PQexec(pg, "LISTEN " PARTD_PG_CHANNEL);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok || PQsetnonblocking(pg, 1) != 0) {
            PQfinish(pg);
            return -1;
        }
        s->listener = pg;
    }
    return PQsocket(s->listener);
}

int partd__pg_listen_consume(void *state)
{
    partd__pg_store *s = state;
    if (!s->listener)
        return -1;
    if (!PQconsumeInput(s->listener) || PQstatus(s->listener) != CONNECTION_OK)
        return -1;
    int got = 0;
    PGnotify *n;
    while ((n = PQnotifies(s->listener)) != NULL) {
        got = 1;
        PQfreemem(n);
    }
    return got;
}

void partd__pg_listen_reset(void *state)
{
    partd__pg_store *s = state;
    PQfinish(s->listener);
    s->listener = NULL;
}
