/* test_export_torchtitan.c - the `torchtitan` format (export_torchtitan.c):
 * the job config's text, what it refuses and what it lists. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/partd.h"

static const char *const units_2x2[] = {"tok_embeddings layers.0", "layers.1", "layers.2",
                                        "layers.3 norm output"};

static char *export_2x2(const char *const *ck, const char *mode, unsigned flags, int rc,
                        partd_problem *pb)
{
    tu_training_spec s = {"Interleaved1F1B", 2, 2, 4, mode, units_2x2, ck, 0};
    char *text = tu_training_result_text(&s);
    char *out = tu_export_expect(text, PARTD_EXPORT_TORCHTITAN, flags, rc, pb);
    free(text);
    return out;
}

static void test_job_config(void **state)
{
    (void)state;
    const char *ck[] = {"layers.0", "", "", ""};
    partd_problem pb;
    char *out = export_2x2(ck, "auto", 0, PARTD_OK, &pb);
    assert_string_equal(
        out,
        "# partd export --format torchtitan: a training plan of 4 stages on 2 ranks, schedule "
        "Interleaved1F1B, 4 microbatches, checkpoint auto.\n"
        "# rank 0 runs on device gpu0\n"
        "# rank 1 runs on device gpu1\n"
        "# n_microbatches = local_batch_size / pipeline_parallel_microbatch_size = 4 (scale "
        "both alike for larger microbatches)\n"
        "# checkpointed units: stage 0: layers.0; stage 1: none; stage 2: none; stage 3: none\n"
        "# warning (checkpoint-all-layers): the plan checkpoints 1 of 4 layers; torchtitan "
        "checkpoints every layer or none, so all 4 are (more recomputation than planned)\n"
        "\n"
        "[parallelism]\n"
        "pipeline_parallel_degree = 2\n"
        "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
        "module_fqns_per_model_part = [\n"
        "  [\"tok_embeddings\", \"layers.0\"],\n"
        "  [\"layers.1\"],\n"
        "  [\"layers.2\"],\n"
        "  [\"layers.3\", \"norm\", \"output\"],\n"
        "]\n"
        "pipeline_parallel_microbatch_size = 1\n"
        "\n"
        "[training]\n"
        "local_batch_size = 4\n"
        "\n"
        "[activation_checkpoint]\n"
        "mode = \"full\"\n");
    free(out);
    partd_problem_free(&pb);
    /* --strict refuses the approximation */
    out = export_2x2(ck, "auto", PARTD_EXPORT_STRICT, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions", "1 of 4 layers");
    partd_problem_free(&pb);
}

static void test_every_layer_or_none_is_exact(void **state)
{
    (void)state;
    const char *all[] = {"layers.0", "layers.1", "layers.2", "layers.3"};
    partd_problem pb;
    char *out = export_2x2(all, "auto", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_non_null(strstr(out, "mode = \"full\"\n"));
    assert_null(strstr(out, "warning"));
    free(out);
    partd_problem_free(&pb);
    out = export_2x2(NULL, "never", PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_non_null(strstr(out, "mode = \"none\"\n"));
    assert_null(strstr(out, "checkpointed units"));
    free(out);
    partd_problem_free(&pb);
    /* except_last leaves the last microbatch unchecked: listed */
    out = export_2x2(all, "except_last", 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "# warning (checkpoint-every-microbatch)"));
    free(out);
    partd_problem_free(&pb);
}

static void test_checkpointed_unit_outside_layers_refused(void **state)
{
    (void)state;
    const char *ck[] = {"tok_embeddings", "", "", ""};
    partd_problem pb;
    export_2x2(ck, "auto", 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0/units/0", "only the blocks of model.layers");
    partd_problem_free(&pb);
}

static void test_custom_order_names_the_csv(void **state)
{
    (void)state;
    const char *units[] = {"layers.0", "layers.1"};
    tu_training_spec s = {"GPipe", 2, 1, 2, "never", units, NULL, 0};
    json_t *doc = tu_training_result(&s);
    json_t *r0 = json_array_get(json_object_get(json_object_get(doc, "schedule"), "actions"), 0);
    json_array_set_new(r0, 2, json_string("0B1"));
    json_array_set_new(r0, 3, json_string("0B0"));
    partd_problem pb;
    char *out = tu_export_doc(doc, PARTD_EXPORT_TORCHTITAN, PARTD_EXPORT_STRICT, PARTD_OK, &pb);
    assert_non_null(strstr(out, "pipeline_parallel_schedule_csv = \"partd-schedule.csv\"\n"));
    assert_non_null(strstr(out, "--format pytorch -o partd-schedule.csv"));
    free(out);
    partd_problem_free(&pb);
    /* the class's own order names no CSV */
    json_array_set_new(r0, 2, json_string("0B0"));
    json_array_set_new(r0, 3, json_string("0B1"));
    out = tu_export_doc(doc, PARTD_EXPORT_TORCHTITAN, 0, PARTD_OK, &pb);
    assert_null(strstr(out, "schedule_csv"));
    free(out);
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_modules_torchtitan_cannot_keep(void **state)
{
    (void)state;
    const char *deep[] = {"model.layers.0", "model.layers.1"};
    tu_training_spec s = {"1F1B", 2, 1, 2, "never", deep, NULL, 0};
    char *text = tu_training_result_text(&s);
    partd_problem pb;
    tu_export_expect(text, PARTD_EXPORT_TORCHTITAN, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/0/units/0", "three modules deep");
    free(text);
    partd_problem_free(&pb);
    const char *cut[] = {"layers.0", "layers.0#2 layers.1"};
    s.units = cut;
    text = tu_training_result_text(&s);
    tu_export_expect(text, PARTD_EXPORT_TORCHTITAN, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/partitions/1/units/0", "cannot cut it between stages");
    free(text);
    partd_problem_free(&pb);
}

static void test_parameters_tied_across_stages_refused(void **state)
{
    (void)state;
    tu_training_spec s = {"Interleaved1F1B", 2, 2, 4, "never", units_2x2, NULL, 0};
    json_t *doc = tu_training_result(&s);
    json_object_set_new(doc, "tied_params",
                        json_pack("[{s:s, s:[i, i]}]", "param", "tok_embeddings.weight",
                                  "partitions", 0, 3));
    partd_problem pb;
    tu_export_doc(doc, PARTD_EXPORT_TORCHTITAN, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/tied_params/0", "its own copy of the model");
    partd_problem_free(&pb);
    json_decref(doc);
}

static void test_toml_strings_escaped(void **state)
{
    (void)state;
    const char *units[] = {"we\"ird\\name", "tab\there"};
    tu_training_spec s = {"1F1B", 2, 1, 2, "never", units, NULL, 0};
    char *text = tu_training_result_text(&s);
    partd_problem pb;
    char *out = tu_export_expect(text, PARTD_EXPORT_TORCHTITAN, 0, PARTD_OK, &pb);
    assert_non_null(strstr(out, "  [\"we\\\"ird\\\\name\"],\n  [\"tab\\there\"],\n"));
    free(out);
    free(text);
    partd_problem_free(&pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_config),
        cmocka_unit_test(test_every_layer_or_none_is_exact),
        cmocka_unit_test(test_checkpointed_unit_outside_layers_refused),
        cmocka_unit_test(test_custom_order_names_the_csv),
        cmocka_unit_test(test_modules_torchtitan_cannot_keep),
        cmocka_unit_test(test_parameters_tied_across_stages_refused),
        cmocka_unit_test(test_toml_strings_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
