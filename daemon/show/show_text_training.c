/*
 * show_text_training.c - the table's parts of a v3 training result
 * (`partd show --format text`): the step re-timed, one row per rank (its
 * device, peak memory against the device's, busy time, stages), the stage
 * rows' v3 figures and units, and every rank's order of actions written
 * compactly; see show_internal.h.
 */
#include <stdio.h>
#include <string.h>

#include "partd/timeline.h"
#include "show_fmt.h"
#include "show_internal.h"
#include "show_table.h"

/* Characters of a stage's units cell, and of a line of actions. */
#define UNITS_CHARS 48
#define LINE_CHARS 100

static const char KINDS[] = "FBIW";

void partd__show_text_retimed(partd_buf *b, const partd__show_result *r)
{
    char sim[PARTD_SHOW_NUM_CAP], plan[PARTD_SHOW_NUM_CAP], text[256];
    partd__show_fmt_fixed(sim, r->timeline.step_ms, 3);
    partd__show_fmt_fixed(plan, r->step_ms, 3);
    int same = r->timeline.step_ms - r->step_ms <= 1e-9 * (r->step_ms > 1 ? r->step_ms : 1) &&
               r->step_ms - r->timeline.step_ms <= 1e-9 * (r->step_ms > 1 ? r->step_ms : 1);
    if (same)
        snprintf(text, sizeof text,
                 "every rank running its actions in order (the step model): %s ms, the result's "
                 "step_ms\n",
                 sim);
    else
        snprintf(text, sizeof text,
                 "every rank running its actions in order (the step model): %s ms, where the "
                 "result says step_ms %s ms\n",
                 sim, plan);
    partd_buf_puts(b, text);
}

static void pct_cell(partd_buf *b, double part, double whole, size_t width)
{
    char pct[PARTD_SHOW_NUM_CAP], num[PARTD_SHOW_NUM_CAP + 2];
    if (whole > 0) {
        partd__show_fmt_fixed(pct, 100 * part / whole, 1);
        snprintf(num, sizeof num, "%s%%", pct);
    } else {
        snprintf(num, sizeof num, "-");
    }
    partd__show_table_cell(b, num, width, 1);
}

static void bytes_cell(partd_buf *b, double bytes, size_t width)
{
    char num[PARTD_SHOW_NUM_CAP];
    partd__show_fmt_bytes(num, bytes);
    partd__show_table_cell(b, num, width, 1);
}

/* The stages rank k runs, "0 8 16 24". */
static void rank_stages(partd_buf *b, const partd__show_result *r, size_t k)
{
    char num[32];
    int first = 1;
    for (size_t j = 0; j < r->n_parts; j++)
        if (r->tl_stages[j].rank == k) {
            snprintf(num, sizeof num, first ? "%zu" : " %zu", j);
            partd_buf_puts(b, num);
            first = 0;
        }
}

void partd__show_text_ranks(partd_buf *b, const partd__show_result *r)
{
    size_t dev_w = strlen("device");
    for (size_t k = 0; k < r->n_ranks; k++)
        dev_w = partd__show_table_widen(dev_w, r->ranks[k].device);
    partd__show_table_cell(b, "rank", 5, 1);
    partd__show_table_cell(b, "device", dev_w, 0);
    partd__show_table_cell(b, "memory", 10, 1);
    partd__show_table_cell(b, "of device", 10, 1);
    partd__show_table_cell(b, "% device", 8, 1);
    partd__show_table_cell(b, "busy ms", 12, 1);
    partd__show_table_cell(b, "idle", 6, 1);
    partd_buf_puts(b, "stages\n");
    for (size_t k = 0; k < r->n_ranks; k++) {
        const partd__show_rank *rk = &r->ranks[k];
        char num[32];
        snprintf(num, sizeof num, "%zu", k);
        partd__show_table_cell(b, num, 5, 1);
        partd__show_table_name(b, rk->device, dev_w);
        bytes_cell(b, rk->memory_bytes, 10);
        bytes_cell(b, rk->device_memory_bytes, 10);
        pct_cell(b, rk->memory_bytes, rk->device_memory_bytes, 8);
        partd__show_table_ms(b, rk->busy_ms, 12);
        pct_cell(b, r->timeline.step_ms - rk->busy_ms, r->timeline.step_ms, 6);
        rank_stages(b, r, k);
        partd__show_table_end_line(b);
    }
    partd_buf_puts(b, "\n");
}

/* "3: layers.0..layers.2": how many units, the first and the last. */
static void units_text(partd_buf *b, const partd__show_part *p)
{
    char num[32];
    size_t n = p->n_units;
    snprintf(num, sizeof num, "%zu", n);
    partd_buf_puts(b, num);
    if (!n)
        return;
    partd_buf_puts(b, ": ");
    partd__show_fmt_plain(b, json_string_value(json_array_get(p->units, 0)), 20);
    if (n > 1) {
        partd_buf_puts(b, n > 2 ? ".." : ", ");
        partd__show_fmt_plain(b, json_string_value(json_array_get(p->units, n - 1)), 20);
    }
}

size_t partd__show_text_units_width(const partd__show_result *r)
{
    size_t w = strlen("units");
    for (size_t j = 0; j < r->n_parts; j++) {
        partd_buf t;
        partd_buf_init(&t);
        units_text(&t, &r->parts[j]);
        size_t n = t.data ? partd__show_fmt_chars(t.data) : 0;
        w = n > w ? n : w;
        partd_buf_free(&t);
    }
    return w > UNITS_CHARS ? UNITS_CHARS : w;
}

void partd__show_text_stage_header(partd_buf *b, size_t units_w)
{
    static const char *const cols[] = {"fwd ms",   "bwd ms",    "igrad ms",
                                       "wgrad ms", "recomp ms", "send ms"};
    partd__show_table_cell(b, "rank", 4, 1);
    for (size_t k = 0; k < sizeof cols / sizeof *cols; k++)
        partd__show_table_cell(b, cols[k], 10, 1);
    partd__show_table_cell(b, "units", units_w, 0);
}

void partd__show_text_stage_cells(partd_buf *b, const partd__show_result *r, size_t i,
                                  size_t units_w)
{
    const partd__show_part *p = &r->parts[i];
    char num[32];
    snprintf(num, sizeof num, "%ld", p->rank);
    partd__show_table_cell(b, num, 4, 1);
    const double ms[] = {p->forward_ms,     p->backward_ms,  p->input_grad_ms,
                         p->weight_grad_ms, p->recompute_ms, p->comm_ms};
    for (size_t k = 0; k < sizeof ms / sizeof *ms; k++)
        partd__show_table_ms(b, ms[k], 10);
    partd_buf t;
    partd_buf_init(&t);
    units_text(&t, p);
    partd__show_table_cell(b, t.data ? t.data : "", units_w, 0);
    if (t.failed)
        b->failed = 1;
    partd_buf_free(&t);
}

/* The run of actions starting at i: same stage and kind, microbatches
 * one apart in one direction. Its length. */
static uint32_t run_at(const partd_timeline_action *a, uint32_t i, uint32_t end)
{
    uint32_t k = i + 1;
    if (k < end && a[k].stage == a[i].stage && a[k].kind == a[i].kind &&
        (a[k].microbatch == a[i].microbatch + 1 || a[k].microbatch + 1 == a[i].microbatch)) {
        int up = a[k].microbatch > a[i].microbatch;
        while (k < end && a[k].stage == a[i].stage && a[k].kind == a[i].kind &&
               a[k].microbatch == (up ? a[k - 1].microbatch + 1 : a[k - 1].microbatch - 1))
            k++;
    }
    return k - i;
}

void partd__show_text_actions(partd_buf *b, const partd__show_result *r)
{
    partd_buf_puts(b, "\nactions, each rank's in its order (PyTorch's notation: stage, F forward, "
                      "B backward, I input\ngradient, W weight gradient, microbatch; 0F0-3 is 0F0 "
                      "0F1 0F2 0F3, 0B3-0 the same backwards):\n");
    for (size_t k = 0; k < r->n_ranks; k++) {
        char lead[48], item[64];
        int indent = snprintf(lead, sizeof lead, "  rank %zu:", k);
        partd_buf_puts(b, lead);
        size_t col = (size_t)indent;
        for (uint32_t i = r->action_off[k], n; i < r->action_off[k + 1]; i += n) {
            const partd_timeline_action *a = &r->actions[i];
            n = run_at(r->actions, i, r->action_off[k + 1]);
            if (n > 1)
                snprintf(item, sizeof item, " %u%c%u-%u", a->stage, KINDS[a->kind], a->microbatch,
                         a[n - 1].microbatch);
            else
                snprintf(item, sizeof item, " %u%c%u", a->stage, KINDS[a->kind], a->microbatch);
            if (col + strlen(item) > LINE_CHARS) {
                snprintf(lead, sizeof lead, "\n%*s", indent, "");
                partd_buf_puts(b, lead);
                col = (size_t)indent;
            }
            partd_buf_puts(b, item);
            col += strlen(item);
        }
        partd_buf_puts(b, "\n");
    }
}
