/*
 * result.c - the result document; see result.h.
 *
 * Built with jansson (objects in insertion order, JSON_PRESERVE_ORDER) and
 * dumped compactly with 15 significant digits for times, which prints the
 * same text for the same doubles everywhere.
 */
#include "result.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "enums.h"
#include "problem.h"
#include "sac.h"
#include "training_types.h"

#define DUMP_FLAGS (JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(15))

static json_t *node_names(const partd_request *r, const uint32_t *nodes, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(partd_node_name(r, nodes[i]))) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *ids(const uint32_t *v, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *partition_json(const partd_request *r, const partd_part *p, uint32_t id)
{
    json_t *logical = json_array();
    for (uint32_t i = 0; logical && i < p->n_devices; i++)
        json_array_append_new(logical, json_integer(r->devices[p->devices[i]].logical_id));
    int64_t device_memory = p->n_devices ? r->devices[p->devices[0]].memory_bytes : 0;
    return json_pack("{s:I, s:s, s:o, s:o, s:I, s:I, s:I, s:f, s:I, s:f, s:o, s:o, s:o, s:o}",
                     "id", (json_int_t)id,
                     "device", p->n_devices ? partd_device_name(r, p->devices[0]) : "",
                     "logical_ids", logical,
                     "nodes", node_names(r, p->nodes, p->n_nodes),
                     "memory_bytes", (json_int_t)p->memory_bytes,
                     "device_memory_bytes", (json_int_t)device_memory,
                     "param_bytes", (json_int_t)p->param_bytes,
                     "compute_ms", p->compute_ms,
                     "transfer_in_bytes", (json_int_t)p->transfer_in_bytes,
                     "time_ms", p->time_ms,
                     "inputs", node_names(r, p->inputs, p->n_inputs),
                     "outputs", node_names(r, p->outputs, p->n_outputs),
                     "parents", ids(p->parents, p->n_parents),
                     "children", ids(p->children, p->n_children));
}

/* The training members of partition p (training.h). */
static int add_training_stage(const partd_training_result *t, uint32_t p, json_t *part)
{
    const partd_training_stage *st = &t->stages[p];
    json_t *units = json_array(), *ck = json_array();
    for (uint32_t u = 0; units && u < st->n_units; u++)
        json_array_append_new(units, json_string(t->unit_names[st->first_unit + u]));
    for (uint32_t i = 0; ck && i < st->n_checkpointed; i++)
        json_array_append_new(ck, json_string(t->unit_names[st->checkpointed[i]]));
    json_t *m = json_pack("{s:o, s:o, s:I, s:f, s:f, s:f, s:f, s:I, s:I, s:I}", "units", units,
                          "checkpointed", ck, "in_flight", (json_int_t)st->in_flight,
                          "forward_ms", st->forward_ms, "backward_ms", st->backward_ms,
                          "recompute_ms", st->recompute_ms, "comm_ms", st->comm_ms,
                          "param_memory_bytes", (json_int_t)st->param_memory_bytes,
                          "input_memory_bytes", (json_int_t)st->input_memory_bytes,
                          "activation_memory_bytes", (json_int_t)st->activation_memory_bytes);
    if (!m)
        return -1;
    int rc = json_object_update(part, m);
    json_decref(m);
    return rc;
}

static json_t *boundaries_json(const partd_request *r, const partd_plan *plan)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < plan->n_boundaries; i++) {
        const partd_boundary *b = &plan->boundaries[i];
        json_array_append_new(a, json_pack("{s:s, s:o, s:I}", "after",
                                           partd_node_name(r, b->after), "tensors",
                                           node_names(r, b->tensors, b->n_tensors),
                                           "bytes", (json_int_t)b->bytes));
    }
    return a;
}

static json_t *tied_json(const partd_request *r, const partd_plan *plan)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < plan->n_tied; i++) {
        const partd_tied *t = &plan->tied[i];
        json_array_append_new(a, json_pack("{s:s, s:o}", "param",
                                           partd_str(&r->strings, r->graph.param_name[t->param]),
                                           "partitions", ids(t->parts, t->n_parts)));
    }
    return a;
}

static json_t *training_summary(const partd_plan *plan)
{
    const partd_training_result *t = plan->training;
    return json_pack("{s:f, s:f, s:f, s:I, s:I, s:s, s:s, s:I}", "step_ms", t->step_ms,
                     "bottleneck_ms", t->bottleneck_ms, "bubble_fraction", t->bubble_fraction,
                     "stages", (json_int_t)t->n_stages, "microbatches",
                     (json_int_t)t->microbatches, "schedule",
                     partd_schedule_name(t->schedule), "checkpoint",
                     partd_checkpoint_name(t->checkpoint), "unit_depth",
                     (json_int_t)t->unit_depth);
}

static json_t *summary_json(const partd_plan *plan)
{
    const partd_summary *s = &plan->summary;
    if (plan->training) {
        json_t *sum = json_pack("{s:I, s:f, s:I, s:I, s:b}", "partitions",
                                (json_int_t)plan->n_parts, "total_ms", s->total_ms,
                                "transfer_bytes", (json_int_t)s->transfer_bytes,
                                "peak_memory_bytes", (json_int_t)s->peak_memory_bytes,
                                "optimal", s->optimal);
        json_t *t = training_summary(plan);
        if (!sum || !t || json_object_update(sum, t) != 0) {
            json_decref(sum);
            sum = NULL;
        }
        json_decref(t);
        return sum;
    }
    return json_pack("{s:I, s:f, s:f, s:I, s:I, s:b}", "partitions", (json_int_t)plan->n_parts,
                     "bottleneck_ms", s->bottleneck_ms, "total_ms", s->total_ms,
                     "transfer_bytes", (json_int_t)s->transfer_bytes,
                     "peak_memory_bytes", (json_int_t)s->peak_memory_bytes,
                     "optimal", s->optimal);
}

static json_t *result_json(const partd_request *r, const partd_plan *plan)
{
    json_t *doc = json_object();
    json_t *parts = json_array();
    if (!doc || !parts) {
        json_decref(doc);
        json_decref(parts);
        return NULL;
    }
    json_object_set_new(doc, "mode", json_string(partd_mode_name(plan->mode)));
    for (uint32_t i = 0; i < plan->n_parts; i++) {
        json_t *p = partition_json(r, &plan->parts[i], i);
        if (p && plan->training && add_training_stage(plan->training, i, p) != 0) {
            json_decref(p);
            p = NULL;
        }
        if (!p || json_array_append_new(parts, p) != 0) {
            json_decref(parts);
            json_decref(doc);
            return NULL;
        }
    }
    json_object_set_new(doc, "partitions", parts);
    if (plan->balance)
        json_object_set_new(doc, "balance", ids(plan->balance, plan->n_parts));
    if (plan->mode == PARTD_MODE_PIPELINE || plan->mode == PARTD_MODE_TRAINING)
        json_object_set_new(doc, "boundaries", boundaries_json(r, plan));
    json_object_set_new(doc, "tied_params", tied_json(r, plan));
    json_object_set_new(doc, "summary", summary_json(plan));
    if (plan->sac) {
        json_t *sac = partd_sac_result_to_json(r, plan->sac);
        if (!sac) {
            json_decref(doc);
            return NULL;
        }
        json_object_set_new(doc, "sac", sac);
    }
    return doc;
}

char *partd_result_to_json(const partd_request *req, const partd_plan *plan, size_t *len)
{
    json_t *doc = result_json(req, plan);
    if (!doc)
        return NULL;
    return partd_json_dump_line(doc, DUMP_FLAGS, len);
}
