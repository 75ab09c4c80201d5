/* test_show_fmt.c - show_fmt.c: locale-free numbers (fixed decimals,
 * coordinates, bytes in binary units, milliseconds, tick steps) and the
 * escaping of names for SVG and for terminals. */
#include <math.h>
#include <string.h>

#include "testutil.h"

#include "core/buf.h"
#include "show/show_fmt.h"

static void test_fixed_rounds_half_away_from_zero(void **state)
{
    (void)state;
    char s[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_fixed(s, 2.5, 0);
    assert_string_equal(s, "3");
    partd__show_fmt_fixed(s, -2.5, 0);
    assert_string_equal(s, "-3");
    partd__show_fmt_fixed(s, 1.005, 1);
    assert_string_equal(s, "1.0");
    partd__show_fmt_fixed(s, 0.1234567, 6);
    assert_string_equal(s, "0.123457");
    partd__show_fmt_fixed(s, 13903.56, 3);
    assert_string_equal(s, "13903.560");
    partd__show_fmt_fixed(s, -0.0004, 3);
    assert_true(strcmp(s, "0.000") == 0 || strcmp(s, "-0.000") == 0);
    partd__show_fmt_fixed(s, 1e300, 2); /* clamped, never an overflowing conversion */
    assert_true(strlen(s) < PARTD_SHOW_NUM_CAP);
}

static void test_coordinates_drop_a_trailing_zero(void **state)
{
    (void)state;
    char s[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_coord(s, 12.0);
    assert_string_equal(s, "12");
    partd__show_fmt_coord(s, 12.25);
    assert_string_equal(s, "12.3");
    partd__show_fmt_coord(s, 0.04);
    assert_string_equal(s, "0");
}

static void test_bytes_use_binary_units(void **state)
{
    (void)state;
    char s[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_bytes(s, 512);
    assert_string_equal(s, "512 B");
    partd__show_fmt_bytes(s, 1024.0 * 576);
    assert_string_equal(s, "576 KiB");
    partd__show_fmt_bytes(s, 1.04 * 1073741824.0);
    assert_string_equal(s, "1.04 GiB");
    assert_int_equal(partd__show_fmt_bytes_unit(100), 0);
    assert_int_equal(partd__show_fmt_bytes_unit(3.0 * 1048576), 2);
    assert_int_equal(partd__show_fmt_bytes_unit(80.0 * 1073741824.0), 3);
    assert_string_equal(partd__show_fmt_unit_name(3), "GiB");
    assert_true(partd__show_fmt_unit_scale(1) == 1024.0);
    partd__show_fmt_bytes_in(s, 2.0 * 1048576, 2);
    assert_string_equal(s, "2");
}

static void test_milliseconds_keep_three_significant_digits_when_small(void **state)
{
    (void)state;
    char s[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_ms(s, 13903.56);
    assert_string_equal(s, "13904 ms");
    partd__show_fmt_ms(s, 2.0512);
    assert_string_equal(s, "2.05 ms");
    partd__show_fmt_ms(s, 0.06);
    assert_string_equal(s, "0.060 ms");
}

static void test_nice_steps_are_1_2_5_times_a_power_of_ten(void **state)
{
    (void)state;
    const double maxima[] = {0.003, 1, 7, 13904, 1.28 * 1073741824.0};
    for (size_t i = 0; i < sizeof maxima / sizeof maxima[0]; i++) {
        double step = partd__show_fmt_nice_step(maxima[i], 5);
        assert_true(step > 0);
        assert_true(maxima[i] / step <= 5.0 + 1e-9);
        double m = step;
        while (m >= 10)
            m /= 10;
        while (m < 1)
            m *= 10;
        assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9);
    }
}

static void test_xml_escapes_and_replaces_forbidden_characters(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_fmt_xml(&b, "<g&\"'>\x01x", 0);
    assert_string_equal(b.data, "&lt;g&amp;&quot;&#39;&gt;\xef\xbf\xbdx");
    partd_buf_reset(&b);
    /* 6 code points, then an ellipsis */
    partd__show_fmt_xml(&b, "layer\xc3\xa9s.0.attention", 6);
    assert_string_equal(b.data, "layer\xc3\xa9\xe2\x80\xa6");
    partd_buf_free(&b);
}

static void test_plain_text_cannot_steer_a_terminal(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_fmt_plain(&b, "a\x1b[31mred\x7f\xc2\x9b", 0);
    assert_null(strchr(b.data, '\x1b'));
    assert_null(strchr(b.data, '\x7f'));
    assert_null(strstr(b.data, "\xc2\x9b"));
    assert_non_null(strstr(b.data, "[31mred"));
    assert_int_equal(partd__show_fmt_chars("\xc3\xa9t\xc3\xa9"), 3);
    partd_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_rounds_half_away_from_zero),
        cmocka_unit_test(test_coordinates_drop_a_trailing_zero),
        cmocka_unit_test(test_bytes_use_binary_units),
        cmocka_unit_test(test_milliseconds_keep_three_significant_digits_when_small),
        cmocka_unit_test(test_nice_steps_are_1_2_5_times_a_power_of_ten),
        cmocka_unit_test(test_xml_escapes_and_replaces_forbidden_characters),
        cmocka_unit_test(test_plain_text_cannot_steer_a_terminal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
