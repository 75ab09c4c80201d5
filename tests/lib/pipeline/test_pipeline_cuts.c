/* test_pipeline_cuts.c - pipeline_cuts.c: cut_after entries resolved into
 * ascending stage-end positions by node name or module fqn (the module's
 * last node); two entries ending the same stage, and names matching
 * nothing, are errors at their pointer (decoding runs the resolver). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "partd/partd.h"
#include "pipeline/pipeline_cuts.h"

static void request_json(char *json, size_t cap, const char *cuts)
{
    snprintf(json, cap,
             "{\"graph\":{\"nodes\":["
             "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
             "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"module\":\"blk.0.fc\"},"
             "{\"name\":\"b\",\"op\":\"call_module\",\"inputs\":[\"a\"],\"module\":\"blk.0.act\"},"
             "{\"name\":\"c\",\"op\":\"call_module\",\"inputs\":[\"b\"],\"module\":\"blk.1\"},"
             "{\"name\":\"d\",\"op\":\"call_module\",\"inputs\":[\"c\"],\"module\":\"head\"}]},"
             "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100},{\"name\":\"g1\","
             "\"memory_bytes\":100},{\"name\":\"g2\",\"memory_bytes\":100}],"
             "\"options\":{\"pipeline\":{\"cut_after\":%s}}}",
             cuts);
}

static partd_request *request_with_cuts(const char *cuts)
{
    char json[2048];
    request_json(json, sizeof json, cuts);
    return tu_decode_ok(json);
}

static void test_names_and_modules_resolve_to_positions(void **state)
{
    (void)state;
    /* "blk.0" is a module fqn: its last node is b (rank 1), so the cut is
     * after rank 1, position 2; "c" is a node name (rank 2), position 3. */
    partd_request *req = request_with_cuts("[\"c\",\"blk.0\"]");
    int32_t *cuts = NULL;
    uint32_t n = 0;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_pipeline_resolve_cuts(req, &cuts, &n, &pb), PARTD_OK);
    assert_int_equal(n, 2); /* ascending, whatever the order given */
    assert_int_equal(cuts[0], 2);
    assert_int_equal(cuts[1], 3);
    free(cuts);
    partd_problem_free(&pb);
    partd_request_free(req);
}

static void test_no_entries_give_no_cuts(void **state)
{
    (void)state;
    partd_request *req = request_with_cuts("[]");
    int32_t *cuts = (int32_t *)1;
    uint32_t n = 7;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd_pipeline_resolve_cuts(req, &cuts, &n, &pb), PARTD_OK);
    assert_int_equal(n, 0);
    assert_null(cuts);
    partd_problem_free(&pb);
    partd_request_free(req);
}

static void test_bad_entries_are_named(void **state)
{
    (void)state;
    char json[2048];
    partd_problem pb;
    request_json(json, sizeof json, "[\"blk.0\",\"blk.0.act\"]"); /* the same cut twice */
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/pipeline/cut_after/1", "empty stage");
    partd_problem_free(&pb);
    request_json(json, sizeof json, "[\"nope\"]");
    tu_decode_fail(json, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/options/pipeline/cut_after/0", "");
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_modules_resolve_to_positions),
        cmocka_unit_test(test_no_entries_give_no_cuts),
        cmocka_unit_test(test_bad_entries_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
