/*
 * show_timeline.c - the timeline of one training step (v3 `training`
 * results): one row per rank, one block per action of the result's
 * schedule.actions, placed where the step model puts it; see
 * show_internal.h.
 *
 * The times are the result's own figures re-timed by the training
 * planner's step simulator (partd/timeline.h, run when the result is read),
 * so the last block ends at the result's step_ms. A block is a
 * <rect class="F|B|I|W" data-rank data-stage data-microbatch>; its colour
 * says its kind and its shade which of its rank's stages it belongs to
 * (darkest the rank's first), so interleaved and V schedules read at a
 * glance. Recomputation runs first in the B or I of a checkpointed
 * microbatch and is drawn as a dark band at its start; idle time is the
 * grey track behind the blocks. Labels ("3F1", or the microbatch alone) go
 * only where they fit; tooltips only while the blocks are few enough to
 * keep the document small.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "partd/partd.h"
#include "show_draw.h"
#include "show_fmt.h"
#include "show_internal.h"

#define X0 (PARTD_SHOW_MARGIN + PARTD_SHOW_LABEL_W)
#define X1 (PARTD_SHOW_WIDTH - 3 * PARTD_SHOW_MARGIN)
/* More ranks than this would leave rows under two pixels. */
#define MAX_LANES 256
/* Up to this many actions, each block carries a tooltip. */
#define TOOLTIP_BLOCKS 2048
/* Up to this many actions on the busiest rank, blocks are drawn with a
 * hairline between them; more are drawn edge to edge. */
#define SEPARATED_BLOCKS 160
/* Shades: a rank holds at most this many stages distinguishably. */
#define SHADES 8

static const char KINDS[] = "FBIW";
static const char *const KIND_WORDS[] = {"forward", "backward", "input-gradient backward",
                                         "weight-gradient backward"};

/* The kinds' colours; shade k of v mixes them towards black (the rank's
 * first stages) or white (its last). */
static const unsigned BASE[4] = {0x4e79a7, 0x59a14f, 0x2a9d8f, 0xe8a33d};

static double shade_of(size_t k, size_t v)
{
    return v > 1 ? -0.2 + 0.55 * (double)k / (double)(v - 1) : 0.0;
}

static unsigned mix(unsigned rgb, double t)
{
    unsigned out = 0;
    for (int sh = 16; sh >= 0; sh -= 8) {
        double c = (double)((rgb >> sh) & 0xff);
        c = t < 0 ? c * (1 + t) : c + (255 - c) * t;
        out |= (unsigned)lround(c) << sh;
    }
    return out;
}

/* The timeline's own style: the shades of the v stages a rank holds. */
static void style(partd_buf *b, size_t v)
{
    char rule[96];
    partd_buf_puts(b,
                   "<style>.tl .recomp{fill:#000;fill-opacity:.45}.tl .lane{fill:#f3f4f6}"
                   ".tl .idle{fill:#e15759}"
                   ".tl .sep rect{stroke:#fff;stroke-width:.5}.tl .dark{fill:#222;font-size:9px}");
    for (size_t k = 0; k < v; k++)
        for (int kind = 0; kind < 4; kind++) {
            snprintf(rule, sizeof rule, ".tl .k%zu .%c,.tl .k%zu.%c{fill:#%06x}", k, KINDS[kind], k,
                     KINDS[kind], mix(BASE[kind], shade_of(k, v)));
            partd_buf_puts(b, rule);
        }
    partd_buf_puts(b, "</style>\n");
}

typedef struct lanes {
    double top, lane_h, block_h, scale;
    double sub_h, sub_gap; /* a rank's row holds one lane per stage it runs */
    double strip_h;        /* and under them the strip of its idle time */
    int tooltips;
    size_t v;      /* shades: the most stages a rank holds, at most SHADES */
    size_t *local; /* per stage: its place among its rank's stages */
} lanes;

/* Block edges are rounded to the tenth of a pixel the document carries, so
 * that a block ending when the next begins touches it and never overlaps. */
static double pixel(double x)
{
    return round(x * 10) / 10;
}

static void tooltip(partd_buf *b, size_t rank, const partd_timeline_action *a, double start,
                    double end, double recompute)
{
    char t0[PARTD_SHOW_NUM_CAP], t1[PARTD_SHOW_NUM_CAP], rc[PARTD_SHOW_NUM_CAP], text[320];
    partd__show_fmt_ms(t0, start);
    partd__show_fmt_ms(t1, end);
    int n = snprintf(text, sizeof text,
                     "<title>%u%c%u: rank %zu, stage %u, microbatch %u, %s, %s to %s", a->stage,
                     KINDS[a->kind], a->microbatch, rank, a->stage, a->microbatch,
                     KIND_WORDS[a->kind], t0, t1);
    if (recompute > 0 && n > 0 && (size_t)n < sizeof text) {
        partd__show_fmt_ms(rc, recompute);
        snprintf(text + n, sizeof text - (size_t)n, " (%s of it recomputation)", rc);
    }
    partd_buf_cat(b, text, "</title>", NULL);
}

/* One action's block, its recomputation band and its label. */
static void block(partd_buf *b, const partd__show_result *r, const lanes *ln, size_t rank,
                  uint32_t i, double row_y)
{
    const partd_timeline_action *a = &r->actions[i];
    double y = row_y + ln->sub_h * (double)(ln->local[a->stage] % ln->v),
           h = ln->sub_h - ln->sub_gap;
    double start = r->timeline.start[i], end = r->timeline.end[i];
    double x = pixel(X0 + start * ln->scale), w = pixel(X0 + end * ln->scale) - x;
    char attrs[160];
    snprintf(attrs, sizeof attrs,
             "<rect class=\"%c\" data-rank=\"%zu\" data-stage=\"%u\" data-microbatch=\"%u\"",
             KINDS[a->kind], rank, a->stage, a->microbatch);
    partd_buf_puts(b, attrs);
    partd__show_draw_attr(b, "x", x);
    partd__show_draw_attr(b, "y", y);
    partd__show_draw_attr(b, "width", w > 0 ? w : 0);
    partd__show_draw_attr(b, "height", h);
    int backward = a->kind == PARTD_TIMELINE_B || a->kind == PARTD_TIMELINE_I;
    double recompute = backward && a->microbatch < r->plan.checkpointed
                           ? r->tl_stages[a->stage].recompute_ms
                           : 0.0;
    if (ln->tooltips) {
        partd_buf_puts(b, ">");
        tooltip(b, rank, a, start, end, recompute);
        partd_buf_puts(b, "</rect>\n");
    } else {
        partd_buf_puts(b, "/>\n");
    }
    /* recomputation thinner than a third of a pixel would not show */
    if (recompute * ln->scale >= 0.3)
        partd__show_draw_rect(b, "recomp", x, y, fmin(recompute * ln->scale, w), h);
    if (h < 9)
        return;
    char name[40], mb[16];
    snprintf(name, sizeof name, "%u%c%u", a->stage, KINDS[a->kind], a->microbatch);
    snprintf(mb, sizeof mb, "%u", a->microbatch);
    const char *label = w >= 5.6 * (double)partd__show_fmt_chars(name) + 4 ? name
                        : w >= 5.6 * (double)partd__show_fmt_chars(mb) + 3 ? mb
                                                                           : NULL;
    int light = shade_of(ln->local[a->stage] % ln->v, ln->v) > 0.15 || a->kind == PARTD_TIMELINE_W;
    if (label)
        partd__show_draw_text(b, x + w / 2, y + h / 2 + 3, light ? "dark" : "in", "middle", label);
}

/* The rank's idle time, the gaps before, between and after its actions,
 * as a strip under its lanes. */
static void idle_strip(partd_buf *b, const partd__show_result *r, const lanes *ln, size_t rank,
                       double y)
{
    double t = 0;
    for (uint32_t i = r->action_off[rank]; i <= r->action_off[rank + 1]; i++) {
        int last = i == r->action_off[rank + 1];
        double next = last ? r->timeline.step_ms : r->timeline.start[i];
        /* gaps thinner than a third of a pixel would not show */
        if ((next - t) * ln->scale >= 0.3) {
            double x = pixel(X0 + t * ln->scale);
            partd__show_draw_rect(b, "idle", x, y, pixel(X0 + next * ln->scale) - x, ln->strip_h);
        }
        if (!last)
            t = r->timeline.end[i];
    }
}

/* The labels of a rank's row: the rank and its device, and, where the
 * lanes are tall enough, each lane's stage at its left. */
static void row_labels(partd_buf *b, const partd__show_result *r, const lanes *ln, size_t rank,
                       double y)
{
    if (ln->sub_h < 9) {
        partd__show_draw_row_label(b, y + ln->block_h / 2 + 3, rank, rank, r->ranks[rank].device,
                                   -1);
        return;
    }
    partd__show_draw_row_label(b, y + ln->sub_h / 2 + 3, rank, rank, r->ranks[rank].device, -1);
    for (size_t j = 0; j < r->n_parts; j++)
        if (r->tl_stages[j].rank == rank && ln->local[j] < ln->v) {
            char num[32];
            snprintf(num, sizeof num, "%zu", j);
            partd__show_draw_text(b, X0 - 5, y + ln->sub_h * ((double)ln->local[j] + 0.5) + 3,
                                  "small cap", "end", num);
        }
}

/* A rank's row: its labels, a lane per stage it runs, the lane's blocks
 * grouped by that stage (the group gives the shade), its idle strip. */
static void rank_row(partd_buf *b, const partd__show_result *r, const lanes *ln, size_t rank,
                     int label)
{
    double y = ln->top + ln->lane_h * (double)rank + (ln->lane_h - ln->block_h - ln->strip_h) / 2;
    if (label)
        row_labels(b, r, ln, rank, y);
    for (size_t k = 0; k < ln->v; k++) {
        partd__show_draw_rect(b, "lane", X0, y + ln->sub_h * (double)k,
                              r->timeline.step_ms * ln->scale, ln->sub_h - ln->sub_gap);
        char open[48];
        snprintf(open, sizeof open, "<g class=\"k%zu\">\n", k);
        partd_buf_puts(b, open);
        for (uint32_t i = r->action_off[rank]; i < r->action_off[rank + 1]; i++)
            if (ln->local[r->actions[i].stage] % ln->v == k)
                block(b, r, ln, rank, i, y);
        partd_buf_puts(b, "</g>\n");
    }
    idle_strip(b, r, ln, rank, y + ln->block_h + 1);
}

static void heading(partd_buf *b, const partd__show_result *r, double y)
{
    char text[400], sim[PARTD_SHOW_NUM_CAP], plan[PARTD_SHOW_NUM_CAP];
    snprintf(text, sizeof text,
             "One training step: %.40s, %zu rank%s x %ld stage%s each, %ld microbatches",
             r->schedule, r->n_ranks, r->n_ranks == 1 ? "" : "s", r->virtual_stages,
             r->virtual_stages == 1 ? "" : "s", r->microbatches);
    partd__show_draw_heading(b, y, text);
    partd__show_fmt_ms(sim, r->timeline.step_ms);
    partd__show_fmt_ms(plan, r->step_ms);
    /* the figures of the result give back its step (they always do for a
     * result partd wrote); say so, or say both */
    int same = fabs(r->timeline.step_ms - r->step_ms) <= 1e-9 * fmax(1.0, r->step_ms);
    if (same)
        snprintf(text, sizeof text,
                 "each rank runs its schedule.actions in order; an action starts once its rank is "
                 "free and its inputs are there (send_ms across a cut between ranks): %s, the "
                 "result's step_ms",
                 sim);
    else
        snprintf(
            text, sizeof text,
            "each rank runs its schedule.actions in order; an action starts once its rank is "
            "free and its inputs are there (send_ms across a cut between ranks): %s, where the "
            "result says step_ms %s",
            sim, plan);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 16, "cap small", "start", text);
}

static void legend(partd_buf *b, const lanes *ln, double y)
{
    static const partd__show_legend_item items[] = {{"k0 F", "F forward"},
                                                    {"k0 B", "B backward"},
                                                    {"k0 I", "I input gradient"},
                                                    {"k0 W", "W weight gradient"},
                                                    {"recomp", "recomputation (in B or I)"},
                                                    {"idle", "rank idle"}};
    double x = partd__show_draw_legend(b, X0, y, items, 6);
    partd__show_draw_line(b, "mark", x, y - 4, x + 16, y - 4);
    partd__show_draw_text(b, x + 20, y, "small", "start", "step_ms");
    if (ln->v < 2)
        return;
    char text[200];
    snprintf(text, sizeof text,
             "a rank's row has a lane for each of the %zu stages it runs (stage at the left), "
             "lighter for its later ones",
             ln->v);
    x = X0;
    for (size_t k = 0; k < ln->v; k++, x += 12) {
        char cls[32];
        snprintf(cls, sizeof cls, "k%zu F", k);
        partd__show_draw_rect(b, cls, x, y + 14 - 9, 10, 10);
    }
    partd__show_draw_text(b, x + 4, y + 14, "small", "start", text);
}

static double not_drawn(partd_buf *b, const partd__show_result *r, double y, const char *why)
{
    char text[256];
    snprintf(text, sizeof text, "One training step: %zu stages x %ld microbatches", r->n_parts,
             r->microbatches);
    partd__show_draw_heading(b, y + 14, text);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN, y + 30, "cap small", "start", why);
    return y + 48;
}

/* Which of its rank's stages each stage is (0 the rank's first), counted
 * in count (one per rank); the most a rank holds. */
static size_t local_places(const partd__show_result *r, size_t *local, size_t *count)
{
    size_t most = 1;
    for (size_t k = 0; k < r->n_ranks; k++)
        count[k] = 0;
    for (size_t j = 0; j < r->n_parts; j++) {
        local[j] = count[r->tl_stages[j].rank]++;
        most = local[j] + 1 > most ? local[j] + 1 : most;
    }
    return most;
}

static double draw(partd_buf *b, const partd__show_result *r, double y, size_t *local)
{
    size_t S = r->n_ranks, busiest = 0;
    for (size_t k = 0; k < S; k++)
        if (r->action_off[k + 1] - r->action_off[k] > busiest)
            busiest = r->action_off[k + 1] - r->action_off[k];
    lanes ln;
    ln.local = local;
    ln.v = local_places(r, local, local + r->n_parts);
    ln.v = ln.v > SHADES ? SHADES : ln.v;
    /* rows of several lanes grow up to 64 px while the ranks are few */
    ln.lane_h = fmin(ln.v > 1 ? 64 : 36, fmax(2, 520.0 / (double)S));
    ln.strip_h = fmax(1, fmin(3, round(ln.lane_h * 0.06)));
    ln.block_h = fmax(1.6, round(ln.lane_h * 0.9) - ln.strip_h - 1);
    ln.sub_h = ln.block_h / (double)ln.v;
    ln.sub_gap = ln.sub_h >= 4 && ln.v > 1 ? 1 : 0;
    ln.tooltips = r->timeline.n <= TOOLTIP_BLOCKS;
    ln.top = y + (ln.v > 1 ? 76 : 62);
    partd_buf_puts(b, "<g class=\"tl\">\n");
    style(b, ln.v);
    heading(b, r, y + 14);
    legend(b, &ln, y + 48);
    double axis_y = ln.top + ln.lane_h * (double)S + 4;
    double max = fmax(r->timeline.step_ms, r->step_ms);
    ln.scale = partd__show_draw_axis_x(b, X0, X1, axis_y, ln.top - 2, max, PARTD_SHOW_AXIS_MS,
                                       "time since the step began");
    int label_every = ln.lane_h >= 9 ? 1 : (int)ceil(9 / ln.lane_h);
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 34, ln.top - 6, "small cap", "end", "rank");
    partd__show_draw_text(b, PARTD_SHOW_MARGIN + 40, ln.top - 6, "small cap", "start", "device");
    if (ln.sub_h >= 9)
        partd__show_draw_text(b, X0 - 5, ln.top - 6, "small cap", "end", "stage");
    partd_buf_puts(b, busiest <= SEPARATED_BLOCKS ? "<g class=\"sep\">\n"
                                                  : "<g shape-rendering=\"crispEdges\">\n");
    for (size_t k = 0; k < S; k++)
        rank_row(b, r, &ln, k, k % (size_t)label_every == 0);
    partd_buf_puts(b, "</g>\n");
    if (r->step_ms > 0) {
        double x = X0 + r->step_ms * ln.scale;
        partd__show_draw_line(b, "mark", x, ln.top - 6, x, axis_y);
    }
    partd_buf_puts(b, "</g>\n");
    return axis_y + 40;
}

double partd__show_timeline_panel(partd_buf *b, const partd__show_result *r, double y, int *rc)
{
    if (!r->training)
        return y;
    if (!r->n_ranks)
        return not_drawn(b, r, y,
                         "not drawn: the result has no schedule.actions (a result of contract v2); "
                         "partd plan writes them since v3");
    if (r->n_ranks > MAX_LANES || r->timeline.n > PARTD_SHOW_MAX_BLOCKS) {
        char why[200];
        snprintf(why, sizeof why,
                 "not drawn action by action: more than %d ranks or %d actions; see the table "
                 "(partd show --format text)",
                 MAX_LANES, PARTD_SHOW_MAX_BLOCKS);
        return not_drawn(b, r, y, why);
    }
    size_t *local = malloc((r->n_parts + r->n_ranks) * sizeof *local);
    if (!local) {
        *rc = PARTD_ENOMEM;
        return y;
    }
    y = draw(b, r, y, local);
    free(local);
    return y;
}
