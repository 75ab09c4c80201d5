/* test_store_sqlite.c - what is particular to the SQLite backend: the file
 * it opens (corrupt, foreign or newer files refused and left untouched, a
 * schema-1 store migrated in place), the size cap with the health flag and
 * its probe, and a value SQLite cannot bind refused without harm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "testutil.h"

#include "partd/partd.h"
#include "store/store.h"

static char dir[256];
static char path[300];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-store-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/partd.db", dir);
    return 0;
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

static const char *ID[] = {"00000000000000000000000000000001", "00000000000000000000000000000002"};

/* Runs sql on the database file directly. */
static void sql_exec(const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(db);
}

/* The first column of the first row of sql, read from the file directly. */
static int sql_int(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
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
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 1000; i++)
        fputs("not a database at all ", f);
    fclose(f);
    expect_refused(PARTD_EXIT_STORE_CORRUPT);
    unlink(path);
    /* An empty file is no store either: refused, and left empty. */
    f = fopen(path, "wb");
    fclose(f);
    expect_refused(PARTD_EXIT_STORE_CORRUPT);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
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
    partd_encoding_forms_free(forms);
    free(summary);
    partd_blob coded[PARTD_CODINGS] = {{"NEW", 3}, {"Z", 1}, {"G", 1}};
    partd_store_result res = {"sha256:new", "sha256:e2", "{}", coded};
    assert_int_equal(partd_store_finish_jobs(s, &res, NULL, 0), PARTD_OK);
    assert_int_equal(partd_store_get_result(s, "sha256:new", forms, etag, &summary), PARTD_OK);
    assert_memory_equal(forms[PARTD_CODING_ZSTD].data, "Z", 1);
    partd_encoding_forms_free(forms);
    free(summary);
    partd_store_close(s);

    assert_int_equal(sql_int("PRAGMA user_version"), 5);
}

/* A store written by schema 2 (no attempts, no runner) is migrated in place:
 * its jobs show no attempt yet, and the next run is counted. */
static void test_schema_2_store_is_migrated(void **state)
{
    (void)state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    const char *v2 =
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " status TEXT NOT NULL, created_ms INTEGER NOT NULL, started_ms INTEGER,"
        " finished_ms INTEGER, graph_hash TEXT NOT NULL, cache_key TEXT NOT NULL,"
        " cached INTEGER NOT NULL DEFAULT 0, summary TEXT, error TEXT, error_status INTEGER,"
        " idempotency_key TEXT UNIQUE, request_digest TEXT, request BLOB);"
        "CREATE TABLE results (cache_key TEXT PRIMARY KEY, etag TEXT NOT NULL,"
        " summary TEXT NOT NULL, body BLOB NOT NULL, created_ms INTEGER NOT NULL,"
        " used_ms INTEGER NOT NULL, body_zstd BLOB, body_gzip BLOB);"
        "INSERT INTO jobs (id, status, created_ms, started_ms, graph_hash, cache_key, request)"
        " VALUES ('00000000000000000000000000000001', 'running', 1, 2, 'g', 'k', '{}');"
        "PRAGMA application_id = 1885434484; PRAGMA user_version = 2;";
    assert_int_equal(sqlite3_exec(db, v2, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    partd_store *s = open_ok();
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_int_equal(got.status, PARTD_JOB_RUNNING);
    assert_int_equal(got.attempts, 0);
    assert_string_equal(got.runner, "");
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_mark_running(s, ID[0], 5, "host:1"), PARTD_OK);
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    assert_int_equal(got.attempts, 1);
    assert_string_equal(got.runner, "host:1");
    assert_string_equal(got.about, ""); /* a job from before schema 5 says nothing */
    partd_job_row_clear(&got);
    partd_store_close(s);
    assert_int_equal(sql_int("PRAGMA user_version"), 5);
}

/* Another program's database: refused, and not written to. */
static void test_foreign_database_is_refused(void **state)
{
    (void)state;
    sql_exec("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada');");
    char err[512] = "";
    int code = 0;
    assert_null(partd_store_open(dir, err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_CORRUPT);
    if (!strstr(err, "not a partd store"))
        fail_msg("unexpected reason: %s", err);
    assert_int_equal(sql_int("SELECT count(*) FROM people"), 1);
    assert_int_equal(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'jobs'"), 0);
    assert_int_equal(sql_int("PRAGMA application_id"), 0);
}

/* A store written by a newer partd: refused, its schema version kept. */
static void test_newer_schema_is_refused(void **state)
{
    (void)state;
    partd_store_close(open_ok());
    sql_exec("PRAGMA user_version = 6;");
    char err[512] = "";
    int code = 0;
    assert_null(partd_store_open(dir, err, sizeof err, &code));
    assert_int_equal(code, PARTD_EXIT_STORE_CORRUPT);
    if (!strstr(err, "schema 5 or older") || !strstr(err, "user_version 6"))
        fail_msg("unexpected reason: %s", err);
    assert_int_equal(sql_int("PRAGMA user_version"), 6);
}

/* Past the size cap writes fail as on a full disk: the store turns
 * unhealthy, reads go on, and a probe that can write heals it. */
static void test_full_store_is_unhealthy_until_a_probe(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row a = row_of(ID[0], 1000), b = row_of(ID[1], 1001);
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, "{}", 2), PARTD_OK);
    assert_int_equal(partd_store_limit_size(s, 1), PARTD_OK); /* its current size */
    size_t big = 1 << 20;
    char *body = calloc(1, big);
    assert_non_null(body);
    assert_int_equal(partd_store_insert_job(s, &b, NULL, NULL, body, big), PARTD_EIO);
    free(body);
    assert_false(partd_store_healthy(s));
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_OK);
    partd_job_row_clear(&got);
    assert_int_equal(partd_store_get_job(s, ID[1], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_probe(s), PARTD_OK);
    assert_true(partd_store_healthy(s));
    assert_int_equal(partd_store_limit_size(s, 0), PARTD_OK); /* 0: no new cap */
    partd_store_close(s);
}

/* A request body over SQLite's length limit is refused by the bind: an
 * error of that call, not of the store, and nothing is written. */
static void test_unbindable_value_is_refused(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    partd_job_row a = row_of(ID[0], 1000);
    static const char body[] = "{}";
    size_t too_long = (size_t)3 << 30; /* SQLite rejects it before reading */
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, body, too_long), PARTD_EIO);
    assert_true(partd_store_healthy(s));
    partd_job_row got;
    assert_int_equal(partd_store_get_job(s, ID[0], &got), PARTD_STORE_MISSING);
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, body, 2), PARTD_OK);
    partd_store_close(s);
}

/* The write-ahead log is checkpointed and cut back while the store runs:
 * through jobs that write four times the bound, the WAL file never passes
 * 32 MiB, and the database file holds what was committed. The writer
 * checkpoints itself past its threshold, so this does not depend on when
 * the checkpoint thread runs. */
static void test_wal_stays_bounded_through_many_jobs(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    size_t body_len = 256 << 10;
    char *body = malloc(body_len);
    assert_non_null(body);
    for (size_t i = 0; i < body_len; i++)
        body[i] = (char)('a' + (i * 7919) % 26);
    char wal_path[320];
    snprintf(wal_path, sizeof wal_path, "%s-wal", path);
    off_t most = 0;
    for (int i = 0; i < 384; i++) { /* 96 MiB of request bodies */
        char id[33];
        snprintf(id, sizeof id, "%032d", i);
        partd_job_row r = row_of(id, 1000 + i);
        assert_int_equal(partd_store_insert_job(s, &r, NULL, NULL, body, body_len), PARTD_OK);
        r.status = PARTD_JOB_SUCCEEDED;
        r.finished_ms = 2000 + i;
        const partd_job_row *rows[1] = {&r};
        assert_int_equal(partd_store_finish_jobs(s, NULL, rows, 1), PARTD_OK);
        struct stat st;
        if (stat(wal_path, &st) == 0 && st.st_size > most)
            most = st.st_size;
    }
    free(body);
    assert_true(most <= (off_t)32 << 20);
    struct stat db;
    assert_int_equal(stat(path, &db), 0);
    assert_true(db.st_size > (off_t)(128 << 10)); /* checkpointed into the file */
    partd_store_close(s);
}

/* --store-max-bytes counts the WAL: filled until writes fail, the database
 * file and its log together stay within the cap. */
static void test_size_cap_counts_the_wal(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    uint64_t cap = (uint64_t)4 << 20;
    assert_int_equal(partd_store_limit_size(s, cap), PARTD_OK);
    size_t body_len = 64 << 10;
    char *body = calloc(1, body_len);
    assert_non_null(body);
    char wal_path[320];
    snprintf(wal_path, sizeof wal_path, "%s-wal", path);
    uint64_t most = 0;
    int i = 0, rc = PARTD_OK;
    for (; rc == PARTD_OK && i < 200; i++) {
        char id[33];
        snprintf(id, sizeof id, "%032d", i);
        partd_job_row r = row_of(id, 1000 + i);
        rc = partd_store_insert_job(s, &r, NULL, NULL, body, body_len);
        struct stat db, wal;
        uint64_t total = (stat(path, &db) == 0 ? (uint64_t)db.st_size : 0) +
                         (stat(wal_path, &wal) == 0 ? (uint64_t)wal.st_size : 0);
        if (total > most)
            most = total;
    }
    free(body);
    assert_int_equal(rc, PARTD_EIO); /* it did fill up */
    assert_true(i > 8);
    assert_true(most <= cap);
    partd_store_close(s);
}

/* What readiness weighs: the room left under the cap shrinks as jobs are
 * written (none without a cap), and what a job needs follows the largest
 * write (at least PARTD_STORE_JOB_MIN_BYTES). */
static void test_room_and_job_bytes(void **state)
{
    (void)state;
    partd_store *s = open_ok();
    uint64_t room = 0;
    assert_int_equal(partd_store_room(s, &room), PARTD_OK);
    assert_true(room == UINT64_MAX);
    assert_true(partd_store_job_bytes(s) == PARTD_STORE_JOB_MIN_BYTES);
    assert_int_equal(partd_store_limit_size(s, (uint64_t)16 << 20), PARTD_OK);
    uint64_t before = 0;
    assert_int_equal(partd_store_room(s, &before), PARTD_OK);
    assert_true(before > ((uint64_t)8 << 20) && before < ((uint64_t)16 << 20));
    size_t big = (size_t)1 << 20;
    char *body = calloc(1, big);
    assert_non_null(body);
    partd_job_row a = row_of(ID[0], 1000);
    assert_int_equal(partd_store_insert_job(s, &a, NULL, NULL, body, big), PARTD_OK);
    free(body);
    assert_int_equal(partd_store_room(s, &room), PARTD_OK);
    assert_true(room <= before - big);
    assert_true(partd_store_job_bytes(s) == 2 * (uint64_t)big);
    partd_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_schema_1_store_is_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_2_store_is_migrated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_and_foreign_files_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_foreign_database_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_store_is_unhealthy_until_a_probe, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unbindable_value_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_stays_bounded_through_many_jobs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_size_cap_counts_the_wal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_room_and_job_bytes, setup, teardown),
    };
    return cmocka_run_group_tests_name("store_sqlite", tests, NULL, NULL);
}
