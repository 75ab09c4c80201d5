/*
 * show_draw.h - SVG drawing primitives shared by the picture of `partd show`
 * and its panels (show_svg.c, show_stages.c, show_timeline.c, show_sac.c):
 * rectangles, text, lines, axes with ticks and units, legends, row labels,
 * and the style sheet they refer to. Private to daemon/show.
 *
 * Everything appends to a partd_buf (buf.h) and cannot fail other than by
 * the buffer's `failed` flag. Coordinates and figures go through show_fmt.h,
 * so the bytes are the same everywhere. Names are escaped by the caller with
 * partd__show_fmt_xml() where they go inside an element opened by
 * partd__show_draw_text_open().
 */
#ifndef PARTD_SHOW_DRAW_H
#define PARTD_SHOW_DRAW_H

#include "core/buf.h"

#define PARTD_SHOW_WIDTH 960.0
#define PARTD_SHOW_MARGIN 16.0
/* Width given to row labels (stage number and device) left of the charts. */
#define PARTD_SHOW_LABEL_W 190.0

typedef enum { PARTD_SHOW_AXIS_BYTES, PARTD_SHOW_AXIS_MS } partd__show_axis_kind;

typedef struct partd__show_legend_item {
    const char *cls;   /* style class of the swatch */
    const char *label; /* plain ASCII text */
} partd__show_legend_item;

/* The <style> element: colours of every class the panels use. */
void partd__show_draw_style(partd_buf *b);
/* ` name="v"` with v formatted as a coordinate. */
void partd__show_draw_attr(partd_buf *b, const char *name, double v);
/* <rect class=cls x y width height/>; negative sizes are drawn as 0. */
void partd__show_draw_rect(partd_buf *b, const char *cls, double x, double y, double w, double h);
void partd__show_draw_line(partd_buf *b, const char *cls, double x1, double y1, double x2,
                           double y2);
/* Opens <text x y class text-anchor>; the caller writes the content and
 * closes with partd_buf_puts(b, "</text>"). anchor: "start", "middle", "end". */
void partd__show_draw_text_open(partd_buf *b, double x, double y, const char *cls,
                                const char *anchor);
/* A whole <text> element whose content is plain ASCII (figures, labels). */
void partd__show_draw_text(partd_buf *b, double x, double y, const char *cls, const char *anchor,
                           const char *content);
/* Horizontal axis along y from x0 (value 0) to x1 (value max): grid lines up
 * to y_top, ticks at a 1-2-5 step, tick labels in the unit that suits max
 * (MiB, GiB, ... or ms), and "title (unit)" below. max <= 0 draws a bare
 * axis. Returns the value-to-pixel scale (pixels per unit of value). */
double partd__show_draw_axis_x(partd_buf *b, double x0, double x1, double y, double y_top,
                               double max, partd__show_axis_kind kind, const char *title);
/* Vertical axis along x from y0 (value 0, bottom) to y1 (value max, top),
 * labels to the left; returns pixels per unit of value. */
double partd__show_draw_axis_y(partd_buf *b, double x, double y0, double y1, double x_right,
                               double max, partd__show_axis_kind kind, const char *title);
/* A row of swatches and labels starting at (x, y); returns the x after it. */
double partd__show_draw_legend(partd_buf *b, double x, double y,
                               const partd__show_legend_item *items, int n);
/* The bytes of a title "partd plan: ..." and a caption line use these. */
void partd__show_draw_heading(partd_buf *b, double y, const char *content);
/* A row label: the stage number, the device name (truncated, escaped, with
 * the full name as a tooltip when it had to be cut) and, when nodes >= 0,
 * the number of operation nodes right-aligned before the chart. */
void partd__show_draw_row_label(partd_buf *b, double y, size_t first, size_t last,
                                const char *device, long nodes);

#endif
