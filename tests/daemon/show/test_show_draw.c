/* test_show_draw.c - show_draw.c: the SVG primitives of `partd show`:
 * rectangles (negative sizes drawn as 0), text, axes whose scale maps max
 * onto the axis and whose ticks carry units, legends, row labels. */
#include <string.h>

#include "testutil.h"

#include "core/buf.h"
#include "show/show_draw.h"

static void test_rect_and_text(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_draw_rect(&b, "fwd", 10, 20.25, -5, 7);
    assert_non_null(strstr(b.data, "<rect class=\"fwd\""));
    assert_non_null(strstr(b.data, "x=\"10\""));
    assert_non_null(strstr(b.data, "width=\"0\""));
    assert_non_null(strstr(b.data, "height=\"7\""));
    partd_buf_reset(&b);
    partd__show_draw_text(&b, 1, 2, "label", "end", "13 ms");
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
    double scale = partd__show_draw_axis_x(&b, 100, 600, 300, 50, 3.0 * 1073741824.0,
                                           PARTD_SHOW_AXIS_BYTES, "memory");
    assert_true(scale > 0);
    /* max fits on the axis: its pixel is within [x0, x1]. */
    assert_true(100 + scale * 3.0 * 1073741824.0 <= 600 + 1e-6);
    assert_non_null(strstr(b.data, "memory (GiB)"));
    partd_buf_reset(&b);
    scale = partd__show_draw_axis_y(&b, 50, 400, 100, 900, 13904, PARTD_SHOW_AXIS_MS, "time");
    assert_true(scale > 0 && 300 - scale * 13904 >= -1e-6);
    assert_non_null(strstr(b.data, "time (ms)"));
    partd_buf_reset(&b);
    partd__show_draw_axis_x(&b, 0, 100, 10, 0, 0, PARTD_SHOW_AXIS_MS,
                            "empty"); /* a bare axis, no ticks */
    assert_int_equal(partd_buf_status(&b), 0);
    partd_buf_free(&b);
}

static void test_legend_advances(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    const partd__show_legend_item items[] = {{"fwd", "forward"}, {"bwd", "backward"}};
    double x = partd__show_draw_legend(&b, 10, 10, items, 2);
    assert_true(x > 10);
    assert_non_null(strstr(b.data, "forward"));
    assert_non_null(strstr(b.data, "backward"));
    partd_buf_reset(&b);
    partd__show_draw_style(&b);
    assert_non_null(strstr(b.data, "<style"));
    assert_non_null(strstr(b.data, ".fwd"));
    partd_buf_free(&b);
}

/* Row labels: a stage's number and device, the name cut with the whole of
 * it as a tooltip when long, groups counted, node counts when known. */
static void test_row_labels(void **state)
{
    (void)state;
    partd_buf b;
    partd_buf_init(&b);
    partd__show_draw_row_label(&b, 40, 3, 3, "gpu<3>", -1);
    assert_non_null(strstr(b.data, ">3</text>"));
    assert_non_null(strstr(b.data, ">gpu&lt;3&gt;</text>"));
    assert_null(strstr(b.data, "<title>"));
    assert_null(strstr(b.data, "small cap"));
    partd_buf_reset(&b);
    const char *lng = "a-device-name-longer-than-a-label-holds";
    partd__show_draw_row_label(&b, 40, 3, 3, lng, 12);
    assert_non_null(strstr(b.data, "<title>a-device-name-longer-than-a-label-holds</title>"));
    assert_non_null(strstr(b.data, ">12</text>"));
    partd_buf_reset(&b);
    partd__show_draw_row_label(&b, 40, 4, 7, "gpu4", 20);
    assert_non_null(strstr(b.data, ">4-7</text>"));
    assert_non_null(strstr(b.data, "group of 4"));
    assert_null(strstr(b.data, "gpu4"));
    assert_int_equal(partd_buf_status(&b), 0);
    partd_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rect_and_text),
        cmocka_unit_test(test_axes_scale_and_units),
        cmocka_unit_test(test_legend_advances),
        cmocka_unit_test(test_row_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
