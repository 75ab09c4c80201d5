/* test_show_draw.c - show_draw.c: the SVG primitives of `partd show`:
 * rectangles (negative sizes drawn as 0), text, axes whose scale maps max
 * onto the axis and whose ticks carry units, legends. */
#include <string.h>

#include "testutil.h"

#include "buf.h"
#include "show_draw.h"

static void test_rect_and_text(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    draw_rect(&b, "fwd", 10, 20.25, -5, 7);
    assert_non_null(strstr(b.data, "<rect class=\"fwd\""));
    assert_non_null(strstr(b.data, "x=\"10\""));
    assert_non_null(strstr(b.data, "width=\"0\""));
    assert_non_null(strstr(b.data, "height=\"7\""));
    partd_buf_reset(&b);
    draw_text(&b, 1, 2, "label", "end", "13 ms");
    assert_non_null(strstr(b.data, "<text"));
    assert_non_null(strstr(b.data, "text-anchor=\"end\""));
    assert_non_null(strstr(b.data, ">13 ms</text>"));
    partd_buf_free(&b);
}

static void test_axes_scale_and_units(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    double scale = draw_axis_x(&b, 100, 600, 300, 50, 3.0 * 1073741824.0, AXIS_BYTES, "memory");
    assert_true(scale > 0);
    /* max fits on the axis: its pixel is within [x0, x1]. */
    assert_true(100 + scale * 3.0 * 1073741824.0 <= 600 + 1e-6);
    assert_non_null(strstr(b.data, "memory (GiB)"));
    partd_buf_reset(&b);
    scale = draw_axis_y(&b, 50, 400, 100, 900, 13904, AXIS_MS, "time");
    assert_true(scale > 0 && 300 - scale * 13904 >= -1e-6);
    assert_non_null(strstr(b.data, "time (ms)"));
    partd_buf_reset(&b);
    draw_axis_x(&b, 0, 100, 10, 0, 0, AXIS_MS, "empty"); /* a bare axis, no ticks */
    assert_int_equal(partd_buf_status(&b), 0);
    partd_buf_free(&b);
}

static void test_legend_advances(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    const show_legend_item items[] = {{"fwd", "forward"}, {"bwd", "backward"}};
    double x = draw_legend(&b, 10, 10, items, 2);
    assert_true(x > 10);
    assert_non_null(strstr(b.data, "forward"));
    assert_non_null(strstr(b.data, "backward"));
    partd_buf_reset(&b);
    draw_style(&b);
    assert_non_null(strstr(b.data, "<style"));
    assert_non_null(strstr(b.data, ".fwd"));
    partd_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rect_and_text),
        cmocka_unit_test(test_axes_scale_and_units),
        cmocka_unit_test(test_legend_advances),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
