/* test_cmd_show.c - daemon/cmd/cmd_show.c: `partd show` reads a result from a
 * file or stdin and writes its SVG or text table to stdout or -o FILE;
 * exit 0 drawn, 1 I/O or usage, 2 not a result document (one line naming
 * the member). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "testutil.h"

#include "cmd/cmd_show.h"
#include "partd/partd.h"

static const char *const REQ =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":0.25},"
    "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":0.5}]},"
    "\"devices\":[{\"name\":\"g<0>\",\"memory_bytes\":100},{\"name\":\"g1\",\"memory_bytes\":100}]}";

static int setup(void **state)
{
    (void)state;
    return tu_scratch_open("partd-show");
}

static int teardown(void **state)
{
    (void)state;
    return tu_scratch_close();
}

static const char *path(const char *name)
{
    return tu_scratch_path(name);
}

/* `partd show argv...` with stdin from stdin_file (NULL: unchanged) and
 * stdout/stderr into files of the temporary directory. */
static int run_show(int argc, char **argv, const char *stdin_file)
{
    return tu_run_captured(partd_cmd_show, argc, argv, stdin_file, path("stdout"), path("stderr"));
}

static void write_result(const char *file)
{
    int rc;
    partd_problem pb;
    partd_problem_init(&pb);
    char *result = tu_plan_json(REQ, &rc, &pb);
    assert_non_null(result);
    tu_write_text(file, result);
    free(result);
    partd_problem_free(&pb);
}

static void test_svg_to_stdout_and_to_a_file_are_the_same(void **state)
{
    (void)state;
    write_result(path("result.json"));
    char *argv1[] = {"show", (char *)path("result.json"), NULL};
    assert_int_equal(run_show(2, argv1, NULL), 0);
    char *svg = tu_read_text(path("stdout"));
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "g&lt;0&gt;")); /* the device name, escaped */
    char *argv2[] = {"show", "-", "-o", (char *)path("plan.svg"), NULL};
    assert_int_equal(run_show(4, argv2, path("result.json")), 0);
    char *again = tu_read_text(path("plan.svg"));
    assert_string_equal(svg, again);
    free(svg);
    free(again);
}

static void test_text_table(void **state)
{
    (void)state;
    write_result(path("result.json"));
    char *argv[] = {"show", (char *)path("result.json"), "--format", "text", NULL};
    assert_int_equal(run_show(4, argv, NULL), 0);
    char *text = tu_read_text(path("stdout"));
    assert_non_null(strstr(text, "stage"));
    assert_non_null(strstr(text, "g1"));
    assert_null(strstr(text, "<svg"));
    free(text);
}

static void test_not_a_result_exits_2_with_one_line(void **state)
{
    (void)state;
    tu_write_text(path("request.json"), REQ);
    char *argv[] = {"show", (char *)path("request.json"), NULL};
    assert_int_equal(run_show(2, argv, NULL), 2);
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "not a result document"));
    size_t lines = 0;
    for (const char *c = err; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 1);
    char *out = tu_read_text(path("stdout"));
    assert_string_equal(out, "");
    free(err);
    free(out);
}

static void test_io_and_usage_errors_exit_1(void **state)
{
    (void)state;
    char *missing[] = {"show", (char *)path("missing.json"), NULL};
    assert_int_equal(run_show(2, missing, NULL), 1);
    write_result(path("result.json"));
    char *unwritable[] = {"show", (char *)path("result.json"), "-o",
                          (char *)path("no-dir/plan.svg"), NULL};
    assert_int_equal(run_show(4, unwritable, NULL), 1);
    char *bad_format[] = {"show", (char *)path("result.json"), "--format", "png", NULL};
    assert_int_equal(run_show(4, bad_format, NULL), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_svg_to_stdout_and_to_a_file_are_the_same, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_text_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_result_exits_2_with_one_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_and_usage_errors_exit_1, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
