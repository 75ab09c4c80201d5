/* test_store.c - the store interface (store.h) on both backends, the same
 * assertions on each: rows round-trip, idempotency keys, missing rows,
 * attempts and runner, finishing with and without a result, cancelling,
 * listing order, pagination and filter, pending jobs, the retention sweep;
 * and store URLs. The group runs on SQLite, then on a throw-away PostgreSQL
 * server (pg_server.h; skipped, saying why, when its binaries are missing),
 * a fresh database per test. What is particular to a backend is in
 * test_store_sqlite.c and test_store_pg.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg_server.h"
#include "testutil.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include "core/time.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "store/store.h"

static char dir[256];
static partd_pg_server pg;
static int on_pg;        /* the group runs on PostgreSQL */
static char url[256];    /* this test's database when on_pg */

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-store-XXXXXX");
    if (on_pg && partd_pg_server_fresh_db(&pg, url, sizeof url) != 0)
        return -1;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static partd_store *open_ok(void)
{
    char err[512];
    int code = 0;
    partd_store *s = on_pg ? partd_store_open_url(url, dir, err, sizeof err, &code)
                           : partd_store_open(dir, err, sizeof err, &code);
    if (!s)
        fail_msg("open failed: %s", err);
    return s;
}

/* What the job table holds once it marked a job running (a shared store
 * writes a job's final state only while it is still that claim). */
static void claimed_by(partd_job_row *r, const char *runner, int attempts)
{
    snprintf(r->runner, sizeof r->runner, "%s", runner);
    r->attempts = attempts;
}

static partd_job_row row_of(const char *id, int64_t created)
{
    partd_job_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%s", id);
    r.status = PARTD_JOB_QUEUED;
    r.created_ms = created;
    snprintf(r.graph_hash, sizeof r.graph_hash, "sha256:g%s", id);
    snprintf(r.cache_key, sizeof r.cache_key, "sha256:k%s", id);
    return r;
}

static const char *ID[] = {"00000000000000000000000000000001", "00000000000000000000000000000002",
                           "00000000000000000000000000000003", "00000000000000000000000000000004"};

/* A finish time as the store keeps it: the one passed, or on a shared store
 * the database server's clock at the write (store.h), so never the small
 * figure a test passes. */
static void assert_finished_at(int64_t got, int64_t passed)
{
    if (on_pg)
        assert_true(got > passed && got > INT64_C(1600000000000));
    else
        assert_int_equal(got, passed);
}

static void test_insert_get_and_idempotency(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row r = row_of(ID[0], 1000);
    snprintf(r.about, sizeof r.about, "\"graph_name\":\"m\",\"mode\":\"training\"");
    assert_int_equal(partd_store_insert_job(s, &r, "key-1", "sha256:d1", "{}", 2), PARTD_OK);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_string_equal(got.id, ID[0]);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    assert_int_equal(got.created_ms, 1000);
    assert_int_equal(got.started_ms, 0);
    assert_string_equal(got.cache_key, r.cache_key);
    assert_string_equal(got.about, r.about); /* what the job says of its request */
    partd_job_row_clear(&got);

    partd_job_row r2 = row_of(ID[1], 2000);
    assert_int_equal(partd_store_insert_job(s, &r2, "key-1", "sha256:d2", "{}", 2),
                     PARTD_STORE_CONFLICT);
    char digest[72];
    assert_int_equal(partd_store_get_job_by_idem(s, "key-1", &got, digest), PARTD_OK);
    assert_string_equal(got.id, ID[0]);
    assert_string_equal(digest, "sha256:d1");
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_get_job_by_idem(s, "key-2", &got, digest), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_job(s, ID[3], &got), PARTD_STORE_MISSING);
    assert_true(partd_store_healthy(s));
    partd_store_close(s);
}

static void test_finish_with_result_and_reopen(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row a = row_of(ID[0], 1000), b = row_of(ID[1], 1001);
    snprintf(b.cache_key, sizeof b.cache_key, "%s", a.cache_key); /* a shared run */
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, "{\"a\":1}", 7), PARTD_OK);
    assert_int_equal(partd_store_insert_job(s, &b, NULL, NULL, "{\"b\":1}", 7), PARTD_OK);
    assert_int_equal(partd_store_mark_running(s, ID[0], 1500, "r1"), PARTD_OK);
    claimed_by(&a, "r1", 1);
    a.status = b.status = PARTD_JOB_SUCCEEDED;
    a.finished_ms = b.finished_ms = 2000;
    a.summary = b.summary = "{\"partitions\":2}";
    partd_blob stored[PARTD_CODINGS] = {{"RESULT", 6}};
    stored[PARTD_CODING_GZIP] = (partd_blob){"GZ", 2};
    partd_store_result res = {a.cache_key, "sha256:etag", "{\"partitions\":2}", stored};
    const partd_job_row *rows[] = {&a, &b};
    assert_int_equal(partd_store_finish_jobs(s, &res, rows, 2), PARTD_OK);
    partd_store_close(s);

    s = open_ok(); /* durable across a restart */
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_finished_at(got.finished_ms, 2000);
    assert_string_equal(got.summary, "{\"partitions\":2}");
    assert_int_equal(got.attempts, 0); /* joined a run: no attempt of its own */
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_int_equal(got.attempts, 1);
    assert_string_equal(got.runner, "r1");
    partd_job_row_clear(&got);
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(s, a.cache_key, forms, etag, &summary), PARTD_OK);
    assert_int_equal(forms[PARTD_CODING_IDENTITY].len, 6);
    assert_memory_equal(forms[PARTD_CODING_IDENTITY].data, "RESULT", 6);
    assert_int_equal(forms[PARTD_CODING_GZIP].len, 2);
    assert_memory_equal(forms[PARTD_CODING_GZIP].data, "GZ", 2);
    assert_null(forms[PARTD_CODING_ZSTD].data); /* absent stays absent */
    assert_string_equal(etag, "sha256:etag");
    partd_encoding_forms_free(forms);
    free(summary);
    assert_int_equal(partd_store_get_result(s, "sha256:none", forms, etag, &summary),
                     PARTD_STORE_MISSING);
    assert_int_equal(partd_store_touch_result(s, a.cache_key, 5000), PARTD_OK);
    assert_int_equal(partd_store_touch_result(s, "sha256:none", 5000), PARTD_STORE_MISSING);
    partd_store_close(s);
}

typedef struct collected {
    char ids[8][PARTD_ID_LEN + 1];
    int64_t seq[8];
    int n;
    size_t body_len[8];
} collected;

static void collect(const partd_job_row *row, void *ctx)
{
    collected *c = ctx;
    snprintf(c->ids[c->n], sizeof c->ids[0], "%s", row->id);
    c->seq[c->n++] = row->seq;
}

static void collect_pending(const partd_job_row *row, const char *body, size_t len, void *ctx)
{
    collected *c = ctx;
    (void)body;
    c->body_len[c->n] = len;
    collect(row, ctx);
}

static void test_list_pending_and_sweep(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    for (int i = 0; i < 4; i++) {
        partd_job_row r = row_of(ID[i], 1000 + i);
        assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, "body", 4), PARTD_OK);
    }
    /* 2 finished long ago, 3 running. */
    partd_job_row done = row_of(ID[1], 1001);
    done.status = PARTD_JOB_CANCELLED;
    done.finished_ms = 100;
    const partd_job_row *rows[] = {&done};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    assert_int_equal(partd_store_mark_running(s, ID[2], 3000, "r1"), PARTD_OK);

    collected c = {0};
    assert_int_equal(partd_store_list(s, -1, 0, 3, collect, &c), PARTD_OK);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.ids[0], ID[3]); /* newest first */
    assert_string_equal(c.ids[2], ID[1]);
    collected next = {0};
    assert_int_equal(partd_store_list(s, -1, c.seq[2], 3, collect, &next), PARTD_OK);
    assert_int_equal(next.n, 1);
    assert_string_equal(next.ids[0], ID[0]);
    collected running = {0};
    partd_store_list(s, PARTD_JOB_RUNNING, 0, 10, collect, &running);
    assert_int_equal(running.n, 1);
    assert_string_equal(running.ids[0], ID[2]);

    collected pending = {0};
    assert_int_equal(partd_store_pending(s, collect_pending, &pending), PARTD_OK);
    assert_int_equal(pending.n, 3); /* queued and running, oldest first */
    assert_string_equal(pending.ids[0], ID[0]);
    assert_string_equal(pending.ids[1], ID[2]);
    assert_string_equal(pending.ids[2], ID[3]);
    assert_int_equal(pending.body_len[0], 4);

    unsigned jobs = 0, results = 0;
    int64_t cutoff = 500;
    if (on_pg) {
        /* Finished on the database's clock, not at the 100 passed. */
        assert_int_equal(partd_store_sweep(s, 500, NULL, NULL, &jobs, &results), PARTD_OK);
        assert_int_equal(jobs, 0);
        assert_int_equal(partd_store_now_ms(s, &cutoff), PARTD_OK);
        cutoff++;
    }
    assert_int_equal(partd_store_sweep(s, cutoff, NULL, NULL, &jobs, &results), PARTD_OK);
    assert_int_equal(jobs, 1); /* only the finished one */
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    partd_job_row_clear(&got);
    partd_store_close(s);
}

static void test_missing_rows(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row got;
    char digest[72];
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_job_by_idem(s, "none", &got, digest), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_mark_running(s, ID[0], 10, "r1"), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_cancel_job(s, ID[0], 10, &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_result(s, "sha256:none", forms, etag, &summary),
                     PARTD_STORE_MISSING);
    assert_null(summary);
    assert_null(forms[PARTD_CODING_IDENTITY].data);
    assert_int_equal(partd_store_touch_result(s, "sha256:none", 10), PARTD_STORE_MISSING);
    assert_true(partd_store_healthy(s)); /* a missing row is no store failure */
    partd_store_close(s);
}

static void test_finish_without_result(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row a = row_of(ID[0], 1000), b = row_of(ID[1], 1001);
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, "{}", 2), PARTD_OK);
    assert_int_equal(partd_store_insert_job(s, &b, NULL, NULL, "{}", 2), PARTD_OK);
    assert_int_equal(partd_store_mark_running(s, ID[0], 1100, "r1"), PARTD_OK);
    assert_int_equal(partd_store_mark_running(s, ID[1], 1100, "r1"), PARTD_OK);
    claimed_by(&a, "r1", 1);
    claimed_by(&b, "r1", 1);
    a.status = PARTD_JOB_FAILED;
    a.finished_ms = 1200;
    a.error = "{\"status\":422}";
    a.error_status = 422;
    b.status = PARTD_JOB_QUEUED; /* a shutdown leaves it queued */
    const partd_job_row *rows[] = {&a, &b};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 2), PARTD_OK);

    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_FAILED);
    assert_finished_at(got.finished_ms, 1200);
    assert_int_equal(got.started_ms, 1100);
    assert_string_equal(got.error, "{\"status\":422}");
    assert_int_equal(got.error_status, 422);
    assert_null(got.summary);
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    assert_int_equal(got.started_ms, 0); /* cleared for the next start */
    assert_int_equal(got.finished_ms, 0); /* requeued: not finished */
    assert_int_equal(got.attempts, 0); /* stopped, not lost: not counted */
    partd_job_row_clear(&got);
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(s, a.cache_key, forms, etag, &summary),
                     PARTD_STORE_MISSING); /* no result was stored */
    partd_store_close(s);
}

/* A queued job finished at once from a cached result: the row says cached
 * and has its start time (the engine's finish_from_cache). */
static void test_finish_from_cache_keeps_cached_and_start(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row r = row_of(ID[0], 1000);
    assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, "{}", 2), PARTD_OK);
    r.status = PARTD_JOB_SUCCEEDED;
    r.started_ms = r.finished_ms = 1500;
    r.cached = 1;
    r.summary = "{\"n\":1}";
    const partd_job_row *rows[] = {&r};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_int_equal(got.cached, 1);
    assert_int_equal(got.started_ms, 1500);
    assert_finished_at(got.finished_ms, 1500);
    partd_job_row_clear(&got);
    partd_store_close(s);
}

/* Storing a result again replaces the one under its key (results are
 * deterministic: only a damaged copy differs) and counts as used again. */
static void test_put_result_replaces_the_stored_one(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_blob one[PARTD_CODINGS] = {{"ONE", 3}};
    partd_blob two[PARTD_CODINGS] = {{"TWO", 3}};
    partd_store_result r1 = {"sha256:k", "sha256:e1", "{\"n\":1}", one};
    partd_store_result r2 = {"sha256:k", "sha256:e2", "{\"n\":2}", two};
    assert_int_equal(partd_store_put_result(s, &r1), PARTD_OK);
    assert_int_equal(partd_store_put_result(s, &r2), PARTD_OK);
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(s, "sha256:k", forms, etag, &summary), PARTD_OK);
    assert_memory_equal(forms[PARTD_CODING_IDENTITY].data, "TWO", 3);
    assert_string_equal(etag, "sha256:e2");
    assert_string_equal(summary, "{\"n\":2}");
    partd_encoding_forms_free(forms);
    free(summary);
    partd_store_close(s);
}

/* Runs SQL on the store through a connection of the test's own: the
 * SQLite file, or the PostgreSQL database (pg_sql in that dialect). */
static void store_sql_on(const char *sql, const char *pg_sql)
{
    if (on_pg) {
        PGconn *conn = PQconnectdb(url);
        assert_int_equal(PQstatus(conn), CONNECTION_OK);
        PGresult *res = PQexec(conn, pg_sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            fail_msg("%s: %s", pg_sql, PQerrorMessage(conn));
        PQclear(res);
        PQfinish(conn);
        return;
    }
    char path[300];
    snprintf(path, sizeof path, "%s/partd.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* A result is served only when it still hashes to its ETag; a coded form
 * that does not decode to it is dropped. */
static void test_load_result_checks_the_hash(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    const char *text = "{\"summary\":{\"n\":1},\"padding\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}\n";
    partd_blob forms[PARTD_CODINGS] = {{strdup(text), strlen(text)}};
    assert_int_equal(partd_encoding_encode_all(forms), PARTD_OK);
    assert_non_null(forms[PARTD_CODING_ZSTD].data);
    assert_non_null(forms[PARTD_CODING_GZIP].data);
    char hash[72];
    assert_int_equal(partd_hash_bytes(text, strlen(text), hash), PARTD_OK);
    partd_store_result r = {"sha256:k", hash, "{\"n\":1}", forms};
    assert_int_equal(partd_store_put_result(s, &r), PARTD_OK);
    partd_encoding_forms_free(forms);

    partd_blob got[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_load_result(s, "sha256:k", got, etag, &summary), PARTD_OK);
    assert_string_equal(etag, hash);
    assert_non_null(got[PARTD_CODING_ZSTD].data);
    partd_encoding_forms_free(got);
    free(summary);

    /* A damaged coded form: the document is still served, alone. */
    store_sql_on("UPDATE results SET body_gzip = x'1f8b0800' WHERE cache_key = 'sha256:k'",
                 "UPDATE results SET body_gzip = '\\x1f8b0800' WHERE cache_key = 'sha256:k'");
    assert_int_equal(partd_store_load_result(s, "sha256:k", got, etag, &summary), PARTD_OK);
    assert_null(got[PARTD_CODING_GZIP].data);
    assert_non_null(got[PARTD_CODING_ZSTD].data);
    assert_memory_equal(got[PARTD_CODING_IDENTITY].data, text, strlen(text));
    partd_encoding_forms_free(got);
    free(summary);

    /* One changed byte in the document: never served. */
    store_sql_on("UPDATE results SET body = CAST(replace(CAST(body AS TEXT), '\"n\":1', "
                 "'\"n\":7') AS BLOB) WHERE cache_key = 'sha256:k'",
                 "UPDATE results SET body = convert_to(replace(convert_from(body, 'UTF8'), "
                 "'\"n\":1', '\"n\":7'), 'UTF8') WHERE cache_key = 'sha256:k'");
    summary = (char *)1;
    assert_int_equal(partd_store_load_result(s, "sha256:k", got, etag, &summary),
                     PARTD_STORE_DAMAGED);
    assert_null(summary);
    assert_null(got[PARTD_CODING_IDENTITY].data);
    assert_int_equal(partd_store_load_result(s, "sha256:none", got, etag, &summary),
                     PARTD_STORE_MISSING);
    partd_store_close(s);
}

static void test_cancel(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    for (int i = 0; i < 3; i++) {
        partd_job_row r = row_of(ID[i], 1000 + i);
        assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, "body", 4), PARTD_OK);
    }
    assert_int_equal(partd_store_mark_running(s, ID[1], 1500, "r1"), PARTD_OK);
    partd_job_row done = row_of(ID[2], 1002);
    done.status = PARTD_JOB_SUCCEEDED;
    done.finished_ms = 1600;
    done.summary = "{\"partitions\":1}";
    const partd_job_row *rows[] = {&done};
    assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);

    partd_job_row got;
    assert_int_equal(partd_store_cancel_job(s, ID[0], 2000, &got), PARTD_OK); /* queued */
    assert_string_equal(got.id, ID[0]);
    assert_int_equal(got.status, PARTD_JOB_CANCELLED);
    assert_finished_at(got.finished_ms, 2000);
    assert_int_equal(got.created_ms, 1000);
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_cancel_job(s, ID[1], 2100, NULL), PARTD_OK); /* running */
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_CANCELLED);
    assert_int_equal(got.started_ms, 1500);
    assert_finished_at(got.finished_ms, 2100);
    partd_job_row_clear(&got);

    /* Finished jobs stay as they are. */
    assert_int_equal(partd_store_cancel_job(s, ID[0], 3000, &got), PARTD_STORE_CONFLICT);
    assert_int_equal(partd_store_cancel_job(s, ID[2], 3000, &got), PARTD_STORE_CONFLICT);
    assert_int_equal(partd_store_get_job(s, ID[2], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_SUCCEEDED);
    assert_finished_at(got.finished_ms, 1600);
    assert_string_equal(got.summary, "{\"partitions\":1}");
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_finished_at(got.finished_ms, 2000);
    partd_job_row_clear(&got);

    collected pending = {0};
    assert_int_equal(partd_store_pending(s, collect_pending, &pending), PARTD_OK);
    assert_int_equal(pending.n, 0); /* nothing cancelled comes back after a restart */
    partd_store_close(s);
}

/* Walks every page of `status` (-1 any) with pages of `page` rows. */
static collected walk(partd_store *s, int status, unsigned page)
{
    collected all = {0};
    int64_t before = 0;
    for (;;) {
        collected c = {0};
        assert_int_equal(partd_store_list(s, status, before, page, collect, &c), PARTD_OK);
        assert_true(c.n <= (int)page);
        for (int i = 0; i < c.n; i++) {
            if (before > 0)
                assert_true(c.seq[i] < before);
            before = c.seq[i];
            all.seq[all.n] = c.seq[i];
            memcpy(all.ids[all.n++], c.ids[i], sizeof c.ids[i]);
        }
        if (c.n < (int)page)
            return all;
    }
}

static void test_list_pages_and_filter(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    for (int i = 0; i < 4; i++) {
        partd_job_row r = row_of(ID[i], 1000 + i);
        assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, "b", 1), PARTD_OK);
    }
    assert_int_equal(partd_store_cancel_job(s, ID[0], 2000, NULL), PARTD_OK);
    assert_int_equal(partd_store_cancel_job(s, ID[2], 2000, NULL), PARTD_OK);

    collected all = walk(s, -1, 3);
    assert_int_equal(all.n, 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(all.ids[i], ID[3 - i]); /* newest first, each once */
    collected pairs = walk(s, -1, 2); /* a last page that is full */
    assert_int_equal(pairs.n, 4);
    collected cancelled = walk(s, PARTD_JOB_CANCELLED, 1);
    assert_int_equal(cancelled.n, 2);
    assert_string_equal(cancelled.ids[0], ID[2]);
    assert_string_equal(cancelled.ids[1], ID[0]);
    collected queued = walk(s, PARTD_JOB_QUEUED, 10);
    assert_int_equal(queued.n, 2);
    assert_string_equal(queued.ids[0], ID[3]);
    assert_string_equal(queued.ids[1], ID[1]);
    collected none = walk(s, PARTD_JOB_FAILED, 10);
    assert_int_equal(none.n, 0);
    collected zero = {0};
    assert_int_equal(partd_store_list(s, -1, 0, 0, collect, &zero), PARTD_OK);
    assert_int_equal(zero.n, 0);
    partd_store_close(s);
}

typedef struct keys {
    char key[4][72];
    int n;
} keys;

static void collect_key(const char *key, void *ctx)
{
    keys *k = ctx;
    snprintf(k->key[k->n++], sizeof k->key[0], "%s", key);
}

/* Results unused since the cutoff go (named to fn first); results used
 * since, unfinished jobs and jobs finished since stay. */
static void test_sweep_results(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_blob doc[PARTD_CODINGS] = {{"DOC", 3}};
    partd_store_result old = {"sha256:old", "sha256:e", "{}", doc};
    partd_store_result used = {"sha256:used", "sha256:e", "{}", doc};
    assert_int_equal(partd_store_put_result(s, &old), PARTD_OK);
    assert_int_equal(partd_store_put_result(s, &used), PARTD_OK);
    /* Stored now: move "old" back in time, keep "used" in the future. */
    assert_int_equal(partd_store_touch_result(s, "sha256:old", 100), PARTD_OK);
    int64_t later = partd_time_now_ms() + 3600 * 1000;
    assert_int_equal(partd_store_touch_result(s, "sha256:used", later), PARTD_OK);
    partd_job_row a = row_of(ID[0], 50), b = row_of(ID[1], 60);
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, "b", 1), PARTD_OK);
    assert_int_equal(partd_store_insert_job(s, &b, NULL, NULL, "b", 1), PARTD_OK);
    assert_int_equal(partd_store_cancel_job(s, ID[1], 1000, NULL), PARTD_OK);

    keys k = {0};
    unsigned jobs = 9, results = 9;
    if (on_pg) {
        /* A shared store stamps uses and cancels with the database's
         * clock: nothing is as old as the times passed. */
        assert_int_equal(partd_store_sweep(s, 1001, NULL, NULL, &jobs, &results), PARTD_OK);
        assert_int_equal(jobs, 0);
        assert_int_equal(results, 0);
        int64_t now;
        assert_int_equal(partd_store_now_ms(s, &now), PARTD_OK);
        assert_int_equal(partd_store_sweep(s, now + 1, collect_key, &k, &jobs, &results),
                         PARTD_OK);
        assert_int_equal(jobs, 1); /* the cancelled one; the queued one stays */
        assert_int_equal(results, 2);
        assert_int_equal(k.n, 2);
        partd_store_close(s);
        return;
    }
    assert_int_equal(partd_store_sweep(s, 500, collect_key, &k, &jobs, &results), PARTD_OK);
    assert_int_equal(results, 1);
    assert_int_equal(jobs, 0); /* finished at 1000, after the cutoff */
    assert_int_equal(k.n, 1);
    assert_string_equal(k.key[0], "sha256:old");
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(s, "sha256:old", forms, etag, &summary),
                     PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_result(s, "sha256:used", forms, etag, &summary), PARTD_OK);
    partd_encoding_forms_free(forms);
    free(summary);

    assert_int_equal(partd_store_sweep(s, 1001, NULL, NULL, &jobs, &results), PARTD_OK);
    assert_int_equal(jobs, 1);
    assert_int_equal(results, 0);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK); /* queued: never swept */
    partd_job_row_clear(&got);
    partd_store_close(s);
}

static void expect_url_refused(const char *url, const char *needle, const char *secret)
{
    char err[512] = "";
    int code = 0;
    assert_null(partd_store_open_url(url, dir, err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_URL);
    if (!strstr(err, needle))
        fail_msg("\"%s\" does not name \"%s\"", err, needle);
    if (secret && strstr(err, secret))
        fail_msg("\"%s\" repeats the URL's secret", err);
}

static void test_store_urls(void **state)
{
    (void)state;
    expect_url_refused("mysql://partd:hunter2@127.0.0.1/partd", "\"mysql\"", "hunter2");
    expect_url_refused("mysql", "postgresql", NULL);
    expect_url_refused("mysql", "unknown store scheme \"mysql\"", NULL);
    expect_url_refused("mysql", "sqlite", NULL); /* names what this build supports */
    expect_url_refused(":nothing", "no scheme", NULL);
    expect_url_refused("sqlite:/elsewhere/x.db", "partd.db in the data directory", NULL);
    char path[300];
    snprintf(path, sizeof path, "%s/partd.db", dir);
    assert_int_equal(access(path, F_OK), -1); /* refused before creating anything */

    const char *fine[] = {NULL, "", "sqlite", "SQLite"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        char err[512];
        int code = 0;
        partd_store *s = partd_store_open_url(fine[i], dir, err, sizeof err, &code);
        if (!s)
            fail_msg("open failed: %s", err);
        assert_string_equal(partd_store_kind(s), "sqlite");
        partd_store_close(s);
    }
    assert_int_equal(access(path, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest urls[] = {
        cmocka_unit_test_setup_teardown(test_store_urls, setup, teardown),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_get_and_idempotency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_with_result_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pending_and_sweep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_rows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_without_result, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_from_cache_keeps_cached_and_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_put_result_replaces_the_stored_one, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_load_result_checks_the_hash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages_and_filter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_results, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("store urls", urls, NULL, NULL);
    failed += cmocka_run_group_tests_name("store on sqlite", tests, NULL, NULL);
    char why[512];
    int rc = partd_pg_server_start(&pg, why, sizeof why);
    if (rc != 0) {
        partd_pg_server_stop(&pg);
        printf("[  SKIPPED ] store on postgresql: %s\n", why);
        return failed + (rc < 0);
    }
    on_pg = 1;
    failed += cmocka_run_group_tests_name("store on postgresql", tests, NULL, NULL);
    partd_pg_server_stop(&pg);
    return failed;
}
