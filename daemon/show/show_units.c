/*
 * show_units.c - the panel of each training stage's units (`training`
 * results with `units`); see show_internal.h.
 *
 * One row per stage (<g class="units" data-units-of="stage">): a box per unit
 * (<rect class="unit" data-unit>), in the stage's order, the units the
 * plan checkpoints (recomputed in backward) filled darker, each box with
 * the unit's name as a tooltip and, where it fits, as its label (up to
 * WORDS_UNITS units in all). Boxes are
 * one width in every row, so that unit k of each stage lines up; past
 * MAX_ROWS stages the rest are counted, not drawn (the text table lists
 * them).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

#define MAX_ROWS 128
#define X0 (PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W)
#define X1 850.0
#define MAX_BOX_W 64.0
/* Pixels per character of a label at font-size 9. */
#define CHAR_W 5.2
/* Up to this many units in all, each has a tooltip and, where it fits, a
 * label; past it the boxes alone (with data-unit) keep the picture small
 * beside a timeline of many ranks. */
#define WORDS_UNITS 128

static int is_checkpointed(const partd__show_part *p, const char *unit)
{
    for (size_t i = 0; i < json_array_size(p->checkpointed); i++)
        if (strcmp(json_string_value(json_array_get(p->checkpointed, i)), unit) == 0)
            return 1;
    return 0;
}

static void unit_box(partd_buf *b, const char *name, int ckpt, double x, double y, double w,
                     double h, int words)
{
    partd_buf_cat(b, "<rect class=\"", ckpt ? "unit ckpt" : "unit", "\" data-unit=\"", NULL);
    partd__show_fmt_xml(b, name, 0);
    partd_buf_puts(b, "\"");
    partd__show_draw_attr(b, "x", x);
    partd__show_draw_attr(b, "y", y);
    partd__show_draw_attr(b, "width", w);
    partd__show_draw_attr(b, "height", h);
    if (!words) {
        partd_buf_puts(b, "/>\n");
        return;
    }
    partd_buf_puts(b, "><title>");
    partd__show_fmt_xml(b, name, 0);
    partd_buf_puts(b, ckpt ? " (checkpointed)</title></rect>\n" : "</title></rect>\n");
    size_t fits = w > 4 ? (size_t)((w - 4) / CHAR_W) : 0;
    if (h >= 9 && fits >= 2) {
        partd__show_draw_text_open(b, x + w / 2, y + h / 2 + 3, ckpt ? "in" : "small", "middle");
        partd__show_fmt_xml(b, name, fits < partd__show_fmt_chars(name) ? fits - 1 : 0);
        partd_buf_puts(b, "</text>\n");
    }
}

/* "2/15 checkpointed" right of the boxes, as the text table says it. */
static void row_count(partd_buf *b, const partd__show_part *p, double y)
{
    char text[96];
    snprintf(text, sizeof text, "%zu/%zu checkpointed", json_array_size(p->checkpointed),
             p->n_units);
    partd__show_draw_text(b, X1 + 6, y, "small cap", "start", text);
}

double partd__show_units_panel(partd_buf *b, const partd__show_result *r, double y)
{
    size_t most = 0, ckpt = 0, all = 0;
    for (size_t i = 0; r->training && i < r->n_parts; i++) {
        most = r->parts[i].n_units > most ? r->parts[i].n_units : most;
        all += r->parts[i].n_units;
        ckpt += json_array_size(r->parts[i].checkpointed);
    }
    if (most == 0)
        return y;
    size_t n = r->n_parts < MAX_ROWS ? r->n_parts : MAX_ROWS;
    double rh = fmin(20, fmax(5, 640.0 / (double)n)), h = fmax(3, rh * 0.75);
    double w = fmin(MAX_BOX_W, (X1 - X0) / (double)most);
    char text[256];
    partd__show_draw_heading(b, y + 14, "Units per stage");
    snprintf(text, sizeof text,
             "each stage's units in order, %zu in all; the %zu checkpointed (recomputed in "
             "backward) are dark",
             all, ckpt);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 30, "cap small", "start", text);
    static const partd__show_legend_item legend[] = {{"unit", "unit"},
                                                     {"unit ckpt", "checkpointed unit"}};
    partd__show_draw_legend(b, X0, y + 48, legend, 2);
    double top = y + 60;
    for (size_t s = 0; s < n; s++) {
        const partd__show_part *p = &r->parts[s];
        double ry = top + rh * (double)s, by = ry + (rh - h) / 2;
        if (rh >= 9) {
            partd__show_draw_row_label(b, by + h - 1, s, s, p->device, -1);
            row_count(b, p, by + h - 1);
        }
        /* [data-stage] marks the timeline's blocks: a row is a group */
        snprintf(text, sizeof text, "<g class=\"units\" data-units-of=\"%zu\">\n", s);
        partd_buf_puts(b, text);
        for (size_t u = 0; u < p->n_units; u++) {
            const char *name = json_string_value(json_array_get(p->units, u));
            unit_box(b, name, is_checkpointed(p, name), X0 + w * (double)u, by, w, h,
                     all <= WORDS_UNITS);
        }
        partd_buf_puts(b, "</g>\n");
    }
    double bottom = top + rh * (double)n;
    if (n < r->n_parts) {
        snprintf(text, sizeof text, "%zu more stages (partd show --format text lists them)",
                 r->n_parts - n);
        partd__show_draw_text(b, X0, bottom + 12, "cap small", "start", text);
        bottom += 16;
    }
    return bottom + 16;
}
