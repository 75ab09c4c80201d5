/* test_store_pg.c - what is particular to the PostgreSQL store, against a
 * throw-away server (pg_server.h; skipped, saying why, when its binaries
 * are missing): claims that replicas never share, leases that run out and
 * are taken over, the attempt cap, renewals that report lost claims, final
 * states written only under the claim (never over a cancel), a shutdown's
 * requeue, announcements, the schema refused when newer, an unreachable
 * server, reconnection after a server restart, the round trips a job
 * costs, a run's end written all or nothing, the cached depth of the queue,
 * the postgres:// scheme and the migration of a version-1 schema. The operations common to
 * both backends are in test_store.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_server.h"
#include "testutil.h"

#include "partd/partd.h"
#include "store/store.h"

static partd_pg_server pg;
static char url[256];

static int setup(void **state)
{
    (void)state;
    return partd_pg_server_fresh_db(&pg, url, sizeof url);
}

static partd_store *open_ok(void)
{
    char err[512];
    int code = 0;
    partd_store *s = partd_store_open_url(url, "/nonexistent", err, sizeof err, &code);
    if (!s)
        fail_msg("open failed: %s", err);
    return s;
}

static const char *ID[] = {"00000000000000000000000000000001", "00000000000000000000000000000002",
                           "00000000000000000000000000000003"};

static void insert(partd_store *s, int i)
{
    partd_job_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%s", ID[i]);
    r.created_ms = 1000 + i;
    snprintf(r.graph_hash, sizeof r.graph_hash, "sha256:g");
    snprintf(r.cache_key, sizeof r.cache_key, "sha256:k%d", i);
    assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, "BODY", 4), PARTD_OK);
}

typedef struct claimed {
    partd_job_row rows[4];
    int exhausted[4];
    int n;
} claimed;

static void collect(const partd_job_row *row, const char *body, size_t len, int exhausted,
                    void *ctx)
{
    claimed *c = ctx;
    assert_true(c->n < 4);
    assert_int_equal(len, 4);
    assert_memory_equal(body, "BODY", 4);
    c->rows[c->n] = *row;
    c->rows[c->n].summary = c->rows[c->n].error = NULL;
    c->exhausted[c->n++] = exhausted;
}

static claimed claim(partd_store *s, const char *runner, int64_t lease_ms, unsigned max)
{
    claimed c = {0};
    assert_int_equal(partd_store_claim(s, runner, lease_ms, max, 3, collect, &c), PARTD_OK);
    return c;
}

static partd_job_row get(partd_store *s, int i)
{
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[i], &got), PARTD_OK);
    return got;
}

static void test_claims_are_exclusive_and_oldest_first(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    assert_true(partd_store_shared(s));
    for (int i = 0; i < 3; i++)
        insert(s, i);
    claimed a = claim(s, "A", 60000, 2);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.rows[0].id, ID[0]);
    assert_string_equal(a.rows[1].id, ID[1]);
    assert_int_equal(a.rows[0].status, PARTD_JOB_RUNNING);
    assert_int_equal(a.rows[0].attempts, 1);
    assert_string_equal(a.rows[0].runner, "A");
    assert_true(a.rows[0].started_ms > 0);
    assert_false(a.exhausted[0]);
    claimed b = claim(s, "B", 60000, 3); /* A's leases hold */
    assert_int_equal(b.n, 1);
    assert_string_equal(b.rows[0].id, ID[2]);
    assert_int_equal(claim(s, "B", 60000, 3).n, 0);
    partd_store_close(s);
}

/* A lease that ran out (claimed with a negative lease: already over) is
 * taken over, counting an attempt; the old runner's late end is not
 * written, and after three attempts the job is handed over exhausted. */
static void test_expired_lease_is_taken_over_up_to_the_cap(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    insert(s, 0);
    claimed a = claim(s, "A", -1, 1);
    claimed b = claim(s, "B", -1, 1);
    assert_int_equal(b.n, 1);
    assert_int_equal(b.rows[0].attempts, 2);
    assert_string_equal(b.rows[0].runner, "B");

    partd_job_row late = a.rows[0];
    late.status = PARTD_JOB_SUCCEEDED;
    late.finished_ms = 5000;
    late.summary = "{\"from\":\"A\"}";
    const partd_job_row *rows[] = {&late};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    partd_job_row got = get(s, 0);
    assert_int_equal(got.status, PARTD_JOB_RUNNING); /* A no longer holds it */
    assert_string_equal(got.runner, "B");
    partd_job_row_clear(&got);

    claimed c = claim(s, "C", -1, 1);
    assert_int_equal(c.rows[0].attempts, 3);
    assert_false(c.exhausted[0]);
    claimed d = claim(s, "D", 60000, 1);
    assert_int_equal(d.n, 1);
    assert_true(d.exhausted[0]);
    assert_int_equal(d.rows[0].attempts, 3); /* not counted: it will not run */
    partd_job_row failed = d.rows[0];
    failed.status = PARTD_JOB_FAILED;
    failed.finished_ms = 6000;
    failed.error = "{\"status\":500}";
    failed.error_status = 500;
    rows[0] = &failed;
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    got = get(s, 0);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_string_equal(got.runner, "D");
    partd_job_row_clear(&got);
    assert_int_equal(claim(s, "E", 60000, 1).n, 0);
    partd_store_close(s);
}

typedef struct lost_ids {
    char id[4][PARTD_ID_LEN + 1];
    int n;
} lost_ids;

static void on_lost(const char *id, void *ctx)
{
    lost_ids *l = ctx;
    snprintf(l->id[l->n++], sizeof l->id[0], "%s", id);
}

/* A cancel from anywhere: the runner learns it at its renewal, and its
 * late result never overwrites the cancel. */
static void test_renewal_reports_cancelled_claims(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    insert(s, 0);
    insert(s, 1);
    claimed a = claim(s, "A", 60000, 2);
    partd_job_row cancelled;
    assert_int_equal(partd_store_cancel_job(s, ID[1], 3000, &cancelled), PARTD_OK);
    int64_t cancelled_at = cancelled.finished_ms; /* the database's clock (store.h) */
    partd_job_row_clear(&cancelled);
    partd_store_lease leases[] = {{ID[0], 1}, {ID[1], 1}};
    lost_ids lost = {0};
    assert_int_equal(partd_store_renew(s, "A", 60000, leases, 2, on_lost, &lost), PARTD_OK);
    assert_int_equal(lost.n, 1);
    assert_string_equal(lost.id[0], ID[1]);
    lost.n = 0; /* another runner's name holds nothing */
    assert_int_equal(partd_store_renew(s, "B", 60000, leases, 1, on_lost, &lost), PARTD_OK);
    assert_int_equal(lost.n, 1);

    partd_job_row late = a.rows[1];
    late.status = PARTD_JOB_SUCCEEDED;
    late.finished_ms = 5000;
    late.summary = "{}";
    const partd_job_row *rows[] = {&late};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    partd_job_row got = get(s, 1);
    assert_int_equal(got.status, PARTD_JOB_CANCELLED);
    assert_int_equal(got.finished_ms, cancelled_at); /* the late finish changed nothing */
    partd_job_row_clear(&got);

    /* A shutdown hands its claim back: queued, the attempt not counted. */
    partd_job_row back = a.rows[0];
    back.status = PARTD_JOB_QUEUED;
    rows[0] = &back;
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    got = get(s, 0);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    assert_int_equal(got.attempts, 0);
    partd_job_row_clear(&got);
    assert_int_equal(claim(s, "B", 60000, 2).n, 1);
    partd_store_close(s);
}

/* New jobs are announced on the LISTEN socket. */
static void test_new_jobs_are_announced(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    int fd = partd_store_listen_fd(s);
    assert_true(fd >= 0);
    assert_int_equal(partd_store_listen_consume(s), 0);
    insert(s, 0);
    int got = 0;
    for (int i = 0; i < 2000 && !got; i++) { /* bounded: the server answers at once */
        got = partd_store_listen_consume(s);
        if (!got)
            usleep(1000);
    }
    assert_int_equal(got, 1);
    partd_store_listen_reset(s);
    partd_store_close(s);
}

static void test_newer_schema_is_refused(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_store *twin = open_ok(); /* a second replica: same schema, fine */
    partd_store_close(twin);
    partd_store_close(s);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "psql -q '%s' -c 'UPDATE partd_schema SET version = 7'", url);
    assert_int_equal(system(cmd), 0);
    char err[512] = "";
    int code = 0;
    assert_null(partd_store_open_url(url, "/nonexistent", err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_CORRUPT);
    if (!strstr(err, "version 7, newer than this partd"))
        fail_msg("unexpected reason: %s", err);
}

static void test_unreachable_server(void **state)
{
    (void)state;
    char bad[256], err[512] = "";
    int code = 0;
    /* Our server's port, another user: refused at once, nothing leaked. */
    snprintf(bad, sizeof bad, "postgresql://nobody:hunter2@127.0.0.1:%d/none", pg.port);
    assert_null(partd_store_open_url(bad, "/nonexistent", err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_UNAVAILABLE);
    assert_non_null(strstr(err, "cannot connect"));
    assert_null(strstr(err, "hunter2"));
}

/* A server restart breaks the pooled connections: reads run again on a new
 * one, other calls fail (never hang), and the store reconnects by itself. */
static void test_reconnects_after_a_server_restart(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    for (int i = 0; i < 8; i++) { /* every pooled connection used once */
        partd_job_row got;
        assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_STORE_MISSING);
    }
    insert(s, 0);
    assert_int_equal(partd_pg_server_restart(&pg), 0);
    for (int i = 0; i < 8; i++) { /* a read is answered at once */
        partd_job_row got = get(s, 0);
        partd_job_row_clear(&got);
    }
    int rc = PARTD_EIO;
    for (int i = 0; i < 100 && rc != PARTD_OK; i++) { /* bounded by the backoff */
        rc = partd_store_probe(s);
        if (rc != PARTD_OK)
            usleep(50000);
    }
    assert_int_equal(rc, PARTD_OK);
    assert_true(partd_store_healthy(s));
    partd_job_row got = get(s, 0);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    partd_job_row_clear(&got);
    partd_store_close(s);
}

static void psql(const char *sql)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "psql -q -v ON_ERROR_STOP=1 '%s' -c \"%s\"", url, sql);
    assert_int_equal(system(cmd), 0);
}

/* What a job costs in round trips to the server, each path counted
 * exactly: submit 1, claim 1 (for several jobs too), renewal 1 (for all
 * leases), the end (result and final state) 1. */
static void test_round_trips_per_job(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    uint64_t t0 = partd_store_round_trips(s);
    insert(s, 0);
    insert(s, 1);
    assert_int_equal(partd_store_round_trips(s) - t0, 2);

    t0 = partd_store_round_trips(s);
    claimed a = claim(s, "A", 60000, 2);
    assert_int_equal(a.n, 2);
    assert_int_equal(partd_store_round_trips(s) - t0, 1);

    t0 = partd_store_round_trips(s);
    partd_store_lease leases[] = {{ID[0], 1}, {ID[1], 1}};
    lost_ids lost = {0};
    assert_int_equal(partd_store_renew(s, "A", 60000, leases, 2, on_lost, &lost), PARTD_OK);
    assert_int_equal(lost.n, 0);
    assert_int_equal(partd_store_round_trips(s) - t0, 1);

    t0 = partd_store_round_trips(s);
    partd_blob forms[PARTD_CODINGS] = {{(char *)"{\"plan\":1}", 10}};
    partd_store_result res = {"sha256:k0", "\"e0\"", "{\"s\":1}", forms};
    partd_job_row done[2] = {a.rows[0], a.rows[1]};
    const partd_job_row *rows[2] = {&done[0], &done[1]};
    for (int i = 0; i < 2; i++) {
        done[i].status = PARTD_JOB_SUCCEEDED;
        done[i].finished_ms = 7000;
        done[i].summary = "{\"s\":1}";
    }
    assert_int_equal(partd_store_finish_jobs(s, &res, rows, 2), PARTD_OK);
    assert_int_equal(partd_store_round_trips(s) - t0, 1);
    for (int i = 0; i < 2; i++) {
        partd_job_row got = get(s, i);
        assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
        assert_string_equal(got.summary, "{\"s\":1}");
        partd_job_row_clear(&got);
    }
    partd_blob stored[PARTD_CODINGS];
    char etag[72], *summary = NULL;
    assert_int_equal(partd_store_get_result(s, "sha256:k0", stored, etag, &summary), PARTD_OK);
    assert_string_equal(etag, "\"e0\"");
    free(summary);
    partd_encoding_forms_free(stored);
    partd_store_close(s);
}

/* A run's end is one transaction: when one of its rows cannot be written,
 * neither the result nor any other row is, and the connection serves the
 * next call. */
static void test_finish_is_all_or_nothing(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    insert(s, 0);
    insert(s, 1);
    claimed a = claim(s, "A", 60000, 2);
    psql("ALTER TABLE jobs ADD CONSTRAINT no_poison CHECK (summary IS DISTINCT FROM 'poison')");
    partd_blob forms[PARTD_CODINGS] = {{(char *)"{}", 2}};
    partd_store_result res = {"sha256:k0", "\"e\"", "{}", forms};
    partd_job_row done[2] = {a.rows[0], a.rows[1]};
    done[0].status = done[1].status = PARTD_JOB_SUCCEEDED;
    done[0].finished_ms = done[1].finished_ms = 7000;
    done[0].summary = "{}";
    done[1].summary = "poison";
    const partd_job_row *rows[2] = {&done[0], &done[1]};
    assert_int_equal(partd_store_finish_jobs(s, &res, rows, 2), PARTD_EIO);
    for (int i = 0; i < 2; i++) {
        partd_job_row got = get(s, i);
        assert_int_equal(got.status, PARTD_JOB_RUNNING);
        partd_job_row_clear(&got);
    }
    partd_blob stored[PARTD_CODINGS];
    char etag[72], *summary = NULL;
    assert_int_equal(partd_store_get_result(s, "sha256:k0", stored, etag, &summary),
                     PARTD_STORE_MISSING);
    done[1].summary = "{}";
    assert_int_equal(partd_store_finish_jobs(s, &res, rows, 2), PARTD_OK);
    partd_job_row got = get(s, 1);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    partd_job_row_clear(&got);
    partd_store_close(s);
}

/* The queue's depth is asked of the server at most once a second; this
 * replica's own submissions, claims and requeues keep it right meanwhile. */
static void test_queue_depth_is_cached(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    insert(s, 0);
    uint64_t t0 = partd_store_round_trips(s);
    assert_int_equal(partd_store_count_queued(s), 1);
    assert_int_equal(partd_store_round_trips(s) - t0, 1);
    insert(s, 1);
    insert(s, 2);
    assert_int_equal(partd_store_count_queued(s), 3);
    /* A claim counts the queue as it goes: what is left costs no more. */
    t0 = partd_store_round_trips(s);
    claimed a = claim(s, "A", 60000, 2);
    assert_int_equal(partd_store_count_queued(s), 1);
    assert_int_equal(partd_store_round_trips(s) - t0, 1);
    partd_job_row back = a.rows[0];
    back.status = PARTD_JOB_QUEUED;
    const partd_job_row *rows[] = {&back};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    assert_int_equal(partd_store_count_queued(s), 2); /* recounted after a requeue */
    assert_int_equal(partd_store_cancel_job(s, ID[2], 9000, NULL), PARTD_OK);
    assert_int_equal(partd_store_count_queued(s), 1);
    partd_store_close(s);
}

/* libpq takes postgres:// as well as postgresql://; so does --store. */
static void test_postgres_scheme(void **state)
{
    (void)state;
    assert_int_equal(strncmp(url, "postgresql://", 13), 0);
    char alias[300];
    snprintf(alias, sizeof alias, "postgres://%s", url + 13);
    char err[512];
    int code = 0;
    partd_store *s = partd_store_open_url(alias, "/nonexistent", err, sizeof err, &code);
    if (!s)
        fail_msg("open failed: %s", err);
    assert_true(partd_store_shared(s));
    insert(s, 0);
    partd_store_close(s);
    s = partd_store_open_url("postgres://127.0.0.1:1/x?connect_timeout=1", "/nonexistent", err,
                             sizeof err, &code);
    assert_null(s);
    assert_int_equal(code, PARTD_EXIT_STORE_UNAVAILABLE); /* the scheme was known */
}

/* The first line psql prints for sql (without its newline). */
static void psql_value(const char *sql, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "psql -At -v ON_ERROR_STOP=1 '%s' -c \"%s\"", url, sql);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    out[0] = '\0';
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    assert_int_equal(pclose(f), 0);
}

/* The schema of version 1 as the first partd wrote it, with a job queued. */
static const char SCHEMA_V1[] =
    "CREATE TABLE partd_schema (version integer NOT NULL);"
    "INSERT INTO partd_schema VALUES (1);"
    "CREATE TABLE jobs (seq bigserial PRIMARY KEY, id text NOT NULL UNIQUE, status text NOT NULL,"
    " created_ms bigint NOT NULL, started_ms bigint, finished_ms bigint, graph_hash text NOT NULL,"
    " cache_key text NOT NULL, cached integer NOT NULL DEFAULT 0, summary text, error text,"
    " error_status integer NOT NULL DEFAULT 0, idempotency_key text UNIQUE, request_digest text,"
    " request bytea, attempts integer NOT NULL DEFAULT 0, runner text, lease_until_ms bigint);"
    "CREATE INDEX jobs_status_seq ON jobs (status, seq);"
    "CREATE INDEX jobs_finished ON jobs (finished_ms);"
    "CREATE TABLE results (cache_key text PRIMARY KEY, etag text NOT NULL, summary text NOT NULL,"
    " body bytea NOT NULL, body_zstd bytea, body_gzip bytea, created_ms bigint NOT NULL,"
    " used_ms bigint NOT NULL);"
    "CREATE INDEX results_used ON results (used_ms);"
    "INSERT INTO jobs (id, status, created_ms, graph_hash, cache_key, request) VALUES"
    " ('00000000000000000000000000000001', 'queued', 1000, 'sha256:g', 'sha256:k0', 'BODY');";

/* A store of version 1 is upgraded in place: its jobs stay (and are
 * claimed as before), requests are stored uncompressed from then on, and
 * claims have their index of unfinished jobs. */
static void test_migrates_a_version_1_schema(void **state)
{
    (void)state;
    psql(SCHEMA_V1);
    partd_store *s = open_ok();
    char got[64];
    psql_value("SELECT max(version) FROM partd_schema", got, sizeof got);
    assert_string_equal(got, "3");
    psql_value("SELECT count(*) FROM partd_schema", got, sizeof got);
    assert_string_equal(got, "1");
    /* 3: a job's about; the job from version 1 has none */
    psql_value("SELECT coalesce(about, '-') FROM jobs", got, sizeof got);
    assert_string_equal(got, "-");
    psql_value("SELECT attstorage FROM pg_attribute WHERE attrelid = 'jobs'::regclass "
               "AND attname = 'request'", got, sizeof got);
    assert_string_equal(got, "e");
    psql_value("SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_unfinished'", got,
               sizeof got);
    assert_string_equal(got, "1");
    claimed a = claim(s, "A", 60000, 2);
    assert_int_equal(a.n, 1);
    assert_string_equal(a.rows[0].id, ID[0]);
    insert(s, 1);
    partd_store_close(s);
    /* Opened again (another replica, a restart): nothing left to do. */
    s = open_ok();
    psql_value("SELECT max(version) FROM partd_schema", got, sizeof got);
    assert_string_equal(got, "3");
    assert_int_equal(claim(s, "B", 60000, 2).n, 1);
    partd_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_claims_are_exclusive_and_oldest_first, setup),
        cmocka_unit_test_setup(test_expired_lease_is_taken_over_up_to_the_cap, setup),
        cmocka_unit_test_setup(test_renewal_reports_cancelled_claims, setup),
        cmocka_unit_test_setup(test_new_jobs_are_announced, setup),
        cmocka_unit_test_setup(test_newer_schema_is_refused, setup),
        cmocka_unit_test_setup(test_unreachable_server, setup),
        cmocka_unit_test_setup(test_reconnects_after_a_server_restart, setup),
        cmocka_unit_test_setup(test_round_trips_per_job, setup),
        cmocka_unit_test_setup(test_finish_is_all_or_nothing, setup),
        cmocka_unit_test_setup(test_queue_depth_is_cached, setup),
        cmocka_unit_test_setup(test_postgres_scheme, setup),
        cmocka_unit_test_setup(test_migrates_a_version_1_schema, setup),
    };
    char why[512];
    int rc = partd_pg_server_start(&pg, why, sizeof why);
    if (rc != 0) {
        partd_pg_server_stop(&pg);
        printf("[  SKIPPED ] store_pg: %s\n", why);
        return rc < 0;
    }
    int failed = cmocka_run_group_tests_name("store_pg", tests, NULL, NULL);
    partd_pg_server_stop(&pg);
    return failed;
}
