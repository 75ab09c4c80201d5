/* test_store.c - the SQLite store: rows round-trip, idempotency keys,
 * finishing with a result, listing order, pending jobs, the retention sweep,
 * and refusal of corrupt or foreign databases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "testutil.h"

#include "partd.h"
#include "store.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-store-XXXXXX");
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
    partd_store *s = partd_store_open(dir, err, sizeof err, &code);
    if (!s)
        fail_msg("open failed: %s", err);
    return s;
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

static void test_insert_get_and_idempotency(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row r = row_of(ID[0], 1000);
    assert_int_equal(partd_store_insert_job(s, &r, "key-1", "sha256:d1", "{}", 2), PARTD_OK);
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_string_equal(got.id, ID[0]);
    assert_int_equal(got.status, PARTD_JOB_QUEUED);
    assert_int_equal(got.created_ms, 1000);
    assert_int_equal(got.started_ms, 0);
    assert_string_equal(got.cache_key, r.cache_key);
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
    assert_int_equal(partd_store_mark_running(s, ID[0], 1500), PARTD_OK);
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
    assert_int_equal(got.finished_ms, 2000);
    assert_string_equal(got.summary, "{\"partitions\":2}");
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
    partd_blobs_free(forms);
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
    assert_int_equal(partd_store_mark_running(s, ID[2], 3000), PARTD_OK);

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
    assert_int_equal(pending.body_len[0], 4);

    unsigned jobs = 0, results = 0;
    assert_int_equal(partd_store_sweep(s, 500, NULL, NULL, &jobs, &results), PARTD_OK);
    assert_int_equal(jobs, 1); /* only the finished one */
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    partd_job_row_clear(&got);
    partd_store_close(s);
}

static void expect_refused(int want_code)
{
    char err[512];
    int code = 0;
    partd_store *s = partd_store_open(dir, err, sizeof err, &code);
    assert_null(s);
    assert_int_equal(code, want_code);
    assert_true(strlen(err) > 10);
}

static void test_corrupt_and_foreign_files_are_refused(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/partd.db", dir);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 1000; i++)
        fputs("not a database at all ", f);
    fclose(f);
    expect_refused(PARTD_EXIT_STORE_CORRUPT);
    unlink(path);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "%s/notadir", dir);
    f = fopen(cmd, "w");
    fclose(f);
    char inner[320];
    snprintf(inner, sizeof inner, "%s/notadir/sub", dir);
    char err[256];
    int code = 0;
    assert_null(partd_store_open(inner, err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_UNWRITABLE);
}

/* A store written by schema 1 (no coded forms) is migrated in place: its
 * results stay and are served as they were. */
static void test_schema_1_store_is_migrated(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/partd.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    const char *v1 =
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " status TEXT NOT NULL, created_ms INTEGER NOT NULL, started_ms INTEGER,"
        " finished_ms INTEGER, graph_hash TEXT NOT NULL, cache_key TEXT NOT NULL,"
        " cached INTEGER NOT NULL DEFAULT 0, summary TEXT, error TEXT, error_status INTEGER,"
        " idempotency_key TEXT UNIQUE, request_digest TEXT, request BLOB);"
        "CREATE TABLE results (cache_key TEXT PRIMARY KEY, etag TEXT NOT NULL,"
        " summary TEXT NOT NULL, body BLOB NOT NULL, created_ms INTEGER NOT NULL,"
        " used_ms INTEGER NOT NULL);"
        "INSERT INTO results VALUES ('sha256:old', 'sha256:e1', '{}', 'OLD', 1, 1);"
        "PRAGMA application_id = 1885434484; PRAGMA user_version = 1;";
    assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    partd_store *s = open_ok();
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    assert_int_equal(partd_store_get_result(s, "sha256:old", forms, etag, &summary), PARTD_OK);
    assert_memory_equal(forms[PARTD_CODING_IDENTITY].data, "OLD", 3);
    assert_null(forms[PARTD_CODING_GZIP].data);
    assert_null(forms[PARTD_CODING_ZSTD].data);
    partd_blobs_free(forms);
    free(summary);
    partd_blob coded[PARTD_CODINGS] = {{"NEW", 3}, {"Z", 1}, {"G", 1}};
    partd_store_result res = {"sha256:new", "sha256:e2", "{}", coded};
    assert_int_equal(partd_store_finish_jobs(s, &res, NULL, 0), PARTD_OK);
    assert_int_equal(partd_store_get_result(s, "sha256:new", forms, etag, &summary), PARTD_OK);
    assert_memory_equal(forms[PARTD_CODING_ZSTD].data, "Z", 1);
    partd_blobs_free(forms);
    free(summary);
    partd_store_close(s);

    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_get_and_idempotency, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finish_with_result_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pending_and_sweep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_1_store_is_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_and_foreign_files_are_refused, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
