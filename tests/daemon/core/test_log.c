/* test_log.c - daemon/core/log.c: one line per event on stderr, text
 * ("TS LEVEL EVENT key=value ...", values quoted and escaped when needed,
 * "-" for a missing string) or JSON (one object, numbers bare, null for a
 * missing string), lines cut at 4 KiB but always whole; partd_log_msg puts
 * its formatted text in "msg". log.c has no level filter: every level is
 * written. stderr is redirected to a file for each test. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "testutil.h"

#include "core/fs.h"
#include "core/log.h"
#include "partd/partd.h"

static char file[64];
static int saved_stderr = -1;

/* Sends stderr to a fresh temporary file. */
static int capture(void **state)
{
    (void)state;
    snprintf(file, sizeof file, "/tmp/partd-log-XXXXXX");
    int fd = mkstemp(file);
    if (fd < 0)
        return -1;
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    return 0;
}

static int restore(void **state)
{
    (void)state;
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    unlink(file);
    partd_log_init(PARTD_LOG_TEXT);
    return 0;
}

/* Everything logged so far (caller frees). */
static char *logged(void)
{
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(partd_fs_read_file(file, 1 << 20, &buf, &len), PARTD_OK);
    return buf;
}

/* "2026-01-02T03:04:05.678Z" at the start of s. */
static void assert_timestamp(const char *s)
{
    assert_true(strlen(s) >= 24);
    for (int i = 0; i < 24; i++) {
        char c = s[i];
        switch (i) {
        case 4: case 7: assert_int_equal(c, '-'); break;
        case 10: assert_int_equal(c, 'T'); break;
        case 13: case 16: assert_int_equal(c, ':'); break;
        case 19: assert_int_equal(c, '.'); break;
        case 23: assert_int_equal(c, 'Z'); break;
        default: assert_true(c >= '0' && c <= '9');
        }
    }
}

static void test_text_line(void **state)
{
    (void)state;
    partd_log_init(PARTD_LOG_TEXT);
    partd_log_field f[] = {PARTD_LF_S("id", "abc"),
                           PARTD_LF_N("count", 3),
                           PARTD_LF_N("ratio", 1.5),
                           PARTD_LF_S("detail", "two words"),
                           PARTD_LF_S("quote", "say \"hi\"\n"),
                           PARTD_LF_S("empty", ""),
                           PARTD_LF_S("none", NULL),
                           PARTD_LF_END};
    partd_log("warn", "job", f);
    char *text = logged();
    assert_timestamp(text);
    assert_string_equal(text + 24, " warn job id=abc count=3 ratio=1.500 detail=\"two words\" "
                                   "quote=\"say \\\"hi\\\"\\u000a\" empty=\"\" none=-\n");
    free(text);
}

static void test_json_line(void **state)
{
    (void)state;
    partd_log_init(PARTD_LOG_JSON);
    partd_log_field f[] = {PARTD_LF_S("id", "a\"b\\c\x01"),
                           PARTD_LF_N("ms", 12),
                           PARTD_LF_N("secs", 0.25),
                           PARTD_LF_S("none", NULL),
                           PARTD_LF_END};
    partd_log("error", "store", f);
    char *text = logged();
    size_t len = strlen(text);
    assert_int_equal(text[len - 1], '\n');
    assert_null(memchr(text, '\n', len - 1)); /* one line */
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    assert_non_null(doc);
    assert_timestamp(json_string_value(json_object_get(doc, "ts")));
    assert_string_equal(json_string_value(json_object_get(doc, "level")), "error");
    assert_string_equal(json_string_value(json_object_get(doc, "event")), "store");
    assert_string_equal(json_string_value(json_object_get(doc, "id")), "a\"b\\c\x01");
    assert_int_equal(json_integer_value(json_object_get(doc, "ms")), 12);
    assert_true(json_real_value(json_object_get(doc, "secs")) == 0.25);
    assert_true(json_is_null(json_object_get(doc, "none")));
    /* Keys in the order given, after ts, level and event. */
    assert_true(strstr(text, "\"event\"") < strstr(text, "\"id\""));
    assert_true(strstr(text, "\"id\"") < strstr(text, "\"ms\""));
    json_decref(doc);
    free(text);
}

static void test_msg_and_every_level_written(void **state)
{
    (void)state;
    partd_log_init(PARTD_LOG_TEXT);
    partd_log_msg("info", "shutdown", "stopping %d run(s)", 2);
    partd_log_msg("warn", "shutdown", "%s", "grace over");
    partd_log_msg("error", "store", "disk %s", "full");
    partd_log("debug", "x", NULL);
    char *text = logged();
    assert_non_null(strstr(text, " info shutdown msg=\"stopping 2 run(s)\"\n"));
    assert_non_null(strstr(text, " warn shutdown msg=\"grace over\"\n"));
    assert_non_null(strstr(text, " error store msg=\"disk full\"\n"));
    assert_non_null(strstr(text, " debug x\n"));
    int lines = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 4);
    free(text);
}

static void test_long_line_is_cut_but_whole(void **state)
{
    (void)state;
    partd_log_init(PARTD_LOG_JSON);
    char *big = malloc(10000);
    memset(big, 'x', 9999);
    big[9999] = '\0';
    partd_log_field f[] = {PARTD_LF_S("big", big), PARTD_LF_END};
    partd_log("info", "big", f);
    partd_log("info", "after", NULL);
    free(big);
    char *text = logged();
    size_t first = strcspn(text, "\n") + 1; /* the first line, with its newline */
    assert_int_equal(text[first - 1], '\n');
    assert_true(first <= 4096 && first >= 4000);
    assert_non_null(strstr(text + first, "\"event\":\"after\"}\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_text_line, capture, restore),
        cmocka_unit_test_setup_teardown(test_json_line, capture, restore),
        cmocka_unit_test_setup_teardown(test_msg_and_every_level_written, capture, restore),
        cmocka_unit_test_setup_teardown(test_long_line_is_cut_but_whole, capture, restore),
    };
    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
