/* test_cmd_plan.c - daemon/cmd/cmd_plan.c: `partd plan` reads a request from a
 * file or stdin, writes the result to -o FILE (whole or not at all) and
 * exits 0 planned, 2 invalid request, 3 no feasible plan, 1 anything else;
 * `partd version` prints the version. Output streams are redirected to
 * files in a temporary directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "testutil.h"

#include "cmd/cmd_plan.h"
#include "partd/partd.h"

static const char *const REQ =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,"
    "\"param_bytes\":16,\"latency_ms\":0.25}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100}]}";

static int setup(void **state)
{
    (void)state;
    return tu_scratch_open("partd-plan");
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

/* `partd plan argv...` with stdin from stdin_file (NULL: unchanged) and
 * stdout/stderr into files of the temporary directory. */
static int run_plan(int argc, char **argv, const char *stdin_file)
{
    return tu_run_captured(partd_cmd_plan, argc, argv, stdin_file, path("stdout"), path("stderr"));
}

static void test_plans_a_file_into_o(void **state)
{
    (void)state;
    tu_write_text(path("req.json"), REQ);
    char *argv[] = {"plan", (char *)path("req.json"), "-o", (char *)path("out.json")};
    assert_int_equal(run_plan(4, argv, NULL), 0);
    char *result = tu_read_text(path("out.json"));
    assert_non_null(result);
    assert_non_null(strstr(result, "\"summary\":{\"partitions\":1"));
    /* Written beside the target and renamed: no temporary left. */
    assert_null(tu_read_text(path("out.json.tmp")));
    char *err = tu_read_text(path("stderr"));
    assert_string_equal(err, "");
    free(err);

    /* The same request gives the same bytes, also from stdin to stdout. */
    char *again[] = {"plan", "-"};
    assert_int_equal(run_plan(2, again, path("req.json")), 0);
    char *out = tu_read_text(path("stdout"));
    assert_string_equal(out, result);
    char *implicit[] = {"plan", "--output", (char *)path("out2.json")};
    assert_int_equal(run_plan(3, implicit, path("req.json")), 0);
    char *out2 = tu_read_text(path("out2.json"));
    assert_string_equal(out2, result);
    free(out2);
    free(out);
    free(result);
}

static void test_invalid_request_exits_2_with_problem(void **state)
{
    (void)state;
    tu_write_text(path("bad.json"), "{\"graph\":{\"name\":\"m\",\"nodes\":[]}}");
    char *argv[] = {"plan", (char *)path("bad.json"), "-o", (char *)path("out.json")};
    assert_int_equal(run_plan(4, argv, NULL), 2);
    assert_null(tu_read_text(path("out.json")));
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "\"status\":422"));
    assert_non_null(strstr(err, "/devices"));
    free(err);

    tu_write_text(path("malformed.json"), "{\"graph\":");
    char *malformed[] = {"plan", (char *)path("malformed.json")};
    assert_int_equal(run_plan(2, malformed, NULL), 2);
    err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "\"status\":400"));
    free(err);
}

static void test_infeasible_request_exits_3(void **state)
{
    (void)state;
    char *small = strdup(REQ);
    memcpy(strstr(small, "100}"), "1  }", 4);
    tu_write_text(path("small.json"), small);
    free(small);
    char *argv[] = {"plan", (char *)path("small.json"), "-o", (char *)path("out.json")};
    assert_int_equal(run_plan(4, argv, NULL), 3);
    assert_null(tu_read_text(path("out.json")));
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "infeasible"));
    free(err);
}

static void test_io_and_usage_errors_exit_1(void **state)
{
    (void)state;
    char *missing[] = {"plan", (char *)path("nope.json")};
    assert_int_equal(run_plan(2, missing, NULL), 1);
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "cannot read"));
    free(err);

    tu_write_text(path("req.json"), REQ);
    char *unwritable[] = {"plan", (char *)path("req.json"), "-o", (char *)path("no/dir/out.json")};
    assert_int_equal(run_plan(4, unwritable, NULL), 1);
    err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "cannot write"));
    free(err);

    char *no_o_arg[] = {"plan", (char *)path("req.json"), "-o"};
    assert_int_equal(run_plan(3, no_o_arg, NULL), 1);
    char *extra[] = {"plan", (char *)path("req.json"), (char *)path("req.json")};
    assert_int_equal(run_plan(3, extra, NULL), 1);
    err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "unexpected argument"));
    free(err);
    char *flag[] = {"plan", "--fast"};
    assert_int_equal(run_plan(2, flag, NULL), 1);

    char *help[] = {"plan", "--help"};
    assert_int_equal(run_plan(2, help, NULL), 0);
    char *out = tu_read_text(path("stdout"));
    assert_non_null(strstr(out, "usage: partd plan"));
    free(out);
}

static void test_version(void **state)
{
    (void)state;
    fflush(stdout);
    int saved = dup(1);
    int out = open(path("version"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    close(out);
    char *argv[] = {"version"};
    int code = partd_cmd_version(1, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    assert_int_equal(code, 0);
    char *text = tu_read_text(path("version"));
    char expect[64];
    snprintf(expect, sizeof expect, "partd %s (", PARTD_VERSION);
    assert_non_null(strstr(text, expect));
    assert_non_null(strstr(text, "build "));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plans_a_file_into_o, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_request_exits_2_with_problem, setup, teardown),
        cmocka_unit_test_setup_teardown(test_infeasible_request_exits_3, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_and_usage_errors_exit_1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_version, setup, teardown),
    };
    return cmocka_run_group_tests_name("cmd_plan", tests, NULL, NULL);
}
