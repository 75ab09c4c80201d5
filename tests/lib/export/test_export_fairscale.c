/* test_export_fairscale.c - the `fairscale` format (export_fairscale.c):
 * training plans in units, node-level plans in nodes. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static const char *const units[] = {"a b", "c c#2 d"};

static json_t *training(const char *sched, const char *const *ck, const char *mode,
                        unsigned flags, int rc, partd_problem *pb)
{
    tu_training_spec s = {sched, 2, 1, 4, mode, units, ck, 0};
    return tu_export_spec_json(&s, PARTD_EXPORT_FAIRSCALE, flags, rc, pb);
}

static const char *member(json_t *doc, const char *key)
{
    return json_string_value(json_object_get(doc, key));
}

static void test_training_plan(void **state)
{
    (void)state;
    partd_problem pb;
    const char *all[] = {"a b", "c c#2 d"};
    json_t *got = training("GPipe", all, "except_last", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    json_t *want = json_pack("{s:[i, i], s:i, s:s, s:[s, s, s, s], s:[s, s]}", "balance", 2, 2,
                             "chunks", 4, "checkpoint", "except_last", "layers", "a", "b", "c",
                             "d", "devices", "gpu0", "gpu1");
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    partd_problem_free(&pb);
}

static void test_checkpoint_modes(void **state)
{
    (void)state;
    partd_problem pb;
    json_t *got = training("GPipe", NULL, "never", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_string_equal(member(got, "checkpoint"), "never");
    json_decref(got);
    partd_problem_free(&pb);
    got = training("GPipe", NULL, "auto", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_string_equal(member(got, "checkpoint"), "never");
    json_decref(got);
    partd_problem_free(&pb);
    const char *all[] = {"a b", "c c#2 d"};
    got = training("GPipe", all, "auto", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_string_equal(member(got, "checkpoint"), "always");
    json_decref(got);
    partd_problem_free(&pb);
    const char *some[] = {"b", ""};
    got = training("GPipe", some, "auto", 0, PARTD_OK, &pb);
    assert_string_equal(member(got, "checkpoint"), "always");
    json_t *w = json_array_get(json_object_get(got, "warnings"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "code")),
                        "checkpoint-whole-partitions");
    json_decref(got);
    partd_problem_free(&pb);
    training("GPipe", some, "auto", PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "1 of 5 units");
    partd_problem_free(&pb);
}

/* verify_splitting: shared parameters on distinct devices are refused */
static void test_tied_parameters(void **state)
{
    (void)state;
    tu_training_spec s = {"GPipe", 2, 1, 4, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    json_object_set_new(doc, "tied_params",
                        json_pack("[{s:s, s:[i, i]}]", "param", "a.weight", "partitions", 0, 1));
    partd_problem pb;
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/tied_params/0", "distinct devices");
    partd_problem_free(&pb);
    /* both partitions on one device: Pipe keeps one parameter */
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "device",
                        json_string("gpu0"));
    free(tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_OK, &pb));
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_schedules_pipe_does_not_run(void **state)
{
    (void)state;
    partd_problem pb;
    training("1F1B", NULL, "never", 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/name", "Pipe runs GPipe");
    partd_problem_free(&pb);
    json_t *got = training("LoopedBFS", NULL, "never", 0, PARTD_OK, &pb);
    assert_non_null(json_object_get(got, "warnings"));
    json_decref(got);
    partd_problem_free(&pb);
}

/* A pipeline result: times 1 and 2, bottleneck 2, total 1 + 2 + 3 x 2. */
static json_t *pipeline_result(double total_ms)
{
    return json_pack("{s:s, s:[{s:i, s:s, s:[s, s], s:f, s:[i]}, {s:i, s:s, s:[s], s:f, s:[]}],"
                     " s:[i, i], s:{s:f, s:f}}",
                     "mode", "pipeline", "partitions", "id", 0, "device", "a", "nodes", "x", "y",
                     "time_ms", 1.0, "children", 1, "id", 1, "device", "b", "nodes", "z",
                     "time_ms", 2.0, "children", "balance", 2, 1, "summary", "bottleneck_ms", 2.0,
                     "total_ms", total_ms);
}

static void test_pipeline_plan(void **state)
{
    (void)state;
    json_t *doc = pipeline_result(9.0);
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_OK, &pb);
    json_t *got = json_loads(out, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(got, "chunks")), 4);
    assert_string_equal(member(got, "checkpoint"), "never");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(got, "balance"), 0)), 2);
    json_t *w = json_array_get(json_object_get(got, "warnings"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "code")), "pipe-runs-gpipe");
    json_decref(got);
    free(out);
    partd_problem_free(&pb);
    /* the schedule it counted memory for is unknown: --strict refuses */
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/mode", "pipeline.schedule was gpipe");
    partd_problem_free(&pb);
    json_decref(doc);
    /* figures that give no whole microbatch count */
    doc = pipeline_result(9.7);
    out = tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "\"chunks\": 1,"));
    assert_non_null(strstr(out, "chunks-unknown"));
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

/* A result that records its schedule and microbatches: the recorded M
 * (not the figures'), and Pipe's GPipe against the schedule. */
static void test_pipeline_plan_with_its_schedule(void **state)
{
    (void)state;
    json_t *doc = pipeline_result(9.7);
    json_t *summary = json_object_get(doc, "summary");
    json_object_set_new(summary, "schedule", json_string("gpipe"));
    json_object_set_new(summary, "microbatches", json_integer(6));
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_non_null(strstr(out, "\"chunks\": 6,"));
    assert_null(strstr(out, "warnings"));
    free(out);
    partd_problem_free(&pb);
    json_object_set_new(summary, "schedule", json_string("1f1b"));
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/schedule", "all 6 chunks in flight where the plan's 1f1b");
    partd_problem_free(&pb);
    json_object_set_new(summary, "schedule", json_string("inference"));
    out = tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "pipe-runs-gpipe"));
    free(out);
    partd_problem_free(&pb);
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/schedule", "counted memory for inference");
    partd_problem_free(&pb);
    /* a schedule that is not the pipeline's: not a result */
    json_object_set_new(summary, "schedule", json_string("GPipe"));
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/summary/schedule", "inference, gpipe or 1f1b");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_size_based_plan(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:[{s:i, s:s, s:[s, s, s], s:[i]}, {s:i, s:s, s:[s], s:[]}]}",
                            "mode", "size_based", "partitions", "id", 0, "device", "a", "nodes",
                            "x", "y", "w", "children", 1, "id", 1, "device", "b", "nodes", "z",
                            "children");
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    json_t *got = json_loads(out, 0, NULL);
    json_t *want = json_pack("{s:[i, i], s:i, s:s, s:[s, s]}", "balance", 3, 1, "chunks", 1,
                             "checkpoint", "never", "devices", "a", "b");
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(out);
    partd_problem_free(&pb);
    /* a partition that feeds an earlier one is no sequence */
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "children",
                        json_pack("[i]", 0));
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/children/0", "one sequence");
    partd_problem_free(&pb);
    /* no nodes listed and no balance */
    json_object_set_new(json_array_get(json_object_get(doc, "partitions"), 1), "children",
                        json_array());
    json_object_del(json_array_get(json_object_get(doc, "partitions"), 0), "nodes");
    tu_export_doc(doc, PARTD_EXPORT_FAIRSCALE, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0", "lists no nodes");
    partd_problem_free(&pb);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_training_plan),
        cmocka_unit_test(test_checkpoint_modes),
        cmocka_unit_test(test_tied_parameters),
        cmocka_unit_test(test_schedules_pipe_does_not_run),
        cmocka_unit_test(test_pipeline_plan),
        cmocka_unit_test(test_pipeline_plan_with_its_schedule),
        cmocka_unit_test(test_size_based_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
