/*
 * show_ranks.c - the panel of memory and busy time per rank (v3 training
 * results); see show_internal.h.
 *
 * A rank's memory is its peak read from its order of actions (ranks[]
 * memory_bytes: param_factor x the parameters of its stages, a shared one
 * once, and the microbatches it holds), drawn against its device's memory
 * on one scale for all; its busy time against the step, the rest of the
 * step being its idle time. Under each rank, while the rows are few
 * enough, the stages it runs with their units (first and last) and how
 * many of them are checkpointed ("ckpt"), each cut to its share of the
 * line with the whole as a tooltip.
 */
#include <math.h>
#include <stdio.h>

#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

#define MEM_X0 (PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W)
#define MEM_X1 480.0
#define MEM_TEXT_X 488.0
#define TIME_X0 612.0
#define TIME_X1 840.0
/* Up to this many ranks, each gets a line of its stages' units. */
#define UNIT_LINES 16
/* Characters of a line of units (9 px text from MEM_X0 to the margin). */
#define LINE_CHARS 136

/* "8: layers.9..layers.11 (1 ckpt)" into t: the stage, its first and last
 * units, how many it checkpoints. */
static void stage_units(partd_buf *t, const partd__show_part *p, size_t j)
{
    char text[64];
    snprintf(text, sizeof text, "%zu: ", j);
    partd_buf_puts(t, text);
    size_t n = p->n_units, ck = json_array_size(p->checkpointed);
    if (n)
        partd_buf_puts(t, json_string_value(json_array_get(p->units, 0)));
    if (n > 1)
        partd_buf_cat(t, "..", json_string_value(json_array_get(p->units, n - 1)), NULL);
    if (ck) {
        snprintf(text, sizeof text, " (%zu ckpt)", ck);
        partd_buf_puts(t, text);
    }
}

/* Rank k's stages' units on one line: each in full while the line holds
 * them all, else cut to an equal share with the whole as a tooltip. */
static void units_line(partd_buf *b, const partd__show_result *r, size_t k, double y)
{
    size_t v = 0, chars = 0;
    for (size_t j = 0; j < r->n_parts; j++)
        if (r->tl_stages[j].rank == k) {
            partd_buf t;
            partd_buf_init(&t);
            stage_units(&t, &r->parts[j], j);
            chars += (t.data ? partd__show_fmt_chars(t.data) : 0) + 3;
            partd_buf_free(&t);
            v++;
        }
    size_t share = chars <= LINE_CHARS || !v ? 0 : LINE_CHARS / v - 3;
    partd__show_draw_text_open(b, MEM_X0, y, "small cap", "start");
    partd_buf_puts(b, v > 1 ? "stages " : "stage ");
    int first = 1;
    for (size_t j = 0; j < r->n_parts; j++) {
        if (r->tl_stages[j].rank != k)
            continue;
        partd_buf t;
        partd_buf_init(&t);
        stage_units(&t, &r->parts[j], j);
        partd_buf_puts(b, first ? "<tspan>" : " \xc2\xb7 <tspan>");
        if (t.failed)
            b->failed = 1;
        else
            partd__show_fmt_xml(b, t.data, share);
        if (!t.failed && share && partd__show_fmt_chars(t.data) > share) {
            partd_buf_puts(b, "<title>");
            partd__show_fmt_xml(b, t.data, 0);
            partd_buf_puts(b, "</title>");
        }
        partd_buf_puts(b, "</tspan>");
        partd_buf_free(&t);
        first = 0;
    }
    partd_buf_puts(b, "</text>\n");
}

static void rank_row(partd_buf *b, const partd__show_result *r, size_t k, double y, double h,
                     double mem_scale, double time_scale)
{
    const partd__show_rank *rk = &r->ranks[k];
    partd__show_draw_rect(b, "devmem", MEM_X0, y, rk->device_memory_bytes * mem_scale, h);
    partd__show_draw_rect(b, "peak", MEM_X0, y + 1, rk->memory_bytes * mem_scale, h - 2);
    char a[PARTD_SHOW_NUM_CAP], d[PARTD_SHOW_NUM_CAP], text[200];
    partd__show_fmt_bytes(a, rk->memory_bytes);
    partd__show_fmt_fixed(
        d, rk->device_memory_bytes > 0 ? 100 * rk->memory_bytes / rk->device_memory_bytes : 0, 1);
    snprintf(text, sizeof text, "%s (%s%%)", a, d);
    partd__show_draw_text(b, MEM_TEXT_X, y + h - 1, "small", "start", text);
    double step = r->timeline.step_ms;
    partd__show_draw_rect(b, "track", TIME_X0, y + 1, step * time_scale, h - 2);
    partd__show_draw_rect(b, "compute", TIME_X0, y + 1, fmin(rk->busy_ms, step) * time_scale,
                          h - 2);
    partd__show_fmt_ms(a, rk->busy_ms);
    partd__show_fmt_fixed(d, step > 0 ? 100 * (1 - rk->busy_ms / step) : 0, 0);
    snprintf(text, sizeof text, "%s, %s%% idle", a, d);
    partd__show_draw_text(b, TIME_X0 + step * time_scale + 4, y + h - 1,
                          rk->busy_ms >= r->bottleneck_ms * (1 - 1e-9) ? "small strong" : "small",
                          "start", text);
}

static void heading(partd_buf *b, double y, int unit_lines)
{
    partd__show_draw_heading(b, y, "Memory and busy time per rank");
    partd__show_draw_text(
        b, PARTD_SHOW_MARGIN, y + 16, "cap small", "start",
        unit_lines ? "peak memory read from each rank's order (param_factor x its parameters, and "
                     "the microbatches it holds) against its device's, one scale for all; busy "
                     "time against the step; under each, its stages' units"
                   : "peak memory read from each rank's order (param_factor x its parameters, and "
                     "the microbatches it holds) against its device's, one scale for all; busy "
                     "time against the step");
}

static void legends(partd_buf *b, double y)
{
    static const partd__show_legend_item mem[] = {{"peak", "peak memory"},
                                                  {"devmem", "device memory"}};
    static const partd__show_legend_item time[] = {{"compute", "busy"}, {"track", "idle"}};
    partd__show_draw_legend(b, MEM_X0, y, mem, 2);
    partd__show_draw_legend(b, TIME_X0, y, time, 2);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 34, y, "small cap", "end", "rank");
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 40, y, "small cap", "start", "device");
}

double partd__show_ranks_panel(partd_buf *b, const partd__show_result *r, double y)
{
    size_t S = r->n_ranks;
    if (!S)
        return y;
    int unit_lines = S <= UNIT_LINES;
    double rh = unit_lines ? 30 : fmin(22, fmax(5, 480.0 / (double)S));
    double h = unit_lines ? 14 : fmax(3, rh * 0.72);
    int label_every = rh >= 9 ? 1 : (int)ceil(9 / rh);
    heading(b, y + 14, unit_lines);
    legends(b, y + 48);
    double top = y + 60, axis_y = top + rh * (double)S + 4, mem_max = 0;
    for (size_t k = 0; k < S; k++)
        mem_max = fmax(mem_max, fmax(r->ranks[k].memory_bytes, r->ranks[k].device_memory_bytes));
    double mem_scale = partd__show_draw_axis_x(b, MEM_X0, MEM_X1, axis_y, top - 2, mem_max,
                                               PARTD_SHOW_AXIS_BYTES, "memory");
    double time_scale =
        partd__show_draw_axis_x(b, TIME_X0, TIME_X1, axis_y, top - 2, r->timeline.step_ms,
                                PARTD_SHOW_AXIS_MS, "busy time in the step");
    for (size_t k = 0; k < S; k++) {
        double ry = top + rh * (double)k;
        if (k % (size_t)label_every == 0)
            partd__show_draw_row_label(b, ry + h - 1, k, k, r->ranks[k].device, -1);
        rank_row(b, r, k, ry, h, mem_scale, time_scale);
        if (unit_lines)
            units_line(b, r, k, ry + h + 10);
    }
    return axis_y + 40;
}
