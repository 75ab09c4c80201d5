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
    return json_pack("{s:I, s:s, s:o, s:o, s:I, s:I, s:f, s:I, s:f, s:o, s:o, s:o, s:o}",
                     "id", (json_int_t)id,
                     "device", p->n_devices ? partd_device_name(r, p->devices[0]) : "",
                     "logical_ids", logical,
                     "nodes", node_names(r, p->nodes, p->n_nodes),
                     "memory_bytes", (json_int_t)p->memory_bytes,
                     "param_bytes", (json_int_t)p->param_bytes,
                     "compute_ms", p->compute_ms,
                     "transfer_in_bytes", (json_int_t)p->transfer_in_bytes,
                     "time_ms", p->time_ms,
                     "inputs", node_names(r, p->inputs, p->n_inputs),
                     "outputs", node_names(r, p->outputs, p->n_outputs),
                     "parents", ids(p->parents, p->n_parents),
                     "children", ids(p->children, p->n_children));
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

static json_t *summary_json(const partd_plan *plan)
{
    const partd_summary *s = &plan->summary;
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
        if (!p || json_array_append_new(parts, p) != 0) {
            json_decref(parts);
            json_decref(doc);
            return NULL;
        }
    }
    json_object_set_new(doc, "partitions", parts);
    if (plan->balance)
        json_object_set_new(doc, "balance", ids(plan->balance, plan->n_parts));
    if (plan->mode == PARTD_MODE_PIPELINE)
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
