/* test_serve.c - daemon/serve/serve.c: `partd serve` starts on 127.0.0.1:0 with
 * a fresh data directory, answers /livez and /readyz, drains and exits 0 on
 * SIGTERM; it refuses to start (with its exit code and a sentence) on bad
 * flags, a data directory it cannot create, a corrupt store, and a missing
 * or short token file. The daemon runs in a forked child (serve_child.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "testutil.h"

#include "serve/serve.h"
#include "serve_child.h"
#include "store/store.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-serve-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static size_t keep_body(char *data, size_t size, size_t n, void *ctx)
{
    char *body = ctx;
    size_t have = strlen(body), len = size * n;
    if (have + len < 4096) {
        memcpy(body + have, data, len);
        body[have + len] = '\0';
    }
    return len;
}

/* The status of GET http://address/path; body gets the first 4 KiB. */
static long http_get(const char *address, const char *path, char body[4096])
{
    char url[256];
    snprintf(url, sizeof url, "http://%s%s", address, path);
    body[0] = '\0';
    CURL *c = curl_easy_init();
    assert_non_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(c);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

static void test_serves_livez_then_drains_on_sigterm(void **state)
{
    (void)state;
    char *argv[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", dir};
    tu_server s;
    int code = 0;
    assert_int_equal(tu_server_start(&s, 5, argv, &code), 0);
    assert_non_null(strstr(s.address, "127.0.0.1:"));
    assert_string_not_equal(s.address, "127.0.0.1:0");

    char body[4096];
    assert_int_equal(http_get(s.address, "/livez", body), 200);
    /* Listening is logged once recovery is done: ready. */
    assert_int_equal(http_get(s.address, "/readyz", body), 200);
    assert_int_equal(http_get(s.address, "/no-such-route", body), 404);

    int stopped = 0;
    assert_int_equal(tu_server_stop(&s, "stopped", &stopped), 0);
    assert_true(stopped);
    /* It made its store in the data directory. */
    char db[128];
    snprintf(db, sizeof db, "%s/partd.db", dir);
    assert_int_equal(access(db, F_OK), 0);

    /* And starts again on the same store. */
    assert_int_equal(tu_server_start(&s, 5, argv, &code), 0);
    assert_int_equal(http_get(s.address, "/livez", body), 200);
    assert_int_equal(tu_server_stop(&s, NULL, NULL), 0);
}

/* The exit code of a start that must fail; its stderr must say why
 * (contain `reason`). */
static int refused(int argc, char **argv, const char *reason)
{
    tu_server s;
    int code = -2;
    assert_int_equal(tu_server_start(&s, argc, argv, &code), -1);
    if (!strstr(s.text, reason))
        fail_msg("expected '%s' in: %s", reason, s.text);
    return code;
}

static void test_refuses_a_data_dir_it_cannot_create(void **state)
{
    (void)state;
    /* Below a regular file: no directory can be made there (even by root). */
    char file[128], sub[160];
    snprintf(file, sizeof file, "%s/file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(sub, sizeof sub, "%s/data", file);
    char *argv[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", sub};
    assert_int_equal(refused(5, argv, "cannot create the data directory"), PARTD_EXIT_STORE_UNWRITABLE);
}

static void test_refuses_a_corrupt_store(void **state)
{
    (void)state;
    char db[128];
    snprintf(db, sizeof db, "%s/partd.db", dir);
    FILE *f = fopen(db, "w");
    assert_non_null(f);
    for (int i = 0; i < 8192; i++)
        fputc('x', f);
    fclose(f);
    char *argv[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", dir};
    assert_int_equal(refused(5, argv, "not a database"), PARTD_EXIT_STORE_CORRUPT);
}

static void test_refuses_bad_flags_and_token_files(void **state)
{
    (void)state;
    char *unknown[] = {"serve", "--no-such-flag", "1"};
    assert_int_equal(refused(3, unknown, "--no-such-flag"), 64);
    /* Refused after the store, timers and job engine were set up: the exact
     * code (under ASan a leak would turn it into LSan's). */
    char *bad_listen[] = {"serve", "--listen", "127.0.0.1:notaport", "--data-dir", dir};
    assert_int_equal(refused(5, bad_listen, "bad port"), 71);

    char missing[128];
    snprintf(missing, sizeof missing, "%s/no-token", dir);
    char *no_token[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
                        "--token-file", missing};
    assert_int_equal(refused(7, no_token, "cannot read --token-file"), 66);

    char short_token[128];
    snprintf(short_token, sizeof short_token, "%s/token", dir);
    FILE *f = fopen(short_token, "w");
    assert_non_null(f);
    fputs("short\n", f);
    fclose(f);
    char *weak[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
                    "--token-file", short_token};
    assert_int_equal(refused(7, weak, "at least 16 characters"), 66);
}

static void test_help_exits_zero(void **state)
{
    (void)state;
    char *argv[] = {"serve", "--help"};
    /* Help goes to stdout before anything starts: no child needed. */
    fflush(stdout);
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    assert_non_null(stdout);
    int code = partd_serve_main(2, argv);
    fclose(stdout);
    stdout = saved;
    assert_int_equal(code, 0);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serves_livez_then_drains_on_sigterm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_a_data_dir_it_cannot_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_a_corrupt_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_bad_flags_and_token_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_exits_zero, setup, teardown),
    };
    int rc = cmocka_run_group_tests_name("serve", tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
