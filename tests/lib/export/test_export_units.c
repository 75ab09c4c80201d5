/* test_export_units.c - unit names in export_units.c: "#k" runs, layers
 * named <prefix>.<integer>, and a plan's modules per stage. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "partd/partd.h"

static void test_base_drops_run_suffix(void **state)
{
    (void)state;
    assert_int_equal(partd__export_unit_base_len("layers.3"), 8);
    assert_int_equal(partd__export_unit_base_len("layers.3#2"), 8);
    assert_int_equal(partd__export_unit_base_len("add#10"), 3);
    /* not a run suffix: #1 is never written, no leading zeros, no name */
    assert_int_equal(partd__export_unit_base_len("a#1"), 3);
    assert_int_equal(partd__export_unit_base_len("a#02"), 4);
    assert_int_equal(partd__export_unit_base_len("#2"), 2);
    assert_int_equal(partd__export_unit_base_len("a#"), 2);
    assert_int_equal(partd__export_unit_base_len("x12"), 3);
}

static void test_layer_index(void **state)
{
    (void)state;
    size_t prefix = 0;
    uint64_t index = 0;
    assert_true(partd__export_layer_index("layers.12", 9, &prefix, &index));
    assert_int_equal(prefix, 6);
    assert_int_equal(index, 12);
    assert_true(partd__export_layer_index("transformer.h.0", 15, &prefix, &index));
    assert_int_equal(prefix, 13);
    assert_int_equal(index, 0);
    /* the base of a run: "h.3#2" is layer h.3 */
    assert_true(partd__export_layer_index("h.3#2", partd__export_unit_base_len("h.3#2"),
                                          &prefix, &index));
    assert_int_equal(index, 3);
    assert_false(partd__export_layer_index("layers.07", 9, &prefix, &index));
    assert_false(partd__export_layer_index("layers", 6, &prefix, &index));
    assert_false(partd__export_layer_index(".3", 2, &prefix, &index));
    assert_false(partd__export_layer_index("layers.", 7, &prefix, &index));
    assert_false(partd__export_layer_index("norm", 4, &prefix, &index));
    assert_false(partd__export_layer_index("layers.1234567890123456789", 26, &prefix, &index));
}

static json_t *list(const char *a, const char *b, const char *c)
{
    json_t *l = json_array();
    const char *v[3] = {a, b, c};
    for (int i = 0; i < 3 && v[i]; i++)
        json_array_append_new(l, json_string(v[i]));
    return l;
}

static void test_modules_once_per_stage_and_never_cut(void **state)
{
    (void)state;
    partd__export_stage stages[3] = {{0}};
    stages[0].units = list("a", "b", "a#2");
    stages[1].units = list("c", "a#3", NULL);
    stages[2].units = list("d", "d#2", NULL);
    stages[0].checkpointed = list("b", NULL, NULL);
    partd__export_plan plan = {0};
    plan.mode = "training";
    plan.training = 1;
    plan.n_stages = 3;
    plan.stages = stages;
    partd_problem pb;
    partd_problem_init(&pb);
    partd__export_ctx c = {&plan, PARTD_EXPORT_DEEPSPEED, 0, &pb, 0, NULL, 0, PARTD_OK};
    partd__export_names *m = NULL;
    assert_int_equal(partd__export_modules(&c, &m), PARTD_OK);
    assert_int_equal(m[0].n, 2);
    assert_string_equal(m[0].v[0], "a");
    assert_string_equal(m[0].v[1], "b");
    assert_int_equal(m[1].n, 1);
    assert_string_equal(m[1].v[0], "c");
    assert_int_equal(m[2].n, 1);
    assert_int_equal(c.n_refusals, 1);
    tu_assert_error(&pb, "/partitions/1/units/1", "continues module a of stage 0");
    assert_true(partd__export_is_checkpointed(&stages[0], "b"));
    assert_false(partd__export_is_checkpointed(&stages[0], "a"));
    assert_false(partd__export_is_checkpointed(&stages[1], "c"));
    assert_int_equal(partd__export_n_checkpointed(&plan), 1);
    partd__export_modules_free(m, 3);
    partd_problem_free(&pb);
    for (int j = 0; j < 3; j++) {
        json_decref(stages[j].units);
        json_decref(stages[j].checkpointed);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_drops_run_suffix),
        cmocka_unit_test(test_layer_index),
        cmocka_unit_test(test_modules_once_per_stage_and_never_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
