/* test_export_pytorch.c - the `pytorch` (schedule CSV) and `pytorch-split`
 * (pipeline() arguments) formats of export_pytorch.c. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static const char *const units_2x2[] = {"tok_embeddings layers.0", "layers.1", "layers.2",
                                        "layers.3 norm output"};
static const char *const ck_2x2[] = {"layers.0", "", "layers.2", ""};

static json_t *result_2x2(const char *schedule)
{
    tu_training_spec s = {schedule, 2, 2, 4, "auto", units_2x2, ck_2x2, 0};
    return tu_training_result(&s);
}

static json_t *rank_actions(json_t *doc, size_t r)
{
    return json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"), r);
}

static void test_csv_one_row_per_rank(void **state)
{
    (void)state;
    json_t *doc = result_2x2("Interleaved1F1B");
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH, 0, PARTD_OK, &pb);
    assert_string_equal(out,
                        "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3\n"
                        "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3\n");
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

/* The CSV is the plan's order, whatever the class would run. */
static void test_csv_writes_a_custom_order(void **state)
{
    (void)state;
    const char *units[] = {"a", "b"};
    tu_training_spec s = {"GPipe", 2, 1, 2, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    json_t *r0 = rank_actions(doc, 0);
    json_array_set_new(r0, 2, json_string("0B1"));
    json_array_set_new(r0, 3, json_string("0B0"));
    json_t *r1 = rank_actions(doc, 1);
    json_array_set_new(r1, 2, json_string("1B1"));
    json_array_set_new(r1, 3, json_string("1B0"));
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_string_equal(out, "0F0,0F1,0B1,0B0\n1F0,1F1,1B1,1B0\n");
    free(out);
    partd_problem_free(&pb);
    /* pipeline()'s schedule would run GPipe's own order instead */
    out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/actions", "--format pytorch");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_csv_refuses_what_pytorch_refuses(void **state)
{
    (void)state;
    const char *units[] = {"a", "b"};
    tu_training_spec s = {"1F1B", 2, 1, 2, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    json_t *r1 = rank_actions(doc, 1);
    json_array_set_new(r1, 0, json_string("1B0"));
    json_array_set_new(r1, 1, json_string("1F0"));
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH, 0, PARTD_EINVALID, &pb);
    assert_null(out);
    assert_string_equal(pb.type, "urn:partd:problem:export-not-expressible");
    tu_assert_error(&pb, "/schedule/actions/1/0", "before its forward");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_csv_needs_an_order(void **state)
{
    (void)state;
    const char *units[] = {"a", "b", "c"};
    tu_training_spec s = {"GPipe", 3, 1, 2, "never", units, NULL, 1};
    json_t *doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "schedule"), "name", json_string("1F1B"));
    partd_problem pb;
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/microbatches", "cannot run 2 microbatches on 3 ranks");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_split(void **state)
{
    (void)state;
    json_t *doc = result_2x2("Interleaved1F1B");
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    json_t *got = json_loads(out, 0, NULL);
    json_t *want = json_pack("{s:{s:s, s:s, s:s}, s:s, s:i, s:[i, i, i, i], s:[s, s],"
                             " s:[[s], [], [s], []], s:[]}",
                             "split_spec", "layers.1", "BEGINNING", "layers.2", "BEGINNING",
                             "layers.3", "BEGINNING", "schedule", "Interleaved1F1B",
                             "n_microbatches", 4, "stage_to_rank", 0, 1, 0, 1, "devices", "gpu0",
                             "gpu1", "checkpointed", "layers.0", "layers.2", "tied_params");
    assert_true(json_equal(got, want));
    /* split_spec keys in stage order */
    assert_non_null(strstr(out, "\"layers.1\": \"BEGINNING\",\n    \"layers.2\""));
    json_decref(got);
    json_decref(want);
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_split_refuses_a_cut_module(void **state)
{
    (void)state;
    const char *units[] = {"a b", "b#2 c"};
    tu_training_spec s = {"GPipe", 2, 1, 2, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    partd_problem pb;
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/units/0", "begins inside a module");
    partd_problem_free(&pb);
    json_decref(doc);
}

/* A node-level result of three partitions on devices a, b, c; first
 * modules as given (NULL: none), the pipeline's schedule and microbatches
 * in its summary (schedule NULL: neither, as results before they were
 * recorded). */
static json_t *node_level(const char *mode, const char *const first[3], const char *schedule,
                          int m)
{
    json_t *parts = json_array();
    const char *devices[3] = {"a", "b", "c"};
    for (int j = 0; j < 3; j++) {
        char node[16];
        snprintf(node, sizeof node, "n%d", j);
        json_t *p = json_pack("{s:i, s:s, s:[s]}", "id", j, "device", devices[j], "nodes", node);
        if (first[j])
            json_object_set_new(p, "first_module", json_string(first[j]));
        json_array_append_new(parts, p);
    }
    json_t *summary = json_pack("{s:b}", "optimal", 1);
    if (schedule) {
        json_object_set_new(summary, "schedule", json_string(schedule));
        json_object_set_new(summary, "microbatches", json_integer(m));
    }
    return json_pack("{s:s, s:o, s:[{s:s, s:[i, i]}], s:o}", "mode", mode, "partitions", parts,
                     "tied_params", "param", "wte.weight", "partitions", 0, 2, "summary",
                     summary);
}

static void test_split_of_node_level_plans(void **state)
{
    (void)state;
    const char *first[3] = {"embed", "blocks.3", "head"};
    json_t *doc = node_level("pipeline", first, "1f1b", 4);
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    json_t *got = json_loads(out, 0, NULL);
    json_t *want = json_pack("{s:{s:s, s:s}, s:s, s:i, s:[i, i, i], s:[s, s, s], s:[[], [], []],"
                             " s:[{s:s, s:[i, i]}]}",
                             "split_spec", "blocks.3", "BEGINNING", "head", "BEGINNING",
                             "schedule", "1F1B", "n_microbatches", 4, "stage_to_rank", 0, 1, 2,
                             "devices", "a", "b", "c", "checkpointed", "tied_params", "param",
                             "wte.weight", "partitions", 0, 2);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
    /* gpipe is GPipe; a size_based plan is one batch through GPipe */
    doc = node_level("pipeline", first, "gpipe", 2);
    out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "\"schedule\": \"GPipe\",\n  \"n_microbatches\": 2,"));
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
    doc = node_level("size_based", first, NULL, 0);
    out = tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "\"schedule\": \"GPipe\",\n  \"n_microbatches\": 1,"));
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_split_refuses_what_pipeline_cannot_split(void **state)
{
    (void)state;
    /* a cut inside a module: the planner wrote no first_module */
    const char *inside[3] = {"embed", NULL, "head"};
    json_t *doc = node_level("pipeline", inside, "gpipe", 4);
    partd_problem pb;
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1", "begins at node n1, which does not begin the only call");
    assert_int_equal(pb.n_errors, 1);
    partd_problem_free(&pb);
    json_decref(doc);
    /* two partitions on one device */
    const char *first[3] = {NULL, "blocks.3", "head"};
    doc = node_level("size_based", first, NULL, 0);
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 2), "device",
                        json_string("a"));
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/2/device", "shares device a with partition 0");
    partd_problem_free(&pb);
    json_decref(doc);
    /* 1F1B with fewer microbatches than stages, an inference plan, a result
     * that does not say */
    doc = node_level("pipeline", first, "1f1b", 2);
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/microbatches", "at least as many microbatches as stages");
    partd_problem_free(&pb);
    json_decref(doc);
    doc = node_level("pipeline", first, "inference", 4);
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/schedule", "counted memory for inference");
    partd_problem_free(&pb);
    json_decref(doc);
    doc = node_level("pipeline", first, NULL, 0);
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/schedule", "plan it again");
    partd_problem_free(&pb);
    /* the CSV is of training plans only */
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/mode", "exports training plans");
    partd_problem_free(&pb);
    json_decref(doc);
    /* first_module is a name */
    doc = node_level("pipeline", first, "gpipe", 4);
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "first_module",
                        json_integer(3));
    tu_export_doc(doc, PARTD_EXPORT_PYTORCH_SPLIT, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/first_module", "a module's name");
    partd_problem_free(&pb);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_one_row_per_rank),
        cmocka_unit_test(test_csv_writes_a_custom_order),
        cmocka_unit_test(test_csv_refuses_what_pytorch_refuses),
        cmocka_unit_test(test_csv_needs_an_order),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_refuses_a_cut_module),
        cmocka_unit_test(test_split_of_node_level_plans),
        cmocka_unit_test(test_split_refuses_what_pipeline_cannot_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
