/*
 * result.c - the result document; see result.h.
 *
 * Written member by member through json_out (the same bytes jansson's
 * compact dump with 15 significant digits printed when the document was a
 * DOM), so rendering needs memory for one chunk, not ~10x the text. The
 * writer's errors are sticky: the functions below emit without checking
 * each step and the caller reads the first failure once.
 */
#include "partd/result.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"
#include "partd/training_types.h"
#include "sac/sac.h"

#define CHECK_EVERY_BYTES ((uint64_t)1 << 20)

typedef partd_json_out out;

static void key_int(out *o, const char *k, int64_t v)
{
    partd_json_out_key(o, k);
    partd_json_out_int(o, v);
}

static void key_real(out *o, const char *k, double v)
{
    partd_json_out_key(o, k);
    partd_json_out_real(o, v);
}

static void key_string(out *o, const char *k, const char *v)
{
    partd_json_out_key(o, k);
    partd_json_out_string(o, v);
}

static void node_names(out *o, const char *k, const partd_request *r, const uint32_t *nodes,
                       uint32_t n)
{
    partd_json_out_key(o, k);
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < n && o->rc == PARTD_OK; i++)
        partd_json_out_string(o, partd_node_name(r, nodes[i]));
    partd_json_out_end_array(o);
}

static void ids(out *o, const char *k, const uint32_t *v, uint32_t n)
{
    partd_json_out_key(o, k);
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < n; i++)
        partd_json_out_int(o, v[i]);
    partd_json_out_end_array(o);
}

/* The training members of partition p (training_types.h). */
static void training_stage(out *o, const partd_training_result *t, uint32_t p)
{
    const partd_training_stage *st = &t->stages[p];
    key_int(o, "rank", st->rank);
    partd_json_out_key(o, "units");
    partd_json_out_begin_array(o);
    for (uint32_t u = 0; u < st->n_units; u++)
        partd_json_out_string(o, t->unit_names[st->first_unit + u]);
    partd_json_out_end_array(o);
    partd_json_out_key(o, "checkpointed");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < st->n_checkpointed; i++)
        partd_json_out_string(o, t->unit_names[st->checkpointed[i]]);
    partd_json_out_end_array(o);
    key_real(o, "forward_ms", st->forward_ms);
    key_real(o, "backward_ms", st->backward_ms);
    key_real(o, "input_grad_ms", st->input_grad_ms);
    key_real(o, "weight_grad_ms", st->weight_grad_ms);
    key_real(o, "recompute_ms", st->recompute_ms);
    key_real(o, "send_ms", st->send_ms);
    key_int(o, "param_memory_bytes", st->param_memory_bytes);
    key_int(o, "input_memory_bytes", st->input_memory_bytes);
    key_int(o, "activation_memory_bytes", st->activation_memory_bytes);
}

static void partition(out *o, const partd_request *r, const partd_plan *plan, uint32_t id,
                      int full)
{
    const partd_part *p = &plan->parts[id];
    partd_json_out_begin_object(o);
    key_int(o, "id", id);
    key_string(o, "device", p->n_devices ? partd_device_name(r, p->devices[0]) : "");
    partd_json_out_key(o, "logical_ids");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < p->n_devices; i++)
        partd_json_out_int(o, r->devices[p->devices[i]].logical_id);
    partd_json_out_end_array(o);
    if (full)
        node_names(o, "nodes", r, p->nodes, p->n_nodes);
    key_int(o, "memory_bytes", p->memory_bytes);
    key_int(o, "device_memory_bytes",
            p->n_devices ? r->devices[p->devices[0]].memory_bytes : 0);
    key_int(o, "param_bytes", p->param_bytes);
    key_real(o, "compute_ms", p->compute_ms);
    key_int(o, "transfer_in_bytes", p->transfer_in_bytes);
    key_real(o, "time_ms", p->time_ms);
    if (full) {
        node_names(o, "inputs", r, p->inputs, p->n_inputs);
        node_names(o, "outputs", r, p->outputs, p->n_outputs);
    }
    ids(o, "parents", p->parents, p->n_parents);
    ids(o, "children", p->children, p->n_children);
    if (plan->training)
        training_stage(o, plan->training, id);
    else if (p->first_module != PARTD_NONE)
        key_string(o, "first_module", partd_str(&r->strings, p->first_module));
    partd_json_out_end_object(o);
}

static void boundaries(out *o, const partd_request *r, const partd_plan *plan, int full)
{
    partd_json_out_key(o, "boundaries");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < plan->n_boundaries && o->rc == PARTD_OK; i++) {
        const partd_boundary *b = &plan->boundaries[i];
        partd_json_out_begin_object(o);
        key_string(o, "after", partd_node_name(r, b->after));
        if (full)
            node_names(o, "tensors", r, b->tensors, b->n_tensors);
        key_int(o, "bytes", b->bytes);
        partd_json_out_end_object(o);
    }
    partd_json_out_end_array(o);
}

static void tied_params(out *o, const partd_request *r, const partd_plan *plan)
{
    partd_json_out_key(o, "tied_params");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < plan->n_tied && o->rc == PARTD_OK; i++) {
        const partd_tied *t = &plan->tied[i];
        partd_json_out_begin_object(o);
        key_string(o, "param", partd_str(&r->strings, r->graph.param_name[t->param]));
        ids(o, "partitions", t->parts, t->n_parts);
        partd_json_out_end_object(o);
    }
    partd_json_out_end_array(o);
}

/* ranks[]: each rank's device, stages, peak memory and busy time. */
static void training_ranks(out *o, const partd_request *r, const partd_training_result *t)
{
    partd_json_out_key(o, "ranks");
    partd_json_out_begin_array(o);
    for (uint32_t k = 0; k < t->n_ranks && o->rc == PARTD_OK; k++) {
        const partd_training_rank *rk = &t->ranks[k];
        partd_json_out_begin_object(o);
        key_int(o, "rank", k);
        key_string(o, "device", partd_device_name(r, rk->device));
        partd_json_out_key(o, "stages");
        partd_json_out_begin_array(o);
        for (uint32_t s = 0; s < t->n_stages; s++)
            if (t->stages[s].rank == k)
                partd_json_out_int(o, s);
        partd_json_out_end_array(o);
        key_int(o, "memory_bytes", rk->memory_bytes);
        key_int(o, "device_memory_bytes", r->devices[rk->device].memory_bytes);
        key_real(o, "busy_ms", rk->busy_ms);
        partd_json_out_end_object(o);
    }
    partd_json_out_end_array(o);
}

/* schedule: the name, v and every rank's actions as PyTorch writes them. */
static void training_schedule(out *o, const partd_training_result *t)
{
    static const char kinds[] = "FBIW";
    partd_json_out_key(o, "schedule");
    partd_json_out_begin_object(o);
    key_string(o, "name", partd_training_schedule_name(t->schedule));
    key_int(o, "virtual_stages", t->virtual_stages);
    partd_json_out_key(o, "actions");
    partd_json_out_begin_array(o);
    for (uint32_t k = 0; k < t->n_ranks && o->rc == PARTD_OK; k++) {
        partd_json_out_begin_array(o);
        for (uint32_t i = t->action_off[k]; i < t->action_off[k + 1]; i++) {
            char name[32];
            snprintf(name, sizeof name, "%u%c%u", t->action_stage[i],
                     kinds[t->action_kind[i] & 3], (unsigned)t->action_mb[i]);
            partd_json_out_string(o, name);
        }
        partd_json_out_end_array(o);
    }
    partd_json_out_end_array(o);
    partd_json_out_end_object(o);
}

static void summary(out *o, const partd_request *r, const partd_plan *plan)
{
    const partd_summary *s = &plan->summary;
    const partd_training_result *t = plan->training;
    partd_json_out_begin_object(o);
    key_int(o, "partitions", plan->n_parts);
    /* training: bottleneck_ms is the step's, per microbatch, below */
    if (!t)
        key_real(o, "bottleneck_ms", s->bottleneck_ms);
    key_real(o, "total_ms", s->total_ms);
    key_int(o, "transfer_bytes", s->transfer_bytes);
    key_int(o, "peak_memory_bytes", s->peak_memory_bytes);
    partd_json_out_key(o, "optimal");
    partd_json_out_bool(o, s->optimal);
    if (s->has_latency)
        key_real(o, "latency_ms", s->latency_ms);
    if (plan->mode == PARTD_MODE_PIPELINE) {
        /* what the stages' memory was counted for, so that the result alone
         * says what a runtime must run (partd export) */
        key_string(o, "schedule", partd_schedule_name(r->options.pipeline.schedule));
        key_int(o, "microbatches", r->options.pipeline.microbatches);
    }
    if (t) {
        key_real(o, "step_ms", t->step_ms);
        key_real(o, "bottleneck_ms", t->bottleneck_ms);
        key_real(o, "bubble_fraction", t->bubble_fraction);
        key_int(o, "stages", t->n_ranks);
        key_int(o, "virtual_stages", t->virtual_stages);
        key_int(o, "microbatches", t->microbatches);
        key_string(o, "schedule", partd_training_schedule_name(t->schedule));
        key_string(o, "checkpoint", partd_checkpoint_name(t->checkpoint));
        key_int(o, "unit_depth", t->unit_depth);
        key_real(o, "gap", t->gap);
        key_real(o, "lower_bound_ms", t->lower_bound_ms);
    }
    partd_json_out_end_object(o);
}

/* warnings: absent when there is none (contract v3). */
static void warnings(out *o, const partd_plan *plan)
{
    if (!plan->n_warnings)
        return;
    partd_json_out_key(o, "warnings");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < plan->n_warnings; i++) {
        partd_json_out_begin_object(o);
        key_string(o, "code", plan->warnings[i].code);
        key_string(o, "message", plan->warnings[i].message);
        partd_json_out_end_object(o);
    }
    partd_json_out_end_array(o);
}

/* The SAC section is small (one entry per module): built as a DOM by
 * sac_result.c and dumped compactly (the same bytes as written member by
 * member) before the first byte of the document goes out, so that a
 * failure there never leaves half a document behind. NULL on ENOMEM. */
static char *sac_text(const partd_request *r, const partd_plan *plan, size_t *len)
{
    json_t *doc = partd_sac_result_to_json(r, plan->sac);
    if (!doc)
        return NULL;
    char *text = json_dumps(doc, JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(15));
    json_decref(doc);
    if (text)
        *len = strlen(text);
    return text;
}

static void document(out *o, const partd_request *r, const partd_plan *plan,
                     const partd_cancel *cancel, const char *sac, size_t sac_len,
                     char **summary_copy)
{
    int full = r->options.result_detail != PARTD_RESULT_DETAIL_SUMMARY;
    partd_json_out_begin_object(o);
    key_string(o, "mode", partd_mode_name(plan->mode));
    partd_json_out_key(o, "partitions");
    partd_json_out_begin_array(o);
    for (uint32_t i = 0; i < plan->n_parts && o->rc == PARTD_OK; i++) {
        int rc = partd_cancel_check(cancel);
        if (rc != PARTD_OK)
            partd_json_out_fail(o, rc);
        partition(o, r, plan, i, full);
    }
    partd_json_out_end_array(o);
    if (plan->balance)
        ids(o, "balance", plan->balance, plan->n_parts);
    if (plan->mode == PARTD_MODE_PIPELINE || plan->mode == PARTD_MODE_TRAINING)
        boundaries(o, r, plan, full);
    tied_params(o, r, plan);
    if (plan->training) {
        training_ranks(o, r, plan->training);
        training_schedule(o, plan->training);
    }
    partd_json_out_key(o, "summary");
    if (summary_copy)
        partd_json_out_capture_start(o);
    summary(o, r, plan);
    if (summary_copy)
        *summary_copy = partd_json_out_capture_end(o, NULL);
    if (sac) {
        partd_json_out_key(o, "sac");
        partd_json_out_verbatim(o, sac, sac_len);
    }
    warnings(o, plan);
    partd_json_out_end_object(o);
    partd_json_out_raw(o, "\n", 1);
}

/* ---- bounds ------------------------------------------------------------- */

typedef struct bounded {
    partd_json_sink sink;
    void *ctx;
    const partd_cancel *cancel;
    uint64_t max;              /* 0 = no limit */
    uint64_t written, next_check;
} bounded;

/* Between the writer and the caller's sink: refuses the chunk that would
 * pass the limit, and checks the job's cancel flag and deadline each time
 * another megabyte has gone out. */
static int bounded_write(const char *data, size_t n, void *ctx)
{
    bounded *b = ctx;
    if (b->max && b->written + n > b->max)
        return PARTD_ETOOBIG;
    if (b->written >= b->next_check) {
        b->next_check = b->written + CHECK_EVERY_BYTES;
        int rc = partd_cancel_check(b->cancel);
        if (rc != PARTD_OK)
            return rc;
    }
    b->written += n;
    return b->sink(data, n, b->ctx);
}

int partd_result_write(const partd_request *req, const partd_plan *plan,
                       const partd_cancel *cancel, size_t max_bytes,
                       partd_json_sink sink, void *ctx, char **summary_copy)
{
    if (summary_copy)
        *summary_copy = NULL;
    bounded b = {sink, ctx, cancel, max_bytes, 0, CHECK_EVERY_BYTES};
    /* Every allocation but the summary's copy is made before the first
     * byte goes out. */
    size_t sac_len = 0;
    char *sac = plan->sac ? sac_text(req, plan, &sac_len) : NULL;
    partd_json_out *o = malloc(sizeof *o);
    if (!o || (plan->sac && !sac)) {
        free(o);
        free(sac);
        return PARTD_ENOMEM;
    }
    partd_json_out_init(o, bounded_write, &b);
    int rc = partd_cancel_check(cancel);
    if (rc != PARTD_OK)
        partd_json_out_fail(o, rc);
    document(o, req, plan, cancel, sac, sac_len, summary_copy);
    rc = partd_json_out_flush(o);
    if (rc == PARTD_OK)
        rc = partd_cancel_check(cancel);
    partd_json_out_release(o);
    free(o);
    free(sac);
    if (rc != PARTD_OK && summary_copy) {
        free(*summary_copy);
        *summary_copy = NULL;
    }
    return rc;
}

/* ---- in memory ---------------------------------------------------------- */

typedef struct growing {
    char *buf;
    size_t len, cap, max;      /* max: 0 = no limit */
} growing;

/* Doubles, but never past the limit (+1 for the NUL): the bounds refuse
 * a chunk that would pass it before it gets here. */
static int growing_write(const char *data, size_t n, void *ctx)
{
    growing *g = ctx;
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap : 65536;
        while (cap < g->len + n + 1)
            cap *= 2;
        if (g->max && cap > g->max + 1)
            cap = g->max + 1;
        char *p = realloc(g->buf, cap);
        if (!p)
            return PARTD_ENOMEM;
        g->buf = p;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, data, n);
    g->len += n;
    return PARTD_OK;
}

char *partd_result_render(const partd_request *req, const partd_plan *plan,
                          const partd_cancel *cancel, size_t max_bytes, size_t *len,
                          char **summary_copy, int *rc)
{
    growing g = {NULL, 0, 0, max_bytes};
    *rc = partd_result_write(req, plan, cancel, max_bytes, growing_write, &g, summary_copy);
    if (*rc != PARTD_OK) {
        free(g.buf);
        return NULL;
    }
    g.buf[g.len] = '\0'; /* the document has at least "{}\n" */
    if (len)
        *len = g.len;
    return g.buf;
}

char *partd_result_to_json(const partd_request *req, const partd_plan *plan, size_t *len)
{
    int rc;
    return partd_result_render(req, plan, NULL, 0, len, NULL, &rc);
}
