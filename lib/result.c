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
#include "partd.h"
#include "problem.h"
#include "sac.h"
#include "training_types.h"

#define DUMP_FLAGS (JSON_PRESERVE_ORDER | JSON_COMPACT | JSON_REAL_PRECISION(15))


/* Every constructor, append and set below is checked: an allocation that
 * fails anywhere makes the whole document NULL (ENOMEM to the caller), never
 * a document with a member missing. json_*_new steal their value even when
 * they fail, so a failed step leaks nothing. */

/* o[key] = v; -1 when v is NULL or the set fails. */
static int set(json_t *o, const char *key, json_t *v)
{
    return v && json_object_set_new(o, key, v) == 0 ? 0 : -1;
}

static int append(json_t *a, json_t *v)
{
    return v && json_array_append_new(a, v) == 0 ? 0 : -1;
}

/* The finished object, or NULL (and o released) when a step failed. */
static json_t *done(json_t *o, int rc)
{
    if (rc == 0)
        return o;
    json_decref(o);
    return NULL;
}

static json_t *node_names(const partd_request *r, const uint32_t *nodes, uint32_t n)
{
    json_t *a = json_array();
    int rc = a ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = append(a, json_string(partd_node_name(r, nodes[i])));
    return done(a, rc);
}

static json_t *ids(const uint32_t *v, uint32_t n)
{
    json_t *a = json_array();
    int rc = a ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < n; i++)
        rc = append(a, json_integer(v[i]));
    return done(a, rc);
}

static json_t *partition_json(const partd_request *r, const partd_part *p, uint32_t id)
{
    json_t *o = json_object(), *logical = json_array();
    int rc = o && logical ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < p->n_devices; i++)
        rc = append(logical, json_integer(r->devices[p->devices[i]].logical_id));
    if (!o) {
        json_decref(logical);
        return NULL;
    }
    rc |= set(o, "id", json_integer(id));
    rc |= set(o, "device",
              json_string(p->n_devices ? partd_device_name(r, p->devices[0]) : ""));
    rc |= set(o, "logical_ids", rc == 0 ? logical : (json_decref(logical), NULL));
    rc |= set(o, "nodes", node_names(r, p->nodes, p->n_nodes));
    rc |= set(o, "memory_bytes", json_integer(p->memory_bytes));
    rc |= set(o, "device_memory_bytes",
              json_integer(p->n_devices ? r->devices[p->devices[0]].memory_bytes : 0));
    rc |= set(o, "param_bytes", json_integer(p->param_bytes));
    rc |= set(o, "compute_ms", json_real(p->compute_ms));
    rc |= set(o, "transfer_in_bytes", json_integer(p->transfer_in_bytes));
    rc |= set(o, "time_ms", json_real(p->time_ms));
    rc |= set(o, "inputs", node_names(r, p->inputs, p->n_inputs));
    rc |= set(o, "outputs", node_names(r, p->outputs, p->n_outputs));
    rc |= set(o, "parents", ids(p->parents, p->n_parents));
    rc |= set(o, "children", ids(p->children, p->n_children));
    return done(o, rc);
}

/* The training members of partition p (training_types.h). */
static int add_training_stage(const partd_training_result *t, uint32_t p, json_t *part)
{
    const partd_training_stage *st = &t->stages[p];
    json_t *units = json_array(), *ck = json_array();
    int rc = units && ck ? 0 : -1;
    for (uint32_t u = 0; rc == 0 && u < st->n_units; u++)
        rc = append(units, json_string(t->unit_names[st->first_unit + u]));
    for (uint32_t i = 0; rc == 0 && i < st->n_checkpointed; i++)
        rc = append(ck, json_string(t->unit_names[st->checkpointed[i]]));
    if (rc) {
        json_decref(units);
        json_decref(ck);
        return -1;
    }
    rc = set(part, "units", units);
    rc |= set(part, "checkpointed", ck);
    rc |= set(part, "in_flight", json_integer(st->in_flight));
    rc |= set(part, "forward_ms", json_real(st->forward_ms));
    rc |= set(part, "backward_ms", json_real(st->backward_ms));
    rc |= set(part, "recompute_ms", json_real(st->recompute_ms));
    rc |= set(part, "comm_ms", json_real(st->comm_ms));
    rc |= set(part, "param_memory_bytes", json_integer(st->param_memory_bytes));
    rc |= set(part, "input_memory_bytes", json_integer(st->input_memory_bytes));
    rc |= set(part, "activation_memory_bytes", json_integer(st->activation_memory_bytes));
    return rc;
}

/* The training step's members of the summary. */
static int add_training_summary(const partd_training_result *t, json_t *o)
{
    int rc = set(o, "step_ms", json_real(t->step_ms));
    rc |= set(o, "bottleneck_ms", json_real(t->bottleneck_ms));
    rc |= set(o, "bubble_fraction", json_real(t->bubble_fraction));
    rc |= set(o, "stages", json_integer(t->n_stages));
    rc |= set(o, "microbatches", json_integer(t->microbatches));
    rc |= set(o, "schedule", json_string(partd_schedule_name(t->schedule)));
    rc |= set(o, "checkpoint", json_string(partd_checkpoint_name(t->checkpoint)));
    rc |= set(o, "unit_depth", json_integer(t->unit_depth));
    return rc;
}

static json_t *boundary_json(const partd_request *r, const partd_boundary *b)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = set(o, "after", json_string(partd_node_name(r, b->after)));
    rc |= set(o, "tensors", node_names(r, b->tensors, b->n_tensors));
    rc |= set(o, "bytes", json_integer(b->bytes));
    return done(o, rc);
}

static json_t *boundaries_json(const partd_request *r, const partd_plan *plan)
{
    json_t *a = json_array();
    int rc = a ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < plan->n_boundaries; i++)
        rc = append(a, boundary_json(r, &plan->boundaries[i]));
    return done(a, rc);
}

static json_t *tied_json(const partd_request *r, const partd_plan *plan)
{
    json_t *a = json_array();
    int rc = a ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < plan->n_tied; i++) {
        const partd_tied *t = &plan->tied[i];
        json_t *o = json_object();
        if (!o) {
            rc = -1;
            break;
        }
        int orc = set(o, "param",
                      json_string(partd_str(&r->strings, r->graph.param_name[t->param])));
        orc |= set(o, "partitions", ids(t->parts, t->n_parts));
        rc = append(a, done(o, orc));
    }
    return done(a, rc);
}

static json_t *summary_json(const partd_plan *plan)
{
    const partd_summary *s = &plan->summary;
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = set(o, "partitions", json_integer(plan->n_parts));
    /* training: bottleneck_ms is the step's, per microbatch, below */
    if (!plan->training)
        rc |= set(o, "bottleneck_ms", json_real(s->bottleneck_ms));
    rc |= set(o, "total_ms", json_real(s->total_ms));
    rc |= set(o, "transfer_bytes", json_integer(s->transfer_bytes));
    rc |= set(o, "peak_memory_bytes", json_integer(s->peak_memory_bytes));
    rc |= set(o, "optimal", json_boolean(s->optimal));
    if (rc == 0 && plan->training)
        rc = add_training_summary(plan->training, o);
    return done(o, rc);
}

static json_t *result_json(const partd_request *r, const partd_plan *plan)
{
    json_t *doc = json_object();
    json_t *parts = json_array();
    int rc = doc && parts ? 0 : -1;
    for (uint32_t i = 0; rc == 0 && i < plan->n_parts; i++) {
        json_t *p = partition_json(r, &plan->parts[i], i);
        if (p && plan->training && add_training_stage(plan->training, i, p) != 0) {
            json_decref(p);
            p = NULL;
        }
        rc = append(parts, p);
    }
    if (!doc) {
        json_decref(parts);
        return NULL;
    }
    rc |= set(doc, "mode", json_string(partd_mode_name(plan->mode)));
    rc |= set(doc, "partitions", rc == 0 ? parts : (json_decref(parts), NULL));
    if (rc == 0 && plan->balance)
        rc = set(doc, "balance", ids(plan->balance, plan->n_parts));
    if (rc == 0 && (plan->mode == PARTD_MODE_PIPELINE || plan->mode == PARTD_MODE_TRAINING))
        rc = set(doc, "boundaries", boundaries_json(r, plan));
    if (rc == 0)
        rc = set(doc, "tied_params", tied_json(r, plan));
    if (rc == 0)
        rc = set(doc, "summary", summary_json(plan));
    if (rc == 0 && plan->sac)
        rc = set(doc, "sac", partd_sac_result_to_json(r, plan->sac));
    return done(doc, rc);
}

char *partd_result_to_json(const partd_request *req, const partd_plan *plan, size_t *len)
{
    json_t *doc = result_json(req, plan);
    if (!doc)
        return NULL;
    return partd_json_dump_line(doc, DUMP_FLAGS, len);
}

/* ---- bounded rendering ---------------------------------------------------- */

#define CHECK_EVERY_BYTES ((size_t)1 << 20)

typedef struct sink {
    char *buf;
    size_t len, cap, max;      /* max: 0 = no limit */
    size_t next_check;
    const partd_cancel *cancel;
    int rc;
} sink;

/* json_dump_callback's writer: appends, refusing past max and stopping
 * (returning -1 ends the dump) once the job is cancelled or late. */
static int sink_write(const char *data, size_t n, void *ctx)
{
    sink *k = ctx;
    if (k->max && k->len + n + 1 > k->max) {
        k->rc = PARTD_ETOOBIG;
        return -1;
    }
    if (k->len >= k->next_check) {
        k->next_check = k->len + CHECK_EVERY_BYTES;
        if ((k->rc = partd_cancel_check(k->cancel)) != PARTD_OK)
            return -1;
    }
    if (k->len + n + 2 > k->cap) {
        size_t cap = k->cap ? k->cap : 65536;
        while (cap < k->len + n + 2)
            cap *= 2;
        if (k->max && cap > k->max + 1)
            cap = k->max + 1;
        char *p = realloc(k->buf, cap);
        if (!p) {
            k->rc = PARTD_ENOMEM;
            return -1;
        }
        k->buf = p;
        k->cap = cap;
    }
    memcpy(k->buf + k->len, data, n);
    k->len += n;
    return 0;
}

char *partd_result_render(const partd_request *req, const partd_plan *plan,
                          const partd_cancel *cancel, size_t max_bytes, size_t *len, int *rc)
{
    if ((*rc = partd_cancel_check(cancel)) != PARTD_OK)
        return NULL;
    json_t *doc = result_json(req, plan);
    if (!doc) {
        *rc = PARTD_ENOMEM;
        return NULL;
    }
    sink k = {NULL, 0, 0, max_bytes, 0, cancel, PARTD_OK};
    if ((*rc = partd_cancel_check(cancel)) == PARTD_OK &&
        json_dump_callback(doc, sink_write, &k, DUMP_FLAGS) != 0)
        *rc = k.rc != PARTD_OK ? k.rc : PARTD_ENOMEM;
    json_decref(doc);
    /* The newline partd_result_to_json ends with (room was kept for it). */
    if (*rc == PARTD_OK && k.max && k.len + 1 > k.max)
        *rc = PARTD_ETOOBIG;
    if (*rc == PARTD_OK && !k.buf && sink_write("", 0, &k) != 0)
        *rc = k.rc;
    if (*rc != PARTD_OK) {
        free(k.buf);
        return NULL;
    }
    k.buf[k.len++] = '\n';
    k.buf[k.len] = '\0';
    if (len)
        *len = k.len;
    return k.buf;
}
