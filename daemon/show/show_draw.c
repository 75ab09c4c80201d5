/* show_draw.c - SVG primitives for `partd show`; see show_draw.h. */
#include "show_draw.h"

#include <math.h>
#include <stdio.h>

#include "show_fmt.h"

/* Characters of a device name in a row label. */
#define NAME_CHARS 22

void partd__show_draw_style(partd_buf *b)
{
    partd_buf_puts(
        b, "<style>"
           "text{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:11px;fill:#222}"
           ".title{font-size:16px;font-weight:bold}.h{font-size:13px;font-weight:bold}"
           ".cap{fill:#555}.tick{font-size:9px;fill:#555}.small{font-size:9px}"
           ".strong{font-weight:bold}.in{fill:#fff;font-size:9px}"
           ".grid{stroke:#e6e6e6;stroke-width:1}.axis{stroke:#777;stroke-width:1}"
           ".mark{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:5 3}"
           ".devmem{fill:#f4f4f4;stroke:#555;stroke-width:1;stroke-dasharray:3 2}.track{fill:#eee}"
           ".param{fill:#8c6bb1}.act{fill:#f28e2b}.recv{fill:#a0a0a0}"
           ".unit{fill:#dbe4f0;stroke:#fff;stroke-width:0.5}.unit.ckpt{fill:#2b5d27}"
           ".compute{fill:#76b7b2}.xfer{fill:#a0a0a0}"
           ".fwd{fill:#4e79a7}.bwd{fill:#59a14f}.sep .fwd,.sep .bwd{stroke:#fff;stroke-width:0.5}.rc{fill:#2b5d27}.comm{fill:#a0a0a0}"
           ".base{fill:#c9c9c9}.peak{fill:#4e79a7}.discard{fill:#59a14f}"
           ".line{fill:none;stroke:#4e79a7;stroke-width:2}.dot{fill:#4e79a7}"
           ".chosen{fill:#e15759;stroke:#fff;stroke-width:1.5}.nosol{stroke:#999;stroke-width:1.5}"
           "</style>\n");
}

void partd__show_draw_attr(partd_buf *b, const char *name, double v)
{
    char num[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_coord(num, v);
    partd_buf_cat(b, " ", name, "=\"", num, "\"", NULL);
}

void partd__show_draw_rect(partd_buf *b, const char *cls, double x, double y, double w, double h)
{
    partd_buf_cat(b, "<rect class=\"", cls, "\"", NULL);
    partd__show_draw_attr(b, "x", x);
    partd__show_draw_attr(b, "y", y);
    partd__show_draw_attr(b, "width", w > 0 ? w : 0);
    partd__show_draw_attr(b, "height", h > 0 ? h : 0);
    partd_buf_puts(b, "/>\n");
}

void partd__show_draw_line(partd_buf *b, const char *cls, double x1, double y1, double x2,
                           double y2)
{
    partd_buf_cat(b, "<line class=\"", cls, "\"", NULL);
    partd__show_draw_attr(b, "x1", x1);
    partd__show_draw_attr(b, "y1", y1);
    partd__show_draw_attr(b, "x2", x2);
    partd__show_draw_attr(b, "y2", y2);
    partd_buf_puts(b, "/>\n");
}

void partd__show_draw_text_open(partd_buf *b, double x, double y, const char *cls,
                                const char *anchor)
{
    partd_buf_puts(b, "<text");
    partd__show_draw_attr(b, "x", x);
    partd__show_draw_attr(b, "y", y);
    if (cls && *cls)
        partd_buf_cat(b, " class=\"", cls, "\"", NULL);
    if (anchor && *anchor && anchor[0] != 's')
        partd_buf_cat(b, " text-anchor=\"", anchor, "\"", NULL);
    partd_buf_puts(b, ">");
}

void partd__show_draw_text(partd_buf *b, double x, double y, const char *cls, const char *anchor,
                           const char *content)
{
    partd__show_draw_text_open(b, x, y, cls, anchor);
    partd__show_fmt_xml(b, content, 0);
    partd_buf_puts(b, "</text>\n");
}

/* Tick label of value v on an axis of the given kind and byte unit. */
static void tick_label(char out[PARTD_SHOW_NUM_CAP], double v, partd__show_axis_kind kind, int unit)
{
    if (kind == PARTD_SHOW_AXIS_BYTES) {
        partd__show_fmt_bytes_in(out, v, unit);
        return;
    }
    int d = 0;
    while (d < 3 && fabs(v * pow(10, d) - round(v * pow(10, d))) > 1e-6)
        d++;
    partd__show_fmt_fixed(out, v, d);
}

static void axis_title(char *out, size_t cap, const char *title, partd__show_axis_kind kind,
                       int unit)
{
    snprintf(out, cap, "%s (%s)", title,
             kind == PARTD_SHOW_AXIS_BYTES ? partd__show_fmt_unit_name(unit) : "ms");
}

/* Step in value units for an axis of this kind: bytes step in whole
 * multiples of the display unit's 1-2-5 steps. */
static double axis_step(double max, partd__show_axis_kind kind, int unit, int target)
{
    if (kind == PARTD_SHOW_AXIS_MS)
        return partd__show_fmt_nice_step(max, target);
    double scale = partd__show_fmt_unit_scale(unit);
    return partd__show_fmt_nice_step(max / scale, target) * scale;
}

/* The axis ends on a tick: max rounded up to a whole number of steps. */
static double round_up(double max, double step)
{
    if (!(max > 0) || !(step > 0))
        return max;
    return ceil(max / step * (1 - 1e-12)) * step;
}

double partd__show_draw_axis_x(partd_buf *b, double x0, double x1, double y, double y_top,
                               double max, partd__show_axis_kind kind, const char *title)
{
    int unit = kind == PARTD_SHOW_AXIS_BYTES ? partd__show_fmt_bytes_unit(max) : 0;
    double step = max > 0 ? axis_step(max, kind, unit, (int)fmax(2, (x1 - x0) / 50)) : 0;
    max = round_up(max, step);
    double scale = max > 0 ? (x1 - x0) / max : 0;
    if (max > 0) {
        for (int i = 0; i * step <= max * (1 + 1e-9) && i <= 100; i++) {
            double x = x0 + i * step * scale;
            char num[PARTD_SHOW_NUM_CAP];
            partd__show_draw_line(b, i ? "grid" : "axis", x, y_top, x, y);
            tick_label(num, i * step, kind, unit);
            partd__show_draw_text(b, x, y + 11, "tick", "middle", num);
        }
    }
    partd__show_draw_line(b, "axis", x0, y, x1, y);
    char label[160];
    axis_title(label, sizeof label, title, kind, unit);
    partd__show_draw_text(b, (x0 + x1) / 2, y + 24, "cap", "middle", label);
    return scale;
}

double partd__show_draw_axis_y(partd_buf *b, double x, double y0, double y1, double x_right,
                               double max, partd__show_axis_kind kind, const char *title)
{
    int unit = kind == PARTD_SHOW_AXIS_BYTES ? partd__show_fmt_bytes_unit(max) : 0;
    double step = max > 0 ? axis_step(max, kind, unit, (int)fmax(2, (y0 - y1) / 40)) : 0;
    max = round_up(max, step);
    double scale = max > 0 ? (y0 - y1) / max : 0;
    if (max > 0) {
        for (int i = 0; i * step <= max * (1 + 1e-9) && i <= 100; i++) {
            double y = y0 - i * step * scale;
            char num[PARTD_SHOW_NUM_CAP];
            partd__show_draw_line(b, i ? "grid" : "axis", x, y, x_right, y);
            tick_label(num, i * step, kind, unit);
            partd__show_draw_text(b, x - 4, y + 3, "tick", "end", num);
        }
    }
    partd__show_draw_line(b, "axis", x, y0, x, y1);
    char label[160];
    axis_title(label, sizeof label, title, kind, unit);
    partd__show_draw_text(b, x, y1 - 8, "cap", "middle", label);
    return scale;
}

double partd__show_draw_legend(partd_buf *b, double x, double y,
                               const partd__show_legend_item *items, int n)
{
    for (int i = 0; i < n; i++) {
        partd__show_draw_rect(b, items[i].cls, x, y - 9, 10, 10);
        partd__show_draw_text(b, x + 14, y, "small", "start", items[i].label);
        x += 14 + 5.2 * (double)partd__show_fmt_chars(items[i].label) + 12;
    }
    return x;
}

void partd__show_draw_heading(partd_buf *b, double y, const char *content)
{
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y, "h", "start", content);
}

void partd__show_draw_row_label(partd_buf *b, double y, size_t first, size_t last,
                                const char *device, long nodes)
{
    char num[64];
    size_t name_chars = nodes >= 0 ? NAME_CHARS - 6 : NAME_CHARS;
    if (first == last)
        snprintf(num, sizeof num, "%zu", first);
    else
        snprintf(num, sizeof num, "%zu-%zu", first, last);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 34, y, "small", "end", num);
    partd__show_draw_text_open(b, PARTD_SHOW_MARGIN + 40, y, "small", "start");
    if (first != last) {
        snprintf(num, sizeof num, "group of %zu", last - first + 1);
        partd_buf_puts(b, num);
    } else {
        partd__show_fmt_xml(b, device, name_chars);
        if (partd__show_fmt_chars(device) > name_chars) {
            partd_buf_puts(b, "<title>");
            partd__show_fmt_xml(b, device, 0);
            partd_buf_puts(b, "</title>");
        }
    }
    partd_buf_puts(b, "</text>\n");
    if (nodes >= 0) {
        snprintf(num, sizeof num, "%ld", nodes);
        partd__show_draw_text(b, PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W - 8, y, "small cap", "end",
                              num);
    }
}
