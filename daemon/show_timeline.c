/*
 * show_timeline.c - the timeline of one training step under the plan's
 * schedule (`training` results): one forward and one backward block per
 * stage and microbatch, placed by show_schedule.c; see show_panels.h.
 *
 * Block lengths come from the result's per-microbatch figures: a forward
 * block is forward_ms plus half of comm_ms (activations in), a backward
 * block backward_ms + recompute_ms plus the other half (gradients back), so
 * a stage is busy time_ms per microbatch in all. Recomputation runs first
 * in the backward block and is drawn darker inside it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "partd.h"
#include "show_draw.h"
#include "show_fmt.h"
#include "show_panels.h"
#include "show_schedule.h"

#define X0 (SHOW_MARGIN + SHOW_LABEL_W)
#define X1 (SHOW_WIDTH - 3 * SHOW_MARGIN)
/* More stages than this would leave lanes under two pixels. */
#define MAX_LANES 256
/* Up to this many blocks, each carries a tooltip; labels need room too. */
#define TOOLTIP_BLOCKS 512

static void block(partd_buf *b, const char *cls, size_t s, size_t m, double x, double y, double w,
                  double h, double start, double end, int tooltip)
{
    char num[32];
    partd_buf_cat(b, "<rect class=\"", cls, "\"", NULL);
    snprintf(num, sizeof num, "%zu", s);
    partd_buf_cat(b, " data-stage=\"", num, "\"", NULL);
    snprintf(num, sizeof num, "%zu", m);
    partd_buf_cat(b, " data-microbatch=\"", num, "\"", NULL);
    draw_attr(b, "x", x);
    draw_attr(b, "y", y);
    draw_attr(b, "width", w);
    draw_attr(b, "height", h);
    if (!tooltip) {
        partd_buf_puts(b, "/>\n");
        return;
    }
    char t0[SHOW_NUM_CAP], t1[SHOW_NUM_CAP], text[160];
    show_ms(t0, start);
    show_ms(t1, end);
    snprintf(text, sizeof text, "><title>stage %zu, microbatch %zu, %s: %s to %s</title></rect>\n",
             s, m, cls[0] == 'f' ? "forward" : "backward", t0, t1);
    partd_buf_puts(b, text);
}

/* The microbatch number inside a block wide and tall enough for it. */
static void block_label(partd_buf *b, size_t m, double x, double y, double w, double h)
{
    char num[32];
    snprintf(num, sizeof num, "%zu", m);
    if (h >= 9 && w >= 6.0 * (double)show_chars(num) + 4)
        draw_text(b, x + w / 2, y + h / 2 + 3, "in", "middle", num);
}

/* Block edges are rounded to the tenth of a pixel the document carries, so
 * that a block ending when the next begins touches it and never overlaps. */
static double pixel(double x)
{
    return round(x * 10) / 10;
}

typedef struct lanes {
    double top, lane_h, block_h, scale;
    int labels, tooltips;
} lanes;

static void stage_blocks(partd_buf *b, const show_result *r, const show_schedule *sch,
                         const lanes *ln, size_t s)
{
    const show_part *p = &r->parts[s];
    size_t M = sch->microbatches;
    double y = ln->top + ln->lane_h * (double)s + (ln->lane_h - ln->block_h) / 2;
    for (size_t m = 0; m < M; m++) {
        size_t i = s * M + m;
        double fx = pixel(X0 + sch->fwd_start[i] * ln->scale);
        double fw = pixel(X0 + sch->fwd_end[i] * ln->scale) - fx;
        block(b, "fwd", s, m, fx, y, fw, ln->block_h, sch->fwd_start[i], sch->fwd_end[i],
              ln->tooltips);
        double bx = pixel(X0 + sch->bwd_start[i] * ln->scale);
        double bw = pixel(X0 + sch->bwd_end[i] * ln->scale) - bx;
        block(b, "bwd", s, m, bx, y, bw, ln->block_h, sch->bwd_start[i], sch->bwd_end[i],
              ln->tooltips);
        /* Recomputation thinner than a third of a pixel would not show. */
        if (p->recompute_ms * ln->scale >= 0.3)
            draw_rect(b, "rc", bx, y, p->recompute_ms * ln->scale, ln->block_h);
        if (ln->labels) {
            block_label(b, m, fx, y, fw, ln->block_h);
            block_label(b, m, bx, y, bw, ln->block_h);
        }
    }
}

static void timeline_heading(partd_buf *b, const show_result *r, double y, double makespan)
{
    char text[320], sim[SHOW_NUM_CAP], plan[SHOW_NUM_CAP];
    snprintf(text, sizeof text, "One training step: %s, %ld microbatches, %zu stages",
             r->one_f_one_b ? "1f1b" : "gpipe", r->microbatches, r->n_parts);
    draw_heading(b, y, text);
    show_ms(sim, makespan);
    show_ms(plan, r->step_ms);
    snprintf(text, sizeof text,
             "simulated from per-stage times (a block starts when its stage is free and its input "
             "is ready): %s; the plan's step_ms: %s; blocks include half of comm_ms each",
             sim, plan);
    draw_text(b, SHOW_MARGIN, y + 16, "cap small", "start", text);
}

static void timeline_legend(partd_buf *b, const show_result *r, double y)
{
    static const show_legend_item items[] = {
        {"fwd", "forward"}, {"bwd", "backward"}, {"rc", "recompute (inside backward)"}};
    double x = draw_legend(b, X0, y, items, 3);
    (void)r;
    draw_line(b, "mark", x, y - 4, x + 16, y - 4);
    draw_text(b, x + 20, y, "small", "start", "plan's step_ms");
}

static double too_many_blocks(partd_buf *b, const show_result *r, double y)
{
    char text[256];
    snprintf(text, sizeof text, "One training step: %zu stages x %ld microbatches", r->n_parts,
             r->microbatches);
    draw_heading(b, y + 14, text);
    snprintf(text, sizeof text,
             "not drawn block by block: more than %d stages or %d blocks; see the table "
             "(partd show --format text)",
             MAX_LANES, SHOW_MAX_BLOCKS);
    draw_text(b, SHOW_MARGIN, y + 30, "cap small", "start", text);
    return y + 48;
}

static double draw_timeline(partd_buf *b, const show_result *r, const show_schedule *sch,
                            double y)
{
    size_t S = sch->stages;
    lanes ln;
    ln.lane_h = fmin(20, fmax(2, 480.0 / (double)S));
    ln.block_h = fmax(1.6, ln.lane_h * 0.8);
    ln.top = y + 60;
    ln.tooltips = S * sch->microbatches <= TOOLTIP_BLOCKS;
    ln.labels = ln.tooltips && ln.block_h >= 9;
    timeline_heading(b, r, y + 14, sch->makespan);
    timeline_legend(b, r, y + 48);
    double axis_y = ln.top + ln.lane_h * (double)S + 4;
    double max = fmax(sch->makespan, r->step_ms);
    ln.scale = draw_axis_x(b, X0, X1, axis_y, ln.top - 2, max, AXIS_MS, "time since the step began");
    int label_every = ln.lane_h >= 9 ? 1 : (int)ceil(9 / ln.lane_h);
    /* Few blocks get a hairline between them; many are drawn edge to edge
     * without the seams anti-aliasing would leave. */
    partd_buf_puts(b, ln.tooltips ? "<g class=\"sep\">\n" : "<g shape-rendering=\"crispEdges\">\n");
    for (size_t s = 0; s < S; s++) {
        double ly = ln.top + ln.lane_h * (double)s + ln.lane_h / 2 + 3;
        if (s % (size_t)label_every == 0)
            show_row_label(b, ly, s, s, r->parts[s].device, -1);
        stage_blocks(b, r, sch, &ln, s);
    }
    partd_buf_puts(b, "</g>\n");
    if (r->step_ms > 0) {
        double x = X0 + r->step_ms * ln.scale;
        draw_line(b, "mark", x, ln.top - 6, x, axis_y);
    }
    return axis_y + 40;
}

double show_panel_timeline(partd_buf *b, const show_result *r, double y, int *rc)
{
    if (!r->training)
        return y;
    size_t S = r->n_parts, M = (size_t)r->microbatches;
    if (S > MAX_LANES || M > SHOW_MAX_BLOCKS / S)
        return too_many_blocks(b, r, y);
    double *fwd = malloc(S * sizeof *fwd), *bwd = malloc(S * sizeof *bwd);
    if (!fwd || !bwd) {
        free(fwd);
        free(bwd);
        *rc = PARTD_ENOMEM;
        return y;
    }
    for (size_t s = 0; s < S; s++) {
        const show_part *p = &r->parts[s];
        fwd[s] = p->forward_ms + p->comm_ms / 2;
        bwd[s] = p->backward_ms + p->recompute_ms + p->comm_ms / 2;
    }
    show_schedule sch;
    *rc = show_schedule_run(S, M, r->one_f_one_b, fwd, bwd, &sch);
    free(fwd);
    free(bwd);
    if (*rc != PARTD_OK)
        return y;
    y = draw_timeline(b, r, &sch, y);
    show_schedule_free(&sch);
    return y;
}
