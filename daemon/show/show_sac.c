/*
 * show_sac.c - the activation-checkpointing panel of SAC results: peak
 * memory with and without the plan against the budget, the fraction of
 * activation memory each checkpointed module discards, and, when the
 * frontier was asked for, recomputation time over memory budget as a line
 * chart; see show_internal.h.
 *
 * Modules beyond MAX_MODULES are summarised in one line (the drawn ones are
 * those that discard the most), so a model with a thousand modules gives a
 * picture of bounded size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

#define X0 (PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W)
#define X1 760.0
#define MAX_MODULES 24
#define ROW_H 18.0
#define NAME_CHARS 24

static void peak_row(partd_buf *b, double y, const char *label, const char *cls, double bytes,
                     double scale)
{
    char num[PARTD_SHOW_NUM_CAP];
    partd__show_draw_text(b, X0 - 6, y + 11, "small", "end", label);
    partd__show_draw_rect(b, cls, X0, y + 1, bytes * scale, ROW_H - 4);
    partd__show_fmt_bytes(num, bytes);
    partd__show_draw_text(b, X0 + bytes * scale + 4, y + 11, "small", "start", num);
}

static double peaks(partd_buf *b, const partd__show_sac *sac, double y)
{
    double max = fmax(sac->baseline_bytes, sac->budget_bytes);
    if (sac->has_peak)
        max = fmax(max, sac->peak_bytes);
    double top = y, axis_y = top + 2 * ROW_H + 4;
    double scale =
        partd__show_draw_axis_x(b, X0, X1, axis_y, top, max, PARTD_SHOW_AXIS_BYTES, "peak memory");
    peak_row(b, top, "without checkpointing", "base", sac->baseline_bytes, scale);
    if (sac->has_peak)
        peak_row(b, top + ROW_H, "with this plan", "peak", sac->peak_bytes, scale);
    double x = X0 + sac->budget_bytes * scale;
    partd__show_draw_line(b, "mark", x, top - 4, x, axis_y);
    partd__show_draw_text(b, x + 3, top - 4, "small", "start", "budget");
    return axis_y + 40;
}

typedef struct decision {
    const char *fqn;
    double fraction;
} decision;

static int by_fraction_then_name(const void *a, const void *b)
{
    const decision *x = a, *y = b;
    if (x->fraction != y->fraction)
        return x->fraction > y->fraction ? -1 : 1;
    return strcmp(x->fqn, y->fqn);
}

static void module_row(partd_buf *b, const decision *d, double y)
{
    char pct[PARTD_SHOW_NUM_CAP], text[PARTD_SHOW_NUM_CAP + 4];
    partd__show_draw_text_open(b, X0 - 6, y + 11, "small", "end");
    partd__show_fmt_xml(b, d->fqn, NAME_CHARS);
    if (partd__show_fmt_chars(d->fqn) > NAME_CHARS) {
        partd_buf_puts(b, "<title>");
        partd__show_fmt_xml(b, d->fqn, 0);
        partd_buf_puts(b, "</title>");
    }
    partd_buf_puts(b, "</text>\n");
    double w = (X1 - X0) * 0.5;
    partd__show_draw_rect(b, "track", X0, y + 2, w, ROW_H - 6);
    partd__show_draw_rect(b, "discard", X0, y + 2, w * d->fraction, ROW_H - 6);
    partd__show_fmt_fixed(pct, 100 * d->fraction, 1);
    snprintf(text, sizeof text, "%s%%", pct);
    partd__show_draw_text(b, X0 + w + 6, y + 11, "small", "start", text);
}

/* Reads ac_decisions, sorted with the largest fraction first. */
static decision *decisions(const partd__show_sac *sac, size_t *n)
{
    *n = json_object_size(sac->ac_decisions);
    decision *d = calloc(*n ? *n : 1, sizeof *d);
    if (!d)
        return NULL;
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach(sac->ac_decisions, key, v)
    {
        double f = json_is_number(v) ? json_number_value(v) : 0;
        d[i].fqn = key;
        d[i].fraction = isfinite(f) ? fmin(1, fmax(0, f)) : 0;
        i++;
    }
    qsort(d, *n, sizeof *d, by_fraction_then_name);
    return d;
}

static double modules(partd_buf *b, const partd__show_sac *sac, double y)
{
    size_t n;
    decision *d = decisions(sac, &n);
    if (!d) {
        b->failed = 1;
        return y;
    }
    char text[160];
    snprintf(text, sizeof text, "activation memory discarded and recomputed, per checkpointed module (%zu)", n);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y, "cap small", "start", text);
    y += 8;
    size_t shown = n < MAX_MODULES ? n : MAX_MODULES;
    for (size_t i = 0; i < shown; i++, y += ROW_H)
        module_row(b, &d[i], y);
    if (n > shown) {
        snprintf(text, sizeof text, "and %zu more modules, each discarding at most this much",
                 n - shown);
        partd__show_draw_text(b, X0, y + 11, "small cap", "start", text);
        y += ROW_H;
    }
    free(d);
    return y + 16;
}

static int by_budget(const void *a, const void *b)
{
    const partd__show_frontier_point *x = a, *y = b;
    return (x->budget_bytes > y->budget_bytes) - (x->budget_bytes < y->budget_bytes);
}

static void frontier_points(partd_buf *b, const partd__show_frontier_point *pts, size_t n,
                            double y0, double xs, double ys)
{
    partd_buf_puts(b, "<polyline class=\"line\" points=\"");
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!pts[i].solved)
            continue;
        char x[PARTD_SHOW_NUM_CAP], y[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_coord(x, X0 + pts[i].budget_bytes * xs);
        partd__show_fmt_coord(y, y0 - pts[i].recompute_ms * ys);
        partd_buf_cat(b, k++ ? " " : "", x, ",", y, NULL);
    }
    partd_buf_puts(b, "\"/>\n");
    for (size_t i = 0; i < n; i++) {
        double x = X0 + pts[i].budget_bytes * xs;
        if (pts[i].solved) {
            partd_buf_puts(b, "<circle class=\"dot\" r=\"3\"");
            partd__show_draw_attr(b, "cx", x);
            partd__show_draw_attr(b, "cy", y0 - pts[i].recompute_ms * ys);
            partd_buf_puts(b, "/>\n");
        } else {
            partd__show_draw_line(b, "nosol", x - 4, y0 - 4, x + 4, y0 + 4);
            partd__show_draw_line(b, "nosol", x - 4, y0 + 4, x + 4, y0 - 4);
        }
    }
}

static double frontier(partd_buf *b, const partd__show_sac *sac, double y)
{
    partd__show_frontier_point *pts = malloc(sac->n_frontier * sizeof *pts);
    if (!pts) {
        b->failed = 1;
        return y;
    }
    memcpy(pts, sac->frontier, sac->n_frontier * sizeof *pts);
    qsort(pts, sac->n_frontier, sizeof *pts, by_budget);
    double xmax = sac->budget_bytes, ymax = sac->recompute_ms;
    for (size_t i = 0; i < sac->n_frontier; i++) {
        xmax = fmax(xmax, pts[i].budget_bytes);
        if (pts[i].solved)
            ymax = fmax(ymax, pts[i].recompute_ms);
    }
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y, "cap small", "start",
                          "frontier: the least recomputation at each memory budget");
    static const partd__show_legend_item legend[] = {{"dot", "plan at that budget"},
                                                     {"chosen", "this plan"}};
    double lx = partd__show_draw_legend(b, X0, y + 18, legend, 2);
    partd__show_draw_line(b, "nosol", lx, y + 9, lx + 8, y + 17);
    partd__show_draw_line(b, "nosol", lx, y + 17, lx + 8, y + 9);
    partd__show_draw_text(b, lx + 12, y + 18, "small", "start", "no plan at that budget");
    double top = y + 48, y0 = top + 200;
    double ys =
        partd__show_draw_axis_y(b, X0, y0, top, X1, ymax, PARTD_SHOW_AXIS_MS, "recomputation");
    double xs =
        partd__show_draw_axis_x(b, X0, X1, y0, y0, xmax, PARTD_SHOW_AXIS_BYTES, "memory budget");
    frontier_points(b, pts, sac->n_frontier, y0, xs, ys);
    partd_buf_puts(b, "<circle class=\"chosen\" r=\"5\"");
    partd__show_draw_attr(b, "cx", X0 + sac->budget_bytes * xs);
    partd__show_draw_attr(b, "cy", y0 - sac->recompute_ms * ys);
    partd_buf_puts(b, "/>\n");
    free(pts);
    return y0 + 44;
}

double partd__show_sac_panel(partd_buf *b, const partd__show_result *r, double y)
{
    const partd__show_sac *sac = &r->sac;
    if (!sac->present)
        return y;
    char text[320], rc[PARTD_SHOW_NUM_CAP], gain[PARTD_SHOW_NUM_CAP];
    snprintf(text, sizeof text, "Activation checkpointing (SAC): %.40s", sac->status);
    partd__show_draw_text_open(b, PARTD_SHOW_MARGIN, y + 14, "h", "start");
    partd__show_fmt_xml(b, text, 0);
    partd_buf_puts(b, "</text>\n");
    partd__show_fmt_ms(rc, sac->recompute_ms);
    partd__show_fmt_bytes(gain, sac->has_peak ? fmax(0, sac->baseline_bytes - sac->peak_bytes) : 0);
    snprintf(text, sizeof text, "recomputation %s per step for %s less peak memory", rc, gain);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 30, "cap small", "start", text);
    y = peaks(b, sac, y + 52);
    y = modules(b, sac, y);
    if (sac->n_frontier)
        y = frontier(b, sac, y + 4);
    return y;
}
