/* test_export_fx.c - the `fx` format (export_fx.c): node_to_partition and
 * partition_to_logical_device_mapping by name. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static void test_node_level_result(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:[{s:i, s:s, s:[s, s], s:[i]}, {s:i, s:s, s:[s], s:[i, i]}]}",
                            "mode", "size_based", "partitions", "id", 0, "device", "a", "nodes",
                            "conv1", "relu", "logical_ids", 0, "id", 1, "device", "b", "nodes",
                            "fc", "logical_ids", 1, 2);
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_FX, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_string_equal(out, "{\n"
                             "  \"node_to_partition\": {\n"
                             "    \"conv1\": 0,\n"
                             "    \"relu\": 0,\n"
                             "    \"fc\": 1\n"
                             "  },\n"
                             "  \"partition_to_logical_device_mapping\": {\n"
                             "    \"0\": [\n"
                             "      0\n"
                             "    ],\n"
                             "    \"1\": [\n"
                             "      1,\n"
                             "      2\n"
                             "    ]\n"
                             "  }\n"
                             "}\n");
    free(out);
    partd_problem_free(&pb);
    json_object_del(json_array_get(json_object_get(doc, "partitions"), 1), "nodes");
    tu_export_doc(doc, PARTD_EXPORT_FX, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1", "options.result.detail summary");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_training_result_by_stage(void **state)
{
    (void)state;
    const char *units[] = {"a b", "c"};
    tu_training_spec s = {"1F1B", 2, 1, 2, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_FX, 0, PARTD_OK, &pb);
    json_t *got = json_loads(out, 0, NULL);
    json_t *want = json_pack("{s:i, s:i, s:i}", "n_a", 0, "n_b", 0, "n_c", 1);
    assert_true(json_equal(json_object_get(got, "node_to_partition"), want));
    json_decref(want);
    json_decref(got);
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_level_result),
        cmocka_unit_test(test_training_result_by_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
