/*
 * show_stages.c - the panel of memory and time per stage (per partition for
 * size_based results); see show_internal.h.
 *
 * Memory bars share one absolute scale (bytes), so that stages on devices of
 * different sizes compare honestly; each device's memory is the dashed box
 * behind its bar. Plans with more partitions than MAX_ROWS are drawn in
 * groups of consecutive partitions, each row showing its group's fullest
 * and slowest member.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

#define MAX_ROWS 128
#define MEM_X0 (PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W)
#define MEM_X1 480.0
#define MEM_TEXT_X 488.0
#define TIME_X0 612.0
#define TIME_X1 876.0

/* Fraction of its device a partition fills, or its bytes when the result
 * does not say how large the device is. */
static double fullness(const partd__show_result *r, const partd__show_part *p)
{
    if (r->has_device_memory && p->device_memory_bytes > 0)
        return p->memory_bytes / p->device_memory_bytes;
    return p->memory_bytes;
}

typedef struct row {
    size_t first, last, mem, time; /* partition range and the members drawn */
    long nodes;                    /* operation nodes of the range; -1 unknown */
} row;

static size_t make_rows(const partd__show_result *r, row *rows)
{
    size_t group = (r->n_parts + MAX_ROWS - 1) / MAX_ROWS, n = 0;
    for (size_t first = 0; first < r->n_parts; first += group, n++) {
        row *w = &rows[n];
        w->first = w->mem = w->time = first;
        w->last = first + group - 1 < r->n_parts ? first + group - 1 : r->n_parts - 1;
        w->nodes = 0;
        for (size_t i = first; i <= w->last; i++) {
            w->nodes = w->nodes < 0 || r->parts[i].nodes < 0 ? -1 : w->nodes + r->parts[i].nodes;
            if (fullness(r, &r->parts[i]) > fullness(r, &r->parts[w->mem]))
                w->mem = i;
            if (r->parts[i].time_ms > r->parts[w->time].time_ms)
                w->time = i;
        }
    }
    return n;
}

static void memory_bar(partd_buf *b, const partd__show_result *r, const partd__show_part *p,
                       double y, double h, double scale)
{
    if (r->has_device_memory)
        partd__show_draw_rect(b, "devmem", MEM_X0, y, p->device_memory_bytes * scale, h);
    double x = MEM_X0;
    const double parts[3] = {p->params, p->rest, p->received};
    static const char *const cls[3] = {"param", "act", "recv"};
    for (int k = 0; k < 3; k++) {
        partd__show_draw_rect(b, cls[k], x, y + 1, parts[k] * scale, h - 2);
        x += parts[k] * scale;
    }
    char bytes[PARTD_SHOW_NUM_CAP], pct[PARTD_SHOW_NUM_CAP], text[2 * PARTD_SHOW_NUM_CAP + 8];
    partd__show_fmt_bytes(bytes, p->memory_bytes);
    if (r->has_device_memory && p->device_memory_bytes > 0) {
        partd__show_fmt_fixed(pct, 100 * p->memory_bytes / p->device_memory_bytes, 1);
        snprintf(text, sizeof text, "%s (%s%%)", bytes, pct);
    } else {
        snprintf(text, sizeof text, "%s", bytes);
    }
    partd__show_draw_text(b, MEM_TEXT_X, y + h - 1, "small", "start", text);
}

static void time_bar(partd_buf *b, const partd__show_result *r, const partd__show_part *p, double y,
                     double h, double scale, int bottleneck)
{
    double x = TIME_X0;
    if (r->training) {
        const double parts[4] = {p->forward_ms, p->backward_ms, p->recompute_ms, p->comm_ms};
        static const char *const cls[4] = {"fwd", "bwd", "rc", "comm"};
        for (int k = 0; k < 4; k++) {
            partd__show_draw_rect(b, cls[k], x, y + 1, parts[k] * scale, h - 2);
            x += parts[k] * scale;
        }
    } else {
        double compute = fmin(p->compute_ms, p->time_ms);
        partd__show_draw_rect(b, "compute", x, y + 1, compute * scale, h - 2);
        partd__show_draw_rect(b, "xfer", x + compute * scale, y + 1, (p->time_ms - compute) * scale,
                              h - 2);
        x += p->time_ms * scale;
    }
    char ms[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_ms(ms, p->time_ms);
    partd__show_draw_text(b, x + 4, y + h - 1, bottleneck ? "small strong" : "small", "start", ms);
}

static void stage_legends(partd_buf *b, const partd__show_result *r, double y)
{
    static const partd__show_legend_item mem[] = {
        {"param", "parameters"}, {"act", "activations & other state"}, {"recv", "received"}};
    /* a training stage's parameters carry their optimizer state */
    static const partd__show_legend_item mem_training[] = {
        {"param", "params x param_factor"}, {"act", "activations"}, {"recv", "received"}};
    static const partd__show_legend_item dev[] = {{"devmem", "device memory"}};
    static const partd__show_legend_item train[] = {
        {"fwd", "forward"}, {"bwd", "backward"}, {"rc", "recompute"}, {"comm", "comm"}};
    static const partd__show_legend_item pipe[] = {{"compute", "compute"}, {"xfer", "transfer"}};
    double x = partd__show_draw_legend(b, MEM_X0, y, r->training ? mem_training : mem, 3);
    if (r->has_device_memory)
        partd__show_draw_legend(b, x, y, dev, 1);
    if (r->training)
        partd__show_draw_legend(b, TIME_X0, y, train, 4);
    else
        partd__show_draw_legend(b, TIME_X0, y, pipe, 2);
}

static void stage_maxima(const partd__show_result *r, double *mem_max, double *time_max)
{
    *mem_max = *time_max = 0;
    for (size_t i = 0; i < r->n_parts; i++) {
        const partd__show_part *p = &r->parts[i];
        *mem_max = fmax(*mem_max, p->memory_bytes);
        if (r->has_device_memory)
            *mem_max = fmax(*mem_max, p->device_memory_bytes);
        *time_max = fmax(*time_max, p->time_ms);
    }
}

/* What the parameter bar holds. A training stage's is param_memory_bytes,
 * param_factor x its parameters (the result's ratio of the two); other
 * results give the parameters' own bytes, so param_factor's further copies
 * of them are in the rest. */
static void param_note(const partd__show_result *r, char *out, size_t cap)
{
    double f = 0;
    for (size_t i = 0; i < r->n_parts && f == 0; i++)
        if (r->parts[i].has_memory_split)
            f = r->parts[i].param_factor;
    char num[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_fixed(num, f, 1);
    if (r->training && f > 0)
        snprintf(out, cap, "parameters x %s (param_factor: weights, gradients, optimizer state)",
                 num);
    else if (r->training)
        snprintf(out, cap, "parameters x param_factor (weights, gradients, optimizer state)");
    else if (strcmp(r->mode, "pipeline") == 0)
        snprintf(out, cap, "parameters counted once (1x); their other param_factor copies "
                           "(gradients, optimizer state) are in the rest");
    else
        snprintf(out, cap, "parameters counted once (1x)");
}

static void stage_heading(partd_buf *b, const partd__show_result *r, double y, size_t group)
{
    char text[512], params[160];
    snprintf(text, sizeof text, "Memory and time per %s", partd__show_result_part_word(r));
    partd__show_draw_heading(b, y, text);
    const char *mem_note = r->has_device_memory
                               ? "memory against each device's memory, one scale for all"
                               : "memory on an absolute scale (the result does not give device memory)";
    param_note(r, params, sizeof params);
    if (group > 1)
        snprintf(text, sizeof text, "%s; %s; rows of %zu %ss show the fullest and the slowest",
                 mem_note, params, group, partd__show_result_part_word(r));
    else
        snprintf(text, sizeof text, "%s; %s", mem_note, params);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 16, "cap small", "start", text);
}

double partd__show_stages_panel(partd_buf *b, const partd__show_result *r, double y)
{
    row rows[MAX_ROWS];
    size_t n = make_rows(r, rows);
    size_t group = rows[0].last - rows[0].first + 1;
    double rh = fmin(22, fmax(5, 640.0 / (double)n)), h = fmax(3, rh * 0.72);
    int label_every = rh >= 9 ? 1 : (int)ceil(9 / rh);
    stage_heading(b, r, y + 14, group);
    stage_legends(b, r, y + 48);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 34, y + 48, "small cap", "end",
                          partd__show_result_part_word(r));
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 40, y + 48, "small cap", "start", "device");
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W - 8, y + 48, "small cap", "end",
                          "nodes");
    double top = y + 60, axis_y = top + rh * (double)n + 4;
    double mem_max, time_max;
    stage_maxima(r, &mem_max, &time_max);
    double mem_scale = partd__show_draw_axis_x(b, MEM_X0, MEM_X1, axis_y, top - 2, mem_max,
                                               PARTD_SHOW_AXIS_BYTES, "memory");
    double time_scale =
        partd__show_draw_axis_x(b, TIME_X0, TIME_X1, axis_y, top - 2, time_max, PARTD_SHOW_AXIS_MS,
                                r->training ? "time per microbatch" : "time");
    for (size_t k = 0; k < n; k++) {
        const row *w = &rows[k];
        double ry = top + rh * (double)k, by = ry + (rh - h) / 2;
        if (k % (size_t)label_every == 0)
            partd__show_draw_row_label(b, by + h - 1, w->first, w->last, r->parts[w->first].device,
                                       w->nodes);
        memory_bar(b, r, &r->parts[w->mem], by, h, mem_scale);
        time_bar(b, r, &r->parts[w->time], by, h, time_scale,
                 r->n_parts > 1 && r->parts[w->time].time_ms >= r->bottleneck_ms * (1 - 1e-9));
    }
    return axis_y + 40;
}
