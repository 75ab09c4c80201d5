/* test_export.c - partd_export() (export.c): what each outcome returns,
 * every reason in one problem, and the same bytes on every call. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export_results.h"
#include "partd/export.h"
#include "partd/partd.h"

static void test_outcomes(void **state)
{
    (void)state;
    partd_problem pb;
    partd_problem_init(&pb);
    char *out = (char *)1;
    size_t len = 7;
    assert_int_equal(partd_export("{}", 2, PARTD_EXPORT_FORMAT_COUNT, 0, &out, &len, &pb),
                     PARTD_EINVALID);
    assert_null(out);
    assert_int_equal(len, 0);
    assert_int_equal(partd_export("[1,", 3, PARTD_EXPORT_FX, 0, &out, &len, &pb),
                     PARTD_EMALFORMED);
    assert_int_equal(pb.status, 400);
    assert_null(out);
    partd_problem_free(&pb);
    tu_export_expect("{\"mode\":\"pipeline\"}", PARTD_EXPORT_FX, 0, PARTD_EINVALID, &pb);
    assert_string_equal(pb.type, "urn:partd:problem:not-a-result");
    assert_int_equal(pb.status, 422);
    partd_problem_free(&pb);
}

static void test_training_formats_refuse_node_level_plans(void **state)
{
    (void)state;
    const char *doc = "{\"mode\":\"pipeline\",\"partitions\":[{\"id\":0,\"device\":\"a\","
                      "\"nodes\":[\"x\"]}]}";
    partd_export_format training_only[] = {PARTD_EXPORT_TORCHTITAN, PARTD_EXPORT_PYTORCH,
                                           PARTD_EXPORT_MEGATRON, PARTD_EXPORT_DEEPSPEED};
    for (size_t i = 0; i < sizeof training_only / sizeof *training_only; i++) {
        partd_problem pb;
        tu_export_expect(doc, training_only[i], 0, PARTD_EINVALID, &pb);
        assert_string_equal(pb.type, "urn:partd:problem:export-not-expressible");
        tu_assert_error(&pb, "/mode", "exports training plans");
        partd_problem_free(&pb);
    }
}

/* Every reason at once: here Megatron's three. */
static void test_every_reason_in_one_problem(void **state)
{
    (void)state;
    const char *units[] = {"emb", "x layers.0", "head", "layers.1"};
    const char *ck[] = {"emb", "", "", ""};
    tu_training_spec s = {"ZBVZeroBubble", 2, 2, 4, "auto", units, ck, 0};
    char *text = tu_training_result_text(&s);
    partd_problem pb;
    tu_export_expect(text, PARTD_EXPORT_MEGATRON, 0, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/schedule/name", "V");
    tu_assert_error(&pb, "/partitions/0/units/0", "recomputes decoder layers only");
    tu_assert_error(&pb, "/partitions/1/units/0", "on the first stage only");
    tu_assert_error(&pb, "/partitions/3/units/0", "not layers");
    assert_true(pb.n_errors >= 4);
    assert_non_null(strstr(pb.detail, "megatron"));
    free(text);
    partd_problem_free(&pb);
}

static void test_same_bytes_every_call(void **state)
{
    (void)state;
    const char *units[] = {"tok_embeddings layers.0", "layers.1", "layers.2 norm output"};
    const char *ck[] = {"layers.0", "layers.1", ""};
    tu_training_spec s = {"GPipe", 3, 1, 6, "auto", units, ck, 0};
    char *text = tu_training_result_text(&s);
    for (int f = 0; f < PARTD_EXPORT_FORMAT_COUNT; f++) {
        partd_problem a, b;
        char *x = tu_export_expect(text, (partd_export_format)f, 0, PARTD_OK, &a);
        char *y = tu_export_expect(text, (partd_export_format)f, 0, PARTD_OK, &b);
        assert_string_equal(x, y);
        assert_int_equal(x[strlen(x) - 1], '\n');
        free(x);
        free(y);
        partd_problem_free(&a);
        partd_problem_free(&b);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_training_formats_refuse_node_level_plans),
        cmocka_unit_test(test_every_reason_in_one_problem),
        cmocka_unit_test(test_same_bytes_every_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
