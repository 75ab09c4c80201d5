/*
 * show_svg.c - the picture of a plan: the SVG document, its title, and the
 * panel of memory and time per stage; see show.h and show_panels.h.
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

#include "partd.h"
#include "show.h"
#include "show_draw.h"
#include "show_fmt.h"
#include "show_panels.h"

#define MAX_ROWS 128
#define MEM_X0 (SHOW_MARGIN + SHOW_LABEL_W)
#define MEM_X1 480.0
#define MEM_TEXT_X 488.0
#define TIME_X0 612.0
#define TIME_X1 876.0
#define NAME_CHARS 22

const char *show_part_word(const show_result *r)
{
    return strcmp(r->mode, "size_based") == 0 ? "partition" : "stage";
}

void show_row_label(partd_buf *b, double y, size_t first, size_t last, const char *device,
                    long nodes)
{
    char num[64];
    size_t name_chars = nodes >= 0 ? NAME_CHARS - 6 : NAME_CHARS;
    if (first == last)
        snprintf(num, sizeof num, "%zu", first);
    else
        snprintf(num, sizeof num, "%zu-%zu", first, last);
    draw_text(b, SHOW_MARGIN + 34, y, "small", "end", num);
    draw_text_open(b, SHOW_MARGIN + 40, y, "small", "start");
    if (first != last) {
        snprintf(num, sizeof num, "group of %zu", last - first + 1);
        partd_buf_puts(b, num);
    } else {
        show_xml(b, device, name_chars);
        if (show_chars(device) > name_chars) {
            partd_buf_puts(b, "<title>");
            show_xml(b, device, 0);
            partd_buf_puts(b, "</title>");
        }
    }
    partd_buf_puts(b, "</text>\n");
    if (nodes >= 0) {
        snprintf(num, sizeof num, "%ld", nodes);
        draw_text(b, SHOW_MARGIN + SHOW_LABEL_W - 8, y, "small cap", "end", num);
    }
}

/* Fraction of its device a partition fills, or its bytes when the result
 * does not say how large the device is. */
static double fullness(const show_result *r, const show_part *p)
{
    if (r->has_device_memory && p->device_memory_bytes > 0)
        return p->memory_bytes / p->device_memory_bytes;
    return p->memory_bytes;
}

typedef struct row {
    size_t first, last, mem, time; /* partition range and the members drawn */
    long nodes;                    /* operation nodes of the range; -1 unknown */
} row;

static size_t make_rows(const show_result *r, row *rows)
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

static void memory_bar(partd_buf *b, const show_result *r, const show_part *p, double y,
                       double h, double scale)
{
    if (r->has_device_memory)
        draw_rect(b, "devmem", MEM_X0, y, p->device_memory_bytes * scale, h);
    double x = MEM_X0;
    const double parts[3] = {p->params, p->rest, p->received};
    static const char *const cls[3] = {"param", "act", "recv"};
    for (int k = 0; k < 3; k++) {
        draw_rect(b, cls[k], x, y + 1, parts[k] * scale, h - 2);
        x += parts[k] * scale;
    }
    char bytes[SHOW_NUM_CAP], pct[SHOW_NUM_CAP], text[2 * SHOW_NUM_CAP + 8];
    show_bytes(bytes, p->memory_bytes);
    if (r->has_device_memory && p->device_memory_bytes > 0) {
        show_fixed(pct, 100 * p->memory_bytes / p->device_memory_bytes, 1);
        snprintf(text, sizeof text, "%s (%s%%)", bytes, pct);
    } else {
        snprintf(text, sizeof text, "%s", bytes);
    }
    draw_text(b, MEM_TEXT_X, y + h - 1, "small", "start", text);
}

static void time_bar(partd_buf *b, const show_result *r, const show_part *p, double y, double h,
                     double scale, int bottleneck)
{
    double x = TIME_X0;
    if (r->training) {
        const double parts[4] = {p->forward_ms, p->backward_ms, p->recompute_ms, p->comm_ms};
        static const char *const cls[4] = {"fwd", "bwd", "rc", "comm"};
        for (int k = 0; k < 4; k++) {
            draw_rect(b, cls[k], x, y + 1, parts[k] * scale, h - 2);
            x += parts[k] * scale;
        }
    } else {
        double compute = fmin(p->compute_ms, p->time_ms);
        draw_rect(b, "compute", x, y + 1, compute * scale, h - 2);
        draw_rect(b, "xfer", x + compute * scale, y + 1, (p->time_ms - compute) * scale, h - 2);
        x += p->time_ms * scale;
    }
    char ms[SHOW_NUM_CAP];
    show_ms(ms, p->time_ms);
    draw_text(b, x + 4, y + h - 1, bottleneck ? "small strong" : "small", "start", ms);
}

static void stage_legends(partd_buf *b, const show_result *r, double y)
{
    static const show_legend_item mem[] = {
        {"param", "parameters"}, {"act", "activations & other state"}, {"recv", "received"}};
    static const show_legend_item dev[] = {{"devmem", "device memory"}};
    static const show_legend_item train[] = {
        {"fwd", "forward"}, {"bwd", "backward"}, {"rc", "recompute"}, {"comm", "comm"}};
    static const show_legend_item pipe[] = {{"compute", "compute"}, {"xfer", "transfer"}};
    double x = draw_legend(b, MEM_X0, y, mem, 3);
    if (r->has_device_memory)
        draw_legend(b, x, y, dev, 1);
    if (r->training)
        draw_legend(b, TIME_X0, y, train, 4);
    else
        draw_legend(b, TIME_X0, y, pipe, 2);
}

static void stage_maxima(const show_result *r, double *mem_max, double *time_max)
{
    *mem_max = *time_max = 0;
    for (size_t i = 0; i < r->n_parts; i++) {
        const show_part *p = &r->parts[i];
        *mem_max = fmax(*mem_max, p->memory_bytes);
        if (r->has_device_memory)
            *mem_max = fmax(*mem_max, p->device_memory_bytes);
        *time_max = fmax(*time_max, p->time_ms);
    }
}

static void stage_heading(partd_buf *b, const show_result *r, double y, size_t group)
{
    char text[256];
    snprintf(text, sizeof text, "Memory and time per %s", show_part_word(r));
    draw_heading(b, y, text);
    const char *mem_note = r->has_device_memory
                               ? "memory against each device's memory, one scale for all"
                               : "memory on an absolute scale (the result does not give device memory)";
    if (group > 1)
        snprintf(text, sizeof text, "%s; rows of %zu %ss show the fullest and the slowest",
                 mem_note, group, show_part_word(r));
    else
        snprintf(text, sizeof text, "%s; parameters counted once (1x)", mem_note);
    draw_text(b, SHOW_MARGIN, y + 16, "cap small", "start", text);
}

double show_panel_stages(partd_buf *b, const show_result *r, double y)
{
    row rows[MAX_ROWS];
    size_t n = make_rows(r, rows);
    size_t group = rows[0].last - rows[0].first + 1;
    double rh = fmin(22, fmax(5, 640.0 / (double)n)), h = fmax(3, rh * 0.72);
    int label_every = rh >= 9 ? 1 : (int)ceil(9 / rh);
    stage_heading(b, r, y + 14, group);
    stage_legends(b, r, y + 48);
    draw_text(b, SHOW_MARGIN + 34, y + 48, "small cap", "end", show_part_word(r));
    draw_text(b, SHOW_MARGIN + 40, y + 48, "small cap", "start", "device");
    draw_text(b, SHOW_MARGIN + SHOW_LABEL_W - 8, y + 48, "small cap", "end", "nodes");
    double top = y + 60, axis_y = top + rh * (double)n + 4;
    double mem_max, time_max;
    stage_maxima(r, &mem_max, &time_max);
    double mem_scale = draw_axis_x(b, MEM_X0, MEM_X1, axis_y, top - 2, mem_max, AXIS_BYTES,
                                   "memory");
    double time_scale = draw_axis_x(b, TIME_X0, TIME_X1, axis_y, top - 2, time_max, AXIS_MS,
                                    r->training ? "time per microbatch" : "time");
    for (size_t k = 0; k < n; k++) {
        const row *w = &rows[k];
        double ry = top + rh * (double)k, by = ry + (rh - h) / 2;
        if (k % (size_t)label_every == 0)
            show_row_label(b, by + h - 1, w->first, w->last, r->parts[w->first].device,
                           w->nodes);
        memory_bar(b, r, &r->parts[w->mem], by, h, mem_scale);
        time_bar(b, r, &r->parts[w->time], by, h, time_scale,
                 r->n_parts > 1 && r->parts[w->time].time_ms >= r->bottleneck_ms * (1 - 1e-9));
    }
    return axis_y + 40;
}

/* The title and the plan's key figures. */
static double title(partd_buf *b, const show_result *r, double y)
{
    char text[512], a[SHOW_NUM_CAP], c[SHOW_NUM_CAP], d[SHOW_NUM_CAP], e[SHOW_NUM_CAP];
    draw_text_open(b, SHOW_MARGIN, y + 18, "title", "start");
    partd_buf_puts(b, "partd plan: ");
    show_xml(b, r->mode, 40);
    snprintf(text, sizeof text, ", %zu %s%s", r->n_parts, show_part_word(r),
             r->n_parts == 1 ? "" : "s");
    partd_buf_cat(b, text, "</text>\n", NULL);
    show_bytes(c, r->peak_bytes);
    show_bytes(d, r->transfer_bytes);
    show_ms(e, r->bottleneck_ms);
    if (r->training) {
        show_ms(a, r->step_ms);
        char bubble[SHOW_NUM_CAP];
        show_fixed(bubble, 100 * r->bubble_fraction, 1);
        snprintf(text, sizeof text,
                 "step %s (bubble %s%%), %s schedule, %ld microbatches, bottleneck %s per "
                 "microbatch, peak %s",
                 a, bubble, r->one_f_one_b ? "1f1b" : "gpipe", r->microbatches, e, c);
    } else {
        show_ms(a, r->total_ms);
        snprintf(text, sizeof text, "bottleneck %s, total %s, peak memory %s, transferred %s", e,
                 a, c, d);
    }
    draw_text(b, SHOW_MARGIN, y + 38, "cap", "start", text);
    return y + 50;
}

static int render(const show_result *r, partd_buf *out)
{
    partd_buf body;
    partd_buf_init(&body);
    int rc = PARTD_OK;
    double y = title(&body, r, 0);
    y = show_panel_stages(&body, r, y);
    y = show_panel_timeline(&body, r, y, &rc);
    y = show_panel_sac(&body, r, y);
    y += SHOW_MARGIN;
    if (rc == PARTD_OK)
        rc = partd_buf_status(&body);
    if (rc == PARTD_OK) {
        char h[SHOW_NUM_CAP];
        show_coord(h, ceil(y));
        partd_buf_cat(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"", h,
                      "\" viewBox=\"0 0 960 ", h, "\" role=\"img\">\n<title>partd plan: ", NULL);
        show_xml(out, r->mode, 40);
        partd_buf_puts(out, "</title>\n");
        draw_style(out);
        partd_buf_puts(out, "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
        partd_buf_append(out, body.data, body.len);
        partd_buf_puts(out, "</svg>\n");
        rc = partd_buf_status(out);
    }
    partd_buf_free(&body);
    return rc;
}

int partd_show_svg(const char *result_json, size_t len, partd_buf *out, char *err, size_t errcap)
{
    show_result r;
    int rc = show_result_parse(result_json, len, &r, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    rc = render(&r, out);
    if (rc != PARTD_OK && errcap)
        snprintf(err, errcap, "%s while drawing the plan", partd_strerror(rc));
    show_result_free(&r);
    return rc;
}
