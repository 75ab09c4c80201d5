/* test_cmd_export.c - daemon/cmd/cmd_export.c: `partd export` reads a result
 * from a file or stdin and writes the export to stdout or -o FILE; exit 0
 * exported, 1 I/O or usage, 2 not a result or a plan the format cannot
 * express (the problem document on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "capture.h"
#include "export_results.h"
#include "testutil.h"

#include "cmd/cmd_export.h"
#include "partd/partd.h"

static const char *const units[] = {"tok_embeddings layers.0", "layers.1 norm output"};

static int setup(void **state)
{
    (void)state;
    return tu_scratch_open("partd-export");
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

static int run_export(int argc, char **argv, const char *stdin_file)
{
    return tu_run_captured(partd_cmd_export, argc, argv, stdin_file, path("stdout"),
                           path("stderr"));
}

static void write_result(const char *schedule)
{
    tu_training_spec s = {schedule, 2, 1, 4, "never", units, NULL, 0};
    char *text = tu_training_result_text(&s);
    tu_write_text(path("result.json"), text);
    free(text);
}

static void test_stdout_stdin_and_a_file_are_the_same(void **state)
{
    (void)state;
    write_result("1F1B");
    char *argv1[] = {"export", (char *)path("result.json"), "--format", "pytorch", NULL};
    assert_int_equal(run_export(4, argv1, NULL), 0);
    char *csv = tu_read_text(path("stdout"));
    assert_string_equal(csv, "0F0,0F1,0B0,0F2,0B1,0F3,0B2,0B3\n1F0,1B0,1F1,1B1,1F2,1B2,1F3,1B3\n");
    char *argv2[] = {"export", "-", "--format", "pytorch", "-o", (char *)path("s.csv"), NULL};
    assert_int_equal(run_export(6, argv2, path("result.json")), 0);
    char *again = tu_read_text(path("s.csv"));
    assert_string_equal(csv, again);
    char *out = tu_read_text(path("stdout"));
    assert_string_equal(out, "");
    free(csv);
    free(again);
    free(out);
}

static void test_strict_refuses_an_approximation(void **state)
{
    (void)state;
    write_result("GPipe");
    char *loose[] = {"export", (char *)path("result.json"), "--format", "megatron", NULL};
    assert_int_equal(run_export(4, loose, NULL), 0);
    char *text = tu_read_text(path("stdout"));
    assert_non_null(strstr(text, "# warning (megatron-schedule)"));
    free(text);
    char *strict[] = {"export", (char *)path("result.json"), "--format", "megatron", "--strict",
                      NULL};
    assert_int_equal(run_export(5, strict, NULL), 2);
    char *err = tu_read_text(path("stderr"));
    json_t *pb = json_loads(err, 0, NULL);
    assert_non_null(pb);
    assert_string_equal(json_string_value(json_object_get(pb, "type")),
                        "urn:partd:problem:export-not-expressible");
    json_decref(pb);
    free(err);
    char *out = tu_read_text(path("stdout"));
    assert_string_equal(out, "");
    free(out);
}

static void test_not_a_result_exits_2(void **state)
{
    (void)state;
    tu_write_text(path("request.json"), "{\"graph\": {}}");
    char *argv[] = {"export", (char *)path("request.json"), "--format", "fx", NULL};
    assert_int_equal(run_export(4, argv, NULL), 2);
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "urn:partd:problem:not-a-result"));
    free(err);
    tu_write_text(path("broken.json"), "{\"mode\":");
    char *broken[] = {"export", (char *)path("broken.json"), "--format", "fx", NULL};
    assert_int_equal(run_export(4, broken, NULL), 2);
    err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "\"status\":400"));
    free(err);
}

static void test_io_and_usage_errors_exit_1(void **state)
{
    (void)state;
    write_result("1F1B");
    char *missing[] = {"export", (char *)path("missing.json"), "--format", "fx", NULL};
    assert_int_equal(run_export(4, missing, NULL), 1);
    char *err = tu_read_text(path("stderr"));
    assert_non_null(strstr(err, "partd export: cannot read"));
    free(err);
    char *unwritable[] = {"export", (char *)path("result.json"), "--format", "fx", "-o",
                          (char *)path("no-dir/x.json"), NULL};
    assert_int_equal(run_export(6, unwritable, NULL), 1);
    char *no_format[] = {"export", (char *)path("result.json"), NULL};
    assert_int_equal(run_export(2, no_format, NULL), 1);
    char *bad_format[] = {"export", (char *)path("result.json"), "--format", "onnx", NULL};
    assert_int_equal(run_export(4, bad_format, NULL), 1);
    char *extra[] = {"export", (char *)path("result.json"), "other.json", "--format", "fx", NULL};
    assert_int_equal(run_export(5, extra, NULL), 1);
    char *help[] = {"export", "--help", NULL};
    assert_int_equal(run_export(2, help, NULL), 0);
    char *out = tu_read_text(path("stdout"));
    assert_non_null(strstr(out, "torchtitan"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stdout_stdin_and_a_file_are_the_same, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_strict_refuses_an_approximation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_result_exits_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_io_and_usage_errors_exit_1, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
