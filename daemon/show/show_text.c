/*
 * show_text.c - `partd show --format text`: the facts of the picture as a
 * table for the terminal; see show.h.
 *
 * One row per partition (stage, device, nodes, memory, memory as % of its
 * device, time; for training also the per-microbatch times, microbatches in
 * flight and the checkpointed units), then the SAC plan and its frontier.
 * Names pass through partd__show_fmt_plain(), so no name can send control
 * sequences to the terminal. Column widths follow the content, so the output is the same
 * for the same result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "show.h"
#include "show_fmt.h"
#include "show_internal.h"
#include "show_result.h"
#include "show_table.h"

#define UNIT_NAMES 8

static size_t device_width(const partd__show_result *r)
{
    size_t w = strlen("device");
    for (size_t i = 0; i < r->n_parts; i++)
        w = partd__show_table_widen(w, r->parts[i].device);
    return w;
}

static void header(partd_buf *b, const partd__show_result *r, size_t dev_w, size_t units_w)
{
    int stages = strcmp(partd__show_result_part_word(r), "stage") == 0;
    partd__show_table_cell(b, stages ? "stage" : "part", 5, 1);
    partd__show_table_cell(b, "device", dev_w, 0);
    partd__show_table_cell(b, "nodes", 6, 1);
    partd__show_table_cell(b, "memory", 10, 1);
    partd__show_table_cell(b, "% device", 8, 1);
    partd__show_table_cell(b, r->training ? "time/mb ms" : "time ms", 12, 1);
    if (r->n_ranks) {
        partd__show_text_stage_header(b, units_w);
    } else if (r->training) {
        partd__show_table_cell(b, "fwd ms", 10, 1);
        partd__show_table_cell(b, "bwd ms", 10, 1);
        partd__show_table_cell(b, "recomp ms", 10, 1);
        partd__show_table_cell(b, "comm ms", 10, 1);
        partd__show_table_cell(b, "in flight", 9, 1);
    }
    if (r->training)
        partd_buf_puts(b, "checkpointed");
    partd__show_table_end_line(b);
}

static void checkpointed(partd_buf *b, const partd__show_part *p)
{
    size_t n = json_array_size(p->checkpointed);
    char text[64];
    snprintf(text, sizeof text, "%zu/%zu", n, p->n_units);
    partd_buf_puts(b, text);
    for (size_t i = 0; i < n && i < UNIT_NAMES; i++) {
        partd_buf_puts(b, i ? ", " : ": ");
        partd__show_fmt_plain(b, json_string_value(json_array_get(p->checkpointed, i)), 40);
    }
    if (n > UNIT_NAMES) {
        snprintf(text, sizeof text, ", +%zu more", n - UNIT_NAMES);
        partd_buf_puts(b, text);
    }
}

static void part_row(partd_buf *b, const partd__show_result *r, size_t i, size_t dev_w,
                     size_t units_w)
{
    const partd__show_part *p = &r->parts[i];
    char num[PARTD_SHOW_NUM_CAP];
    snprintf(num, sizeof num, "%zu", i);
    partd__show_table_cell(b, num, 5, 1);
    partd__show_table_name(b, p->device, dev_w);
    if (p->nodes >= 0)
        snprintf(num, sizeof num, "%ld", p->nodes);
    else
        snprintf(num, sizeof num, "-");
    partd__show_table_cell(b, num, 6, 1);
    partd__show_fmt_bytes(num, p->memory_bytes);
    partd__show_table_cell(b, num, 10, 1);
    if (p->device_memory_bytes > 0) {
        char pct[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_fixed(pct, 100 * p->memory_bytes / p->device_memory_bytes, 1);
        snprintf(num, sizeof num, "%.32s%%", pct);
    } else {
        snprintf(num, sizeof num, "-");
    }
    partd__show_table_cell(b, num, 8, 1);
    partd__show_table_ms(b, p->time_ms, 12);
    if (r->n_ranks) {
        partd__show_text_stage_cells(b, r, i, units_w);
        checkpointed(b, p);
    } else if (r->training) {
        partd__show_table_ms(b, p->forward_ms, 10);
        partd__show_table_ms(b, p->backward_ms, 10);
        partd__show_table_ms(b, p->recompute_ms, 10);
        partd__show_table_ms(b, p->comm_ms, 10);
        snprintf(num, sizeof num, "%ld", p->in_flight);
        partd__show_table_cell(b, num, 9, 1);
        checkpointed(b, p);
    }
    partd__show_table_end_line(b);
}

static void summary(partd_buf *b, const partd__show_result *r)
{
    char text[512], a[PARTD_SHOW_NUM_CAP], c[PARTD_SHOW_NUM_CAP], d[PARTD_SHOW_NUM_CAP],
        e[PARTD_SHOW_NUM_CAP];
    partd_buf_puts(b, "partd plan: ");
    partd__show_fmt_plain(b, r->mode, 40);
    snprintf(text, sizeof text, ", %zu %s%s", r->n_parts, partd__show_result_part_word(r),
             r->n_parts == 1 ? "" : "s");
    partd_buf_puts(b, text);
    if (r->n_ranks) {
        snprintf(text, sizeof text, " on %zu rank%s", r->n_ranks, r->n_ranks == 1 ? "" : "s");
        partd_buf_puts(b, text);
    }
    partd_buf_puts(b, "\n");
    partd__show_fmt_fixed(e, r->bottleneck_ms, 3);
    partd__show_fmt_bytes(c, r->peak_bytes);
    partd__show_fmt_bytes(d, r->transfer_bytes);
    if (r->training) {
        char bubble[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_fixed(a, r->step_ms, 3);
        partd__show_fmt_fixed(bubble, 100 * r->bubble_fraction, 1);
        if (r->n_ranks)
            snprintf(text, sizeof text,
                     "step %s ms (bubble %s%%), %.40s, %ld stage%s per rank, %ld microbatches, "
                     "busiest rank %s ms, peak memory %s\n",
                     a, bubble, r->schedule, r->virtual_stages, r->virtual_stages == 1 ? "" : "s",
                     r->microbatches, e, c);
        else
            snprintf(text, sizeof text,
                     "step %s ms (bubble %s%%), %.40s, %ld microbatches, bottleneck %s ms per "
                     "microbatch, peak memory %s\n",
                     a, bubble, r->schedule, r->microbatches, e, c);
    } else {
        partd__show_fmt_fixed(a, r->total_ms, 3);
        snprintf(text, sizeof text,
                 "bottleneck %s ms, total %s ms, peak memory %s, transferred %s\n", e, a, c, d);
        if (r->latency_ms >= 0) {
            partd_buf_puts(b, text);
            partd__show_fmt_fixed(a, r->latency_ms, 3);
            snprintf(text, sizeof text,
                     "FX's cost of the partitions (get_latency_of_partitioned_graph): %s ms\n", a);
        }
    }
    partd_buf_puts(b, text);
    if (r->n_ranks)
        partd__show_text_retimed(b, r);
    partd_buf_puts(b, "\n");
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sac_decisions(partd_buf *b, const partd__show_sac *sac)
{
    /* Sorted by name: the table is for looking modules up. */
    size_t n = json_object_size(sac->ac_decisions);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    if (!keys) {
        b->failed = 1;
        return;
    }
    size_t i = 0, width = strlen("module");
    const char *key;
    json_t *v;
    json_object_foreach(sac->ac_decisions, key, v)
    {
        keys[i++] = key;
        size_t c = partd__show_fmt_chars(key);
        width = c > width ? c : width;
    }
    qsort(keys, n, sizeof *keys, compare_names);
    width = width > 64 ? 65 : width;
    partd_buf_puts(b, "  ");
    partd__show_table_cell(b, "module", width, 0);
    partd_buf_puts(b, "discarded\n");
    for (i = 0; i < n; i++) {
        char pct[PARTD_SHOW_NUM_CAP], num[PARTD_SHOW_NUM_CAP + 2];
        json_t *f = json_object_get(sac->ac_decisions, keys[i]);
        partd_buf name;
        partd_buf_init(&name);
        partd__show_fmt_plain(&name, keys[i], 64);
        partd_buf_puts(b, "  ");
        partd__show_table_cell(b, name.data ? name.data : "", width, 0);
        partd_buf_free(&name);
        partd__show_fmt_fixed(pct, 100 * (json_is_number(f) ? json_number_value(f) : 0), 1);
        snprintf(num, sizeof num, "%s%%", pct);
        partd_buf_cat(b, num, "\n", NULL);
    }
    free(keys);
}

static void sac_frontier(partd_buf *b, const partd__show_sac *sac)
{
    partd_buf_puts(b, "\n  frontier (as computed):\n  ");
    partd__show_table_cell(b, "budget", 10, 1);
    partd__show_table_cell(b, "peak", 10, 1);
    partd_buf_puts(b, "recomputation ms\n");
    for (size_t i = 0; i < sac->n_frontier; i++) {
        const partd__show_frontier_point *p = &sac->frontier[i];
        char num[PARTD_SHOW_NUM_CAP];
        partd__show_fmt_bytes(num, p->budget_bytes);
        partd_buf_puts(b, "  ");
        partd__show_table_cell(b, num, 10, 1);
        if (!p->solved) {
            partd__show_table_cell(b, "-", 10, 1);
            partd_buf_puts(b, "no plan\n");
            continue;
        }
        partd__show_fmt_bytes(num, p->peak_bytes);
        partd__show_table_cell(b, num, 10, 1);
        partd__show_fmt_fixed(num, p->recompute_ms, 3);
        partd_buf_cat(b, num, "\n", NULL);
    }
}

static void sac_part(partd_buf *b, const partd__show_sac *sac)
{
    char text[512], peak[PARTD_SHOW_NUM_CAP], budget[PARTD_SHOW_NUM_CAP], base[PARTD_SHOW_NUM_CAP],
        rc[PARTD_SHOW_NUM_CAP];
    partd_buf_puts(b, "\nactivation checkpointing (SAC): ");
    partd__show_fmt_plain(b, sac->status, 40);
    partd__show_fmt_bytes(budget, sac->budget_bytes);
    partd__show_fmt_bytes(base, sac->baseline_bytes);
    partd__show_fmt_fixed(rc, sac->recompute_ms, 3);
    if (sac->has_peak)
        partd__show_fmt_bytes(peak, sac->peak_bytes);
    else
        snprintf(peak, sizeof peak, "-");
    snprintf(text, sizeof text,
             "\n  peak memory %s, budget %s, without checkpointing %s; recomputation %s ms\n",
             peak, budget, base, rc);
    partd_buf_puts(b, text);
    sac_decisions(b, sac);
    if (sac->n_frontier)
        sac_frontier(b, sac);
}

static void render(partd_buf *b, const partd__show_result *r)
{
    summary(b, r);
    if (r->n_ranks)
        partd__show_text_ranks(b, r);
    size_t dev_w = device_width(r), units_w = r->n_ranks ? partd__show_text_units_width(r) : 0;
    header(b, r, dev_w, units_w);
    for (size_t i = 0; i < r->n_parts; i++)
        part_row(b, r, i, dev_w, units_w);
    if (r->n_ranks)
        partd__show_text_actions(b, r);
    if (r->sac.present)
        sac_part(b, &r->sac);
}

int partd_show_text(const char *result_json, size_t len, partd_buf *out, char *err,
                    size_t errcap)
{
    partd__show_result r;
    int rc = partd__show_result_parse(result_json, len, &r, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    render(out, &r);
    rc = partd_buf_status(out);
    if (rc != PARTD_OK && errcap)
        snprintf(err, errcap, "%s while writing the table", partd_strerror(rc));
    partd__show_result_free(&r);
    return rc;
}
