/*
 * decode_devices.c - `devices` of a request, and the checks for repeated
 * entries that devices and the options' name lists share; see
 * decode_internal.h.
 *
 * The devices array is small: the reading layer builds it as a jansson
 * tree, read here with json_read.h like every small part.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "json_read.h"
#include "partd/partd.h"

/* first[i] = the smallest index whose key equals keys[i] (i itself for a
 * first occurrence). Keys < 0 are "absent" and never repeat. Sorting keeps
 * this O(n log n): lists and device inventories come from clients. */
typedef struct keyed {
    int64_t key;
    uint32_t index;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int first_occurrences(const int64_t *keys, uint32_t n, uint32_t *first)
{
    keyed *k = malloc((size_t)(n ? n : 1) * sizeof *k);
    if (!k)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        k[i] = (keyed){keys[i], i};
        first[i] = i;
    }
    if (n)
        qsort(k, n, sizeof *k, cmp_keyed);
    for (uint32_t i = 1; i < n; i++)
        if (k[i].key >= 0 && k[i].key == k[i - 1].key)
            first[k[i].index] = first[k[i - 1].index];
    free(k);
    return 0;
}

/* A list of names (for cut_after, ac_units, fsdp_units): string ids in a new
 * array, duplicates reported. */
int partd__decode_name_list(partd_dec *d, json_t *v, const char *ptr, uint32_t max,
                        uint32_t **out, uint32_t *n_out)
{
    if (partd_json_read_array(&d->r, v, ptr, NULL) != 0)
        return -1;
    size_t n = json_array_size(v);
    if (n > max) {
        partd_problem_add(d->r.pb, ptr, "has %zu entries; at most %u are allowed", n, max);
        return -1;
    }
    uint32_t *ids = calloc(n ? n : 1, sizeof *ids);
    if (!ids) {
        partd__decode_oom(d, ptr);
        return -1;
    }
    int bad = 0;
    char p[PARTD_POINTER_CAP];
    int64_t *keys = malloc((n ? n : 1) * sizeof *keys);
    uint32_t *first = malloc((n ? n : 1) * sizeof *first);
    for (size_t i = 0; i < n; i++) {
        partd_pointer_index(p, ptr, i);
        ids[i] = partd_json_read_name(&d->r, json_array_get(v, i), p);
        bad |= ids[i] == PARTD_STR_NONE;
        if (keys)
            keys[i] = ids[i] == PARTD_STR_NONE ? -1 : (int64_t)ids[i];
    }
    if (!keys || !first || first_occurrences(keys, (uint32_t)n, first) != 0) {
        partd__decode_oom(d, ptr);
        bad = 1;
    } else {
        for (size_t i = 0; i < n; i++)
            if (first[i] != i) {
                partd_pointer_index(p, ptr, i);
                partd_problem_add(d->r.pb, p, "repeats entry %u", first[i]);
                bad = 1;
            }
    }
    free(keys);
    free(first);
    *out = ids;
    *n_out = (uint32_t)n;
    return bad ? -1 : 0;
}

/* Duplicate device names and logical ids, each named with its first use. */
static void check_device_repeats(partd_dec *d)
{
    uint32_t n = d->req->n_devices;
    int64_t *keys = malloc(n * sizeof *keys);
    uint32_t *first_name = malloc(n * sizeof *first_name);
    uint32_t *first_id = malloc(n * sizeof *first_id);
    int ok = keys && first_name && first_id;
    for (uint32_t i = 0; ok && i < n; i++)
        keys[i] = d->req->devices[i].name == PARTD_STR_NONE ? -1 : (int64_t)d->req->devices[i].name;
    ok = ok && first_occurrences(keys, n, first_name) == 0;
    for (uint32_t i = 0; ok && i < n; i++)
        keys[i] = d->req->devices[i].logical_id;
    ok = ok && first_occurrences(keys, n, first_id) == 0;
    char ptr[PARTD_POINTER_CAP];
    for (uint32_t i = 0; ok && i < n; i++) {
        const partd_device *dev = &d->req->devices[i];
        if (first_name[i] != i) {
            partd_pointer_index(ptr, "/devices", i);
            partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "name");
            partd_problem_add(d->r.pb, ptr, "duplicate device name \"%s\" (first at /devices/%u)",
                              partd_str(&d->req->strings, dev->name), first_name[i]);
        }
        if (first_id[i] != i) {
            partd_pointer_index(ptr, "/devices", i);
            partd_problem_pointer_append(ptr, PARTD_POINTER_CAP, "logical_id");
            partd_problem_add(d->r.pb, ptr, "duplicate logical id %lld (also /devices/%u)",
                              (long long)dev->logical_id, first_id[i]);
        }
    }
    if (!ok)
        partd__decode_oom(d, "/devices");
    free(keys);
    free(first_name);
    free(first_id);
}

void partd__decode_devices(partd_dec *d, json_t *devices, const partd_decode_limits *lim)
{
    static const char *const device_members[] = {"name", "memory_bytes", "logical_id",
                                                 "speed", NULL};
    if (!devices) {
        partd__decode_add(d, "/devices", "is required");
        return;
    }
    if (partd_json_read_array(&d->r, devices, "/devices", NULL) != 0)
        return;
    size_t n = json_array_size(devices);
    if (n == 0) {
        partd__decode_add(d, "/devices", "at least one device is required");
        return;
    }
    uint32_t max = lim && lim->max_devices ? lim->max_devices : 65536;
    if (n > max) {
        partd_problem_add(d->r.pb, "/devices", "has %zu devices; at most %u are allowed", n, max);
        return;
    }
    d->req->devices = calloc(n, sizeof *d->req->devices);
    if (!d->req->devices) {
        partd__decode_oom(d, "/devices");
        return;
    }
    d->req->n_devices = (uint32_t)n;
    char base[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        partd_device *dev = &d->req->devices[i];
        json_t *o = json_array_get(devices, i), *v;
        dev->name = PARTD_STR_NONE;
        dev->logical_id = (int64_t)i;
        dev->speed = 1.0;
        partd_pointer_index(base, "/devices", i);
        if (partd_json_read_object(&d->r, o, base, NULL) != 0)
            continue;
        partd_json_read_reject_unknown(&d->r, o, base, device_members, 1);
        if ((v = partd_json_read_required(&d->r, o, base, "name", ptr)))
            dev->name = partd_json_read_name(&d->r, v, ptr);
        if ((v = partd_json_read_required(&d->r, o, base, "memory_bytes", ptr)) &&
            partd_json_read_bytes(&d->r, v, ptr, 1, &dev->memory_bytes) == 0 && total >= 0 &&
            partd__decode_add_bytes(&total, dev->memory_bytes)) {
            /* size_based sums every device's memory */
            partd__decode_add(d, ptr, "the devices' memory_bytes add up to more than 2^53 here");
            total = -1; /* reported once */
        }
        if ((v = json_object_get(o, "logical_id"))) {
            partd_pointer_member(ptr, base, "logical_id");
            partd_json_read_int(&d->r, v, ptr, 0, INT32_MAX, &dev->logical_id);
        }
        if ((v = json_object_get(o, "speed"))) {
            partd_pointer_member(ptr, base, "speed");
            partd_json_read_number(&d->r, v, ptr, PARTD_DECODE_MIN_SPEED, 0, PARTD_DECODE_MAX_SPEED, &dev->speed);
        }
    }
    check_device_repeats(d);
}

