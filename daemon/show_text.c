/*
 * show_text.c - `partd show --format text`: the facts of the picture as a
 * table for the terminal; see show.h.
 *
 * One row per partition (stage, device, nodes, memory, memory as % of its
 * device, time; for training also the per-microbatch times, microbatches in
 * flight and the checkpointed units), then the SAC plan and its frontier.
 * Names pass through show_plain(), so no name can send control sequences to
 * the terminal. Column widths follow the content, so the output is the same
 * for the same result.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"
#include "show.h"
#include "show_fmt.h"
#include "show_result.h"

#define DEVICE_CHARS 32
#define UNIT_NAMES 8

static void pad(partd_buf *b, size_t used, size_t width)
{
    for (; used < width; used++)
        partd_buf_puts(b, " ");
}

/* A cell: right-aligned figures, left-aligned names, two spaces between. */
static void cell(partd_buf *b, const char *s, size_t width, int right)
{
    size_t n = show_chars(s);
    if (right)
        pad(b, n, width);
    partd_buf_puts(b, s);
    if (!right)
        pad(b, n, width);
    partd_buf_puts(b, "  ");
}

/* Cells end with two spaces; a line does not. */
static void end_line(partd_buf *b)
{
    while (b->len && b->data[b->len - 1] == ' ')
        b->data[--b->len] = '\0';
    partd_buf_puts(b, "\n");
}

static void ms_cell(partd_buf *b, double ms, size_t width)
{
    char num[SHOW_NUM_CAP];
    show_fixed(num, ms, 3);
    cell(b, num, width, 1);
}

static size_t device_width(const show_result *r)
{
    size_t w = strlen("device");
    for (size_t i = 0; i < r->n_parts; i++) {
        size_t n = show_chars(r->parts[i].device);
        w = n > w ? n : w;
    }
    return w > DEVICE_CHARS + 1 ? DEVICE_CHARS + 1 : w;
}

static void header(partd_buf *b, const show_result *r, size_t dev_w)
{
    cell(b, strcmp(r->mode, "size_based") == 0 ? "part" : "stage", 5, 1);
    cell(b, "device", dev_w, 0);
    cell(b, "nodes", 6, 1);
    cell(b, "memory", 10, 1);
    cell(b, "% device", 8, 1);
    cell(b, r->training ? "time/mb ms" : "time ms", 12, 1);
    if (r->training) {
        cell(b, "fwd ms", 10, 1);
        cell(b, "bwd ms", 10, 1);
        cell(b, "recomp ms", 10, 1);
        cell(b, "comm ms", 10, 1);
        cell(b, "in flight", 9, 1);
    }
    if (r->training)
        partd_buf_puts(b, "checkpointed");
    end_line(b);
}

static void checkpointed(partd_buf *b, const show_part *p)
{
    size_t n = json_array_size(p->checkpointed);
    char text[64];
    snprintf(text, sizeof text, "%zu/%zu", n, p->n_units);
    partd_buf_puts(b, text);
    for (size_t i = 0; i < n && i < UNIT_NAMES; i++) {
        partd_buf_puts(b, i ? ", " : ": ");
        show_plain(b, json_string_value(json_array_get(p->checkpointed, i)), 40);
    }
    if (n > UNIT_NAMES) {
        snprintf(text, sizeof text, ", +%zu more", n - UNIT_NAMES);
        partd_buf_puts(b, text);
    }
}

static void part_row(partd_buf *b, const show_result *r, size_t i, size_t dev_w)
{
    const show_part *p = &r->parts[i];
    char num[SHOW_NUM_CAP];
    snprintf(num, sizeof num, "%zu", i);
    cell(b, num, 5, 1);
    partd_buf name;
    partd_buf_init(&name);
    show_plain(&name, p->device, DEVICE_CHARS);
    cell(b, name.data ? name.data : "", dev_w, 0);
    if (name.failed)
        b->failed = 1;
    partd_buf_free(&name);
    if (p->nodes >= 0)
        snprintf(num, sizeof num, "%ld", p->nodes);
    else
        snprintf(num, sizeof num, "-");
    cell(b, num, 6, 1);
    show_bytes(num, p->memory_bytes);
    cell(b, num, 10, 1);
    if (p->device_memory_bytes > 0) {
        char pct[SHOW_NUM_CAP];
        show_fixed(pct, 100 * p->memory_bytes / p->device_memory_bytes, 1);
        snprintf(num, sizeof num, "%.32s%%", pct);
    } else {
        snprintf(num, sizeof num, "-");
    }
    cell(b, num, 8, 1);
    ms_cell(b, p->time_ms, 12);
    if (r->training) {
        ms_cell(b, p->forward_ms, 10);
        ms_cell(b, p->backward_ms, 10);
        ms_cell(b, p->recompute_ms, 10);
        ms_cell(b, p->comm_ms, 10);
        snprintf(num, sizeof num, "%ld", p->in_flight);
        cell(b, num, 9, 1);
        checkpointed(b, p);
    }
    end_line(b);
}

static void summary(partd_buf *b, const show_result *r)
{
    char text[512], a[SHOW_NUM_CAP], c[SHOW_NUM_CAP], d[SHOW_NUM_CAP], e[SHOW_NUM_CAP];
    partd_buf_puts(b, "partd plan: ");
    show_plain(b, r->mode, 40);
    snprintf(text, sizeof text, ", %zu %s%s\n", r->n_parts,
             strcmp(r->mode, "size_based") == 0 ? "partition" : "stage", r->n_parts == 1 ? "" : "s");
    partd_buf_puts(b, text);
    show_fixed(e, r->bottleneck_ms, 3);
    show_bytes(c, r->peak_bytes);
    show_bytes(d, r->transfer_bytes);
    if (r->training) {
        char bubble[SHOW_NUM_CAP];
        show_fixed(a, r->step_ms, 3);
        show_fixed(bubble, 100 * r->bubble_fraction, 1);
        snprintf(text, sizeof text,
                 "step %s ms (bubble %s%%), %s, %ld microbatches, bottleneck %s ms per "
                 "microbatch, peak memory %s\n",
                 a, bubble, r->one_f_one_b ? "1f1b" : "gpipe", r->microbatches, e, c);
    } else {
        show_fixed(a, r->total_ms, 3);
        snprintf(text, sizeof text,
                 "bottleneck %s ms, total %s ms, peak memory %s, transferred %s\n", e, a, c, d);
    }
    partd_buf_cat(b, text, "\n", NULL);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void sac_decisions(partd_buf *b, const show_sac *sac)
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
        size_t c = show_chars(key);
        width = c > width ? c : width;
    }
    qsort(keys, n, sizeof *keys, compare_names);
    width = width > 64 ? 65 : width;
    partd_buf_puts(b, "  ");
    cell(b, "module", width, 0);
    partd_buf_puts(b, "discarded\n");
    for (i = 0; i < n; i++) {
        char pct[SHOW_NUM_CAP], num[SHOW_NUM_CAP + 2];
        json_t *f = json_object_get(sac->ac_decisions, keys[i]);
        partd_buf name;
        partd_buf_init(&name);
        show_plain(&name, keys[i], 64);
        partd_buf_puts(b, "  ");
        cell(b, name.data ? name.data : "", width, 0);
        partd_buf_free(&name);
        show_fixed(pct, 100 * (json_is_number(f) ? json_number_value(f) : 0), 1);
        snprintf(num, sizeof num, "%s%%", pct);
        partd_buf_cat(b, num, "\n", NULL);
    }
    free(keys);
}

static void sac_frontier(partd_buf *b, const show_sac *sac)
{
    partd_buf_puts(b, "\n  frontier (as computed):\n  ");
    cell(b, "budget", 10, 1);
    cell(b, "peak", 10, 1);
    partd_buf_puts(b, "recomputation ms\n");
    for (size_t i = 0; i < sac->n_frontier; i++) {
        const show_frontier_point *p = &sac->frontier[i];
        char num[SHOW_NUM_CAP];
        show_bytes(num, p->budget_bytes);
        partd_buf_puts(b, "  ");
        cell(b, num, 10, 1);
        if (!p->solved) {
            cell(b, "-", 10, 1);
            partd_buf_puts(b, "no plan\n");
            continue;
        }
        show_bytes(num, p->peak_bytes);
        cell(b, num, 10, 1);
        show_fixed(num, p->recompute_ms, 3);
        partd_buf_cat(b, num, "\n", NULL);
    }
}

static void sac_part(partd_buf *b, const show_sac *sac)
{
    char text[512], peak[SHOW_NUM_CAP], budget[SHOW_NUM_CAP], base[SHOW_NUM_CAP],
        rc[SHOW_NUM_CAP];
    partd_buf_puts(b, "\nactivation checkpointing (SAC): ");
    show_plain(b, sac->status, 40);
    show_bytes(budget, sac->budget_bytes);
    show_bytes(base, sac->baseline_bytes);
    show_fixed(rc, sac->recompute_ms, 3);
    if (sac->has_peak)
        show_bytes(peak, sac->peak_bytes);
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

static void render(partd_buf *b, const show_result *r)
{
    summary(b, r);
    size_t dev_w = device_width(r);
    header(b, r, dev_w);
    for (size_t i = 0; i < r->n_parts; i++)
        part_row(b, r, i, dev_w);
    if (r->sac.present)
        sac_part(b, &r->sac);
}

int partd_show_text(const char *result_json, size_t len, partd_buf *out, char *err,
                    size_t errcap)
{
    show_result r;
    int rc = show_result_parse(result_json, len, &r, err, errcap);
    if (rc != PARTD_OK)
        return rc;
    render(out, &r);
    rc = partd_buf_status(out);
    if (rc != PARTD_OK && errcap)
        snprintf(err, errcap, "%s while writing the table", partd_strerror(rc));
    show_result_free(&r);
    return rc;
}
