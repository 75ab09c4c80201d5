/* test_export_read.c - result documents read by export_read.c: v3 training
 * results, v2 ones (no schedule object: the class's own order), node-level
 * results, and everything that makes a document not a result. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "export_results.h"
#include "partd/partd.h"

static const char *const units_2x2[] = {"tok_embeddings layers.0", "layers.1", "layers.2",
                                        "layers.3 norm output"};

static tu_training_spec spec_2x2(void)
{
    return (tu_training_spec){"Interleaved1F1B", 2, 2, 4, "auto", units_2x2, NULL, 0};
}

static int read_doc(json_t *doc, partd__export_plan *p, partd_problem *pb)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    assert_non_null(text);
    partd_problem_init(pb);
    int rc = partd__export_read(text, strlen(text), p, pb);
    free(text);
    return rc;
}

static void test_v3_training_result(void **state)
{
    (void)state;
    tu_training_spec s = spec_2x2();
    json_t *doc = tu_training_result(&s);
    partd__export_plan p;
    partd_problem pb;
    assert_int_equal(read_doc(doc, &p, &pb), PARTD_OK);
    assert_true(p.training);
    assert_int_equal(p.n_stages, 4);
    assert_int_equal(p.n_ranks, 2);
    assert_int_equal(p.v, 2);
    assert_int_equal(p.microbatches, 4);
    assert_int_equal(p.sched, PARTD_TRAINING_INTERLEAVED_1F1B);
    assert_string_equal(p.sched_pointer, "/schedule/name");
    assert_true(p.actions_given);
    assert_int_equal(p.stages[2].rank, 0);
    assert_int_equal(p.stages[3].rank, 1);
    assert_string_equal(p.rank_device[1], "gpu1");
    assert_int_equal(p.order.off[1] - p.order.off[0], 16); /* 2 stages x 4 microbatches x (F, B) */
    assert_true(partd__export_order_is_own(&p));
    partd__export_plan_free(&p);
    partd_problem_free(&pb);
    json_decref(doc);
}

/* A v2 training result: no `schedule`, no `rank`, summary.schedule "1f1b". */
static void test_v2_training_result_gets_the_class_order(void **state)
{
    (void)state;
    const char *units[] = {"a", "b", "c"};
    tu_training_spec s = {"1F1B", 3, 1, 4, "auto", units, NULL, 1};
    json_t *doc = tu_training_result(&s);
    json_object_del(doc, "schedule");
    json_object_del(doc, "ranks");
    json_object_set_new(json_object_get(doc, "summary"), "schedule", json_string("1f1b"));
    json_object_del(json_object_get(doc, "summary"), "virtual_stages");
    for (size_t j = 0; j < 3; j++)
        json_object_del(json_array_get(json_object_get(doc, "partitions"), j), "rank");
    partd__export_plan p;
    partd_problem pb;
    assert_int_equal(read_doc(doc, &p, &pb), PARTD_OK);
    assert_false(p.actions_given);
    assert_string_equal(p.sched_pointer, "/summary/schedule");
    assert_int_equal(p.n_ranks, 3);
    assert_int_equal(p.v, 1);
    assert_non_null(p.order.off);
    assert_int_equal(p.order.off[3] - p.order.off[2], 8);
    assert_true(partd__export_order_is_own(&p));
    partd__export_plan_free(&p);
    partd_problem_free(&pb);
    json_decref(doc);
}

/* Without actions, a shape the class cannot run leaves the plan orderless
 * (the formats that need an order refuse it). */
static void test_no_actions_and_no_class_order(void **state)
{
    (void)state;
    const char *units[] = {"a", "b", "c"};
    tu_training_spec s = {"GPipe", 3, 1, 2, "auto", units, NULL, 1};
    json_t *doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "schedule"), "name", json_string("1F1B"));
    partd__export_plan p;
    partd_problem pb;
    assert_int_equal(read_doc(doc, &p, &pb), PARTD_OK);
    assert_null(p.order.off);
    partd__export_plan_free(&p);
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_node_level_result(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:[{s:i, s:s, s:[s, s], s:[i], s:[i]}, {s:i, s:s, s:[s]}],"
                            " s:{s:i}}",
                            "mode", "size_based", "partitions", "id", 0, "device", "a", "nodes",
                            "x", "y", "logical_ids", 0, "children", 1, "id", 1, "device", "b",
                            "nodes", "z", "summary", "partitions", 2);
    partd__export_plan p;
    partd_problem pb;
    assert_int_equal(read_doc(doc, &p, &pb), PARTD_OK);
    assert_false(p.training);
    assert_int_equal(p.n_stages, 2);
    assert_int_equal(json_array_size(p.stages[0].nodes), 2);
    assert_string_equal(p.stages[1].device, "b");
    partd__export_plan_free(&p);
    partd_problem_free(&pb);
    json_decref(doc);
}

static void assert_not_result(json_t *doc, const char *pointer, const char *needle)
{
    partd__export_plan p;
    partd_problem pb;
    assert_int_equal(read_doc(doc, &p, &pb), PARTD_EINVALID);
    assert_int_equal(pb.status, 422);
    assert_string_equal(pb.type, "urn:partd:problem:not-a-result");
    tu_assert_error(&pb, pointer, needle);
    assert_null(p.doc);
    partd_problem_free(&pb);
    json_decref(doc);
}

static json_t *stage_of(json_t *doc, size_t j)
{
    return json_array_get(json_object_get(doc, "partitions"), j);
}

static void test_not_results(void **state)
{
    (void)state;
    tu_training_spec s = spec_2x2();
    assert_not_result(json_array(), "", "must be an object");
    assert_not_result(json_pack("{s:s}", "mode", "inference"), "/mode", "mode of a result");
    assert_not_result(json_pack("{s:s, s:[]}", "mode", "pipeline", "partitions"), "/partitions",
                      "non-empty");

    json_t *doc = tu_training_result(&s);
    json_object_del(stage_of(doc, 1), "units");
    assert_not_result(doc, "/partitions/1/units", "lists its units");

    doc = tu_training_result(&s);
    json_array_append_new(json_object_get(stage_of(doc, 0), "checkpointed"),
                          json_string("layers.2"));
    assert_not_result(doc, "/partitions/0/checkpointed/0", "names no unit of this stage");

    doc = tu_training_result(&s);
    json_object_set_new(stage_of(doc, 2), "rank", json_integer(1));
    assert_not_result(doc, "/partitions/2/rank", "places stage 2 on rank 0");

    doc = tu_training_result(&s);
    json_array_set_new(json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"),
                                      0),
                       3, json_string("2X1"));
    assert_not_result(doc, "/schedule/actions/0/3", "as PyTorch writes it");

    doc = tu_training_result(&s);
    json_array_set_new(json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"),
                                      0),
                       0, json_string("1F0"));
    assert_not_result(doc, "/schedule/actions/0/0", "runs on rank 1");

    doc = tu_training_result(&s);
    json_array_set_new(json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"),
                                      1),
                       0, json_string("1F4"));
    assert_not_result(doc, "/schedule/actions/1/0", "does not have");

    doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "summary"), "stages", json_integer(4));
    assert_not_result(doc, "/summary/stages", "the partitions make 2");

    doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "schedule"), "name", json_string("PipeDream"));
    assert_not_result(doc, "/schedule/name", "PyTorch's schedules");

    doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "schedule"), "virtual_stages", json_integer(3));
    assert_not_result(doc, "/partitions", "do not make 3 per rank");

    doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "summary"), "checkpoint", json_string("some"));
    assert_not_result(doc, "/summary/checkpoint", "except_last");

    doc = tu_training_result(&s);
    json_object_set_new(json_object_get(doc, "summary"), "microbatches", json_integer(0));
    assert_not_result(doc, "/summary/microbatches", "integer from 1");
}

static void test_malformed(void **state)
{
    (void)state;
    partd__export_plan p;
    partd_problem pb;
    partd_problem_init(&pb);
    assert_int_equal(partd__export_read("{\"mode\":", 8, &p, &pb), PARTD_EMALFORMED);
    assert_int_equal(pb.status, 400);
    assert_string_equal(pb.type, "urn:partd:problem:malformed-json");
    partd_problem_free(&pb);
    partd_problem_init(&pb);
    assert_int_equal(partd__export_read("{\"a\":1,\"a\":2}", 13, &p, &pb), PARTD_EMALFORMED);
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v3_training_result),
        cmocka_unit_test(test_v2_training_result_gets_the_class_order),
        cmocka_unit_test(test_no_actions_and_no_class_order),
        cmocka_unit_test(test_node_level_result),
        cmocka_unit_test(test_not_results),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
