/*
 * decode_aot.c - options.aot (v3, mode aot_based): FX's
 * node_to_partition_mapping (`partition_of`: node name -> partition id) and
 * partition_to_logical_device_mapping (`device_of`: partition id -> device
 * name, or a list of them), resolved against the linked graph and the
 * devices; see decode_internal.h.
 *
 * Every reference is checked: a name that is no node, a node that is no
 * operation, an operation without a partition, a partition without a
 * device, a device that is no device; each at its JSON Pointer. Members are
 * visited in sorted key order, so a request's errors come out in the same
 * order whatever the order of its keys. A device_of entry for a partition
 * no node is in is checked and otherwise ignored, as FX ignores it.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "json_read.h"
#include "partd/partd.h"

/* The largest partition id: FX's ids are list indices; any int fits. */
#define AOT_MAX_PART_ID INT64_C(2147483647)

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The keys of obj, sorted (NULL on ENOMEM; *n set). */
static const char **sorted_keys(json_t *obj, size_t *n)
{
    *n = json_object_size(obj);
    const char **keys = malloc((*n ? *n : 1) * sizeof *keys);
    if (!keys)
        return NULL;
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) keys[k++] = key;
    qsort(keys, *n, sizeof *keys, cmp_str);
    return keys;
}

/* A partition id written as device_of's key: the decimal digits of an
 * integer 0..AOT_MAX_PART_ID, without sign or leading zero. -1 otherwise. */
static int64_t key_id(const char *key)
{
    size_t len = strlen(key);
    if (len == 0 || len > 10 || (len > 1 && key[0] == '0'))
        return -1;
    int64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (key[i] < '0' || key[i] > '9')
            return -1;
        x = x * 10 + (key[i] - '0');
    }
    return x <= AOT_MAX_PART_ID ? x : -1;
}

static uint32_t device_named(const partd_request *req, const char *s)
{
    uint32_t id = partd_strtab_find(&req->strings, s, strlen(s));
    if (id == PARTD_STR_NONE)
        return PARTD_NONE;
    for (uint32_t d = 0; d < req->n_devices; d++)
        if (req->devices[d].name == id)
            return d;
    return PARTD_NONE;
}

/* One device name at ptr: its index, or PARTD_NONE with the error added. */
static uint32_t read_device(partd_dec *d, json_t *v, const char *ptr)
{
    const char *s = partd_json_read_string(&d->r, v, ptr);
    if (!s)
        return PARTD_NONE;
    uint32_t dev = device_named(d->req, s);
    if (dev == PARTD_NONE)
        partd_problem_add(d->r.pb, ptr, "names no device (\"%.200s\" is not in devices)", s);
    return dev;
}

typedef struct aot_read {
    uint32_t *node_of;   /* string id -> node, PARTD_NONE */
    int64_t *id_of;      /* node -> partition id, -1 */
    int64_t *ids;        /* distinct partition ids */
    uint32_t n_ids;
} aot_read;

static int read_partition_of(partd_dec *d, json_t *po, aot_read *a)
{
    const partd_graph *g = &d->req->graph;
    size_t n;
    const char **keys = sorted_keys(po, &n);
    if (!keys)
        return -1;
    char ptr[PARTD_POINTER_CAP];
    for (size_t k = 0; k < n; k++) {
        partd_pointer_member(ptr, "/options/aot/partition_of", keys[k]);
        uint32_t id = partd_strtab_find(&d->req->strings, keys[k], strlen(keys[k]));
        uint32_t v = id == PARTD_STR_NONE || id >= d->req->strings.count ? PARTD_NONE
                                                                         : a->node_of[id];
        int64_t part;
        int ok = partd_json_read_int(&d->r, json_object_get(po, keys[k]), ptr, 0,
                                     AOT_MAX_PART_ID, &part) == 0;
        if (v == PARTD_NONE) {
            partd_problem_add(d->r.pb, ptr, "names no node of the graph");
            continue;
        }
        if (!partd_op_is_operation(g->op[v])) {
            partd_problem_add(d->r.pb, ptr,
                              "names a %s node; only operation nodes (call_module, "
                              "call_function, call_method) are given partitions",
                              partd_op_name((partd_op)g->op[v]));
            continue;
        }
        if (ok)
            a->id_of[v] = part;
    }
    free(keys);
    uint32_t missing = 0;
    for (uint32_t v = 0; v < g->n_nodes; v++) {
        if (!partd_op_is_operation(g->op[v]) || a->id_of[v] >= 0 ||
            json_object_get(po, partd_node_name(d->req, v)))
            continue;
        if (missing++ < 8)
            partd_problem_add(d->r.pb, "/options/aot/partition_of",
                              "has no partition for operation node \"%s\"; every operation "
                              "node needs one",
                              partd_node_name(d->req, v));
    }
    if (missing > 8)
        partd_problem_add(d->r.pb, "/options/aot/partition_of",
                          "has no partition for %u more operation nodes", missing - 8);
    for (uint32_t v = 0; v < g->n_nodes; v++)
        if (a->id_of[v] >= 0)
            a->ids[a->n_ids++] = a->id_of[v];
    qsort(a->ids, a->n_ids, sizeof *a->ids, cmp_i64);
    uint32_t u = 0;
    for (uint32_t k = 0; k < a->n_ids; k++)
        if (u == 0 || a->ids[u - 1] != a->ids[k])
            a->ids[u++] = a->ids[k];
    a->n_ids = u;
    return 0;
}

static uint32_t index_of(const aot_read *a, int64_t id)
{
    uint32_t lo = 0, hi = a->n_ids;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < a->n_ids && a->ids[lo] == id ? lo : PARTD_NONE;
}

/* device_of: every partition of partition_of gets its devices. */
static int read_device_of(partd_dec *d, json_t *dof, const aot_read *a, partd_aot_options *out)
{
    const partd_request *req = d->req;
    size_t n;
    const char **keys = sorted_keys(dof, &n);
    out->dev_off = calloc((size_t)a->n_ids + 1, sizeof *out->dev_off);
    /* each key holds at most n_devices distinct devices */
    out->dev_idx = malloc(((size_t)a->n_ids * req->n_devices + 1) * sizeof *out->dev_idx);
    uint32_t *first = malloc(((size_t)a->n_ids + 1) * sizeof *first);
    uint32_t *count = calloc((size_t)a->n_ids + 1, sizeof *count);
    uint32_t *seen = calloc((size_t)req->n_devices + 1, sizeof *seen);
    uint32_t *devs = malloc(((size_t)req->n_devices + 1) * sizeof *devs);
    int rc = -1;
    if (!keys || !out->dev_off || !out->dev_idx || !first || !count || !seen || !devs)
        goto out;
    rc = 0;
    char ptr[PARTD_POINTER_CAP], q[PARTD_POINTER_CAP];
    uint32_t used = 0, stamp = 0;
    for (uint32_t k = 0; k < a->n_ids; k++)
        first[k] = PARTD_NONE;
    for (size_t k = 0; k < n; k++) {
        partd_pointer_member(ptr, "/options/aot/device_of", keys[k]);
        int64_t id = key_id(keys[k]);
        if (id < 0) {
            partd_problem_add(d->r.pb, ptr,
                              "is not a partition id (an integer 0 to 2147483647 written "
                              "in decimal)");
            continue;
        }
        json_t *v = json_object_get(dof, keys[k]);
        uint32_t nd = 0;
        stamp++;
        if (json_is_array(v)) {
            if (json_array_size(v) == 0 || json_array_size(v) > req->n_devices) {
                partd_problem_add(d->r.pb, ptr, "must list 1 to %u devices, not %zu",
                                  req->n_devices, json_array_size(v));
                continue;
            }
            for (size_t i = 0; i < json_array_size(v); i++) {
                partd_pointer_index(q, ptr, i);
                uint32_t dev = read_device(d, json_array_get(v, i), q);
                if (dev == PARTD_NONE)
                    continue;
                if (seen[dev] == stamp) {
                    partd_problem_add(d->r.pb, q, "names device \"%s\" twice",
                                      partd_device_name(req, dev));
                    continue;
                }
                seen[dev] = stamp;
                devs[nd++] = dev;
            }
        } else if (json_is_string(v)) {
            uint32_t dev = read_device(d, v, ptr);
            if (dev != PARTD_NONE)
                devs[nd++] = dev;
        } else {
            partd_problem_add(d->r.pb, ptr, "must be a device name or a list of device names, "
                                            "not %s", partd_json_read_type_name(v));
            continue;
        }
        uint32_t p = index_of(a, id);
        if (p == PARTD_NONE || nd == 0)
            continue;
        first[p] = used;
        count[p] = nd;
        memcpy(out->dev_idx + used, devs, nd * sizeof *devs);
        used += nd;
    }
    /* lay the lists out in partition order */
    uint32_t *ordered = malloc(((size_t)used + 1) * sizeof *ordered);
    if (!ordered) {
        rc = -1;
        goto out;
    }
    uint32_t at = 0;
    for (uint32_t p = 0; p < a->n_ids; p++) {
        out->dev_off[p] = at;
        if (first[p] == PARTD_NONE) {
            /* an entry that is there was reported already */
            char idtext[24];
            snprintf(idtext, sizeof idtext, "%lld", (long long)a->ids[p]);
            if (!json_object_get(dof, idtext))
                partd_problem_add(d->r.pb, "/options/aot/device_of",
                                  "has no device for partition %s, which partition_of gives "
                                  "nodes",
                                  idtext);
            continue;
        }
        memcpy(ordered + at, out->dev_idx + first[p], count[p] * sizeof *ordered);
        at += count[p];
    }
    out->dev_off[a->n_ids] = at;
    free(out->dev_idx);
    out->dev_idx = ordered;
out:
    free(keys);
    free(first);
    free(count);
    free(seen);
    free(devs);
    return rc;
}

void partd__decode_aot_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"partition_of", "device_of", NULL};
    partd_request *req = d->req;
    const partd_graph *g = &req->graph;
    partd_aot_options *out = &req->options.aot;
    if (req->options.mode != PARTD_MODE_AOT_BASED)
        return;
    if (!o) {
        partd_problem_add(d->r.pb, "/options/aot",
                          "is required by mode aot_based: partition_of (node name -> "
                          "partition id) and device_of (partition id -> device name)");
        return;
    }
    if (partd_json_read_object(&d->r, o, "/options/aot", NULL) != 0)
        return;
    partd_json_read_reject_unknown(&d->r, o, "/options/aot", members, 0);
    char ptr[PARTD_POINTER_CAP];
    json_t *po = partd_json_read_required(&d->r, o, "/options/aot", "partition_of", ptr);
    if (po && partd_json_read_object(&d->r, po, ptr, "an object: node name -> partition id") != 0)
        po = NULL;
    json_t *dof = partd_json_read_required(&d->r, o, "/options/aot", "device_of", ptr);
    if (dof && partd_json_read_object(&d->r, dof, ptr,
                                      "an object: partition id -> device name") != 0)
        dof = NULL;
    if (!po || !g->n_nodes)
        return;
    aot_read a = {0};
    a.node_of = malloc(((size_t)req->strings.count + 1) * sizeof *a.node_of);
    a.id_of = malloc(g->n_nodes * sizeof *a.id_of);
    a.ids = malloc(g->n_nodes * sizeof *a.ids);
    int failed = !a.node_of || !a.id_of || !a.ids;
    if (!failed) {
        for (uint32_t s = 0; s < req->strings.count; s++)
            a.node_of[s] = PARTD_NONE;
        for (uint32_t v = 0; v < g->n_nodes; v++) {
            a.node_of[g->name[v]] = v;
            a.id_of[v] = -1;
        }
        failed = read_partition_of(d, po, &a) != 0;
    }
    if (!failed && dof)
        failed = read_device_of(d, dof, &a, out) != 0;
    if (!failed && dof) {
        out->part_of = malloc(g->n_nodes * sizeof *out->part_of);
        failed = !out->part_of;
        for (uint32_t v = 0; !failed && v < g->n_nodes; v++)
            out->part_of[v] = a.id_of[v] >= 0 ? index_of(&a, a.id_of[v]) : PARTD_NONE;
        if (!failed) {
            out->n_parts = a.n_ids;
            out->part_id = a.ids;
            a.ids = NULL;
        }
    }
    if (failed)
        partd__decode_oom(d, "/options/aot");
    free(a.node_of);
    free(a.id_of);
    free(a.ids);
}
