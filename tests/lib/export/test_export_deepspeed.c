/* test_export_deepspeed.c - the `deepspeed` format (export_deepspeed.c):
 * parts, layers, the checkpoint interval, what it refuses and lists. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static const char *const units[] = {"emb layers.0 layers.0#2", "layers.1 head"};

static json_t *export_json(const char *sched, const char *const *ck, const char *mode,
                           unsigned flags, int rc, partd_problem *pb)
{
    tu_training_spec s = {sched, 2, 1, 4, mode, units, ck, 0};
    return tu_export_spec_json(&s, PARTD_EXPORT_DEEPSPEED, flags, rc, pb);
}

static void test_parts_and_layers(void **state)
{
    (void)state;
    partd_problem pb;
    json_t *got = export_json("1F1B", NULL, "never", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    json_t *want = json_pack("{s:i, s:[i, i, i], s:[s, s, s, s], s:i, s:i, s:[s, s], s:[]}",
                             "num_stages", 2, "parts", 0, 2, 4, "layers", "emb", "layers.0",
                             "layers.1", "head", "activation_checkpoint_interval", 0,
                             "micro_batches", 4, "devices", "gpu0", "gpu1", "tied_params");
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    partd_problem_free(&pb);
}

static void test_checkpoint_interval(void **state)
{
    (void)state;
    partd_problem pb;
    const char *all[] = {"emb layers.0 layers.0#2", "layers.1 head"};
    json_t *got = export_json("1F1B", all, "always", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_int_equal(json_integer_value(json_object_get(got, "activation_checkpoint_interval")), 1);
    assert_null(json_object_get(got, "warnings"));
    json_decref(got);
    partd_problem_free(&pb);
    const char *some[] = {"layers.0", ""};
    got = export_json("1F1B", some, "auto", 0, PARTD_OK, &pb);
    assert_int_equal(json_integer_value(json_object_get(got, "activation_checkpoint_interval")), 1);
    json_t *w = json_array_get(json_object_get(got, "warnings"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "code")), "checkpoint-every-layer");
    json_decref(got);
    partd_problem_free(&pb);
    export_json("1F1B", some, "auto", PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "checkpoints 1 of its units");
    partd_problem_free(&pb);
}

static void test_schedules(void **state)
{
    (void)state;
    partd_problem pb;
    json_t *got = export_json("GPipe", NULL, "never", 0, PARTD_OK, &pb);
    json_t *w = json_array_get(json_object_get(got, "warnings"), 0);
    assert_string_equal(json_string_value(json_object_get(w, "code")), "deepspeed-schedule");
    json_decref(got);
    partd_problem_free(&pb);
    const char *four[] = {"a", "b", "c", "d"};
    tu_training_spec s = {"Interleaved1F1B", 2, 2, 4, "never", four, NULL, 0};
    char *text = tu_training_result_text(&s);
    tu_export_expect(text, PARTD_EXPORT_DEEPSPEED, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/virtual_stages", "one stage per rank");
    free(text);
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_and_layers),
        cmocka_unit_test(test_checkpoint_interval),
        cmocka_unit_test(test_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
