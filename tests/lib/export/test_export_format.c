/* test_export_format.c - the formats' names and content types
 * (export_format.c). */
#include "testutil.h"

#include "partd/export.h"
#include "partd/partd.h"

static void test_format_names_and_content_types(void **state)
{
    (void)state;
    static const char *const want[][2] = {
        {"torchtitan", "application/toml"}, {"pytorch", "text/csv"},
        {"pytorch-split", "application/json"}, {"megatron", "text/plain"},
        {"deepspeed", "application/json"}, {"fairscale", "application/json"},
        {"fx", "application/json"},
    };
    for (int f = 0; f < PARTD_EXPORT_FORMAT_COUNT; f++) {
        partd_export_format got;
        assert_string_equal(partd_export_format_name((partd_export_format)f), want[f][0]);
        assert_string_equal(partd_export_content_type((partd_export_format)f), want[f][1]);
        assert_int_equal(partd_export_format_parse(want[f][0], &got), PARTD_OK);
        assert_int_equal(got, f);
    }
    partd_export_format kept = PARTD_EXPORT_FX;
    assert_int_equal(partd_export_format_parse("TorchTitan", &kept), PARTD_EINVALID);
    assert_int_equal(partd_export_format_parse("", &kept), PARTD_EINVALID);
    assert_int_equal(kept, PARTD_EXPORT_FX);
    assert_null(partd_export_format_name(PARTD_EXPORT_FORMAT_COUNT));
    assert_null(partd_export_content_type(PARTD_EXPORT_FORMAT_COUNT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_names_and_content_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
