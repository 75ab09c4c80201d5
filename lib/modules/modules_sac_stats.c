/*
 * modules_sac_stats.c - one module's sac_stats (PyTorch's SACStats): op
 * names, runtimes, memory and the op-index lists; see modules_internal.h.
 */
#include "modules_internal.h"

#include <stdlib.h>

void partd__modules_sac_stats_free(partd_sac_stats *s)
{
    if (!s)
        return;
    free(s->func_names);
    free(s->runtimes);
    free(s->memory);
    free(s->view_like_ops);
    free(s->rand_ops);
    free(s->saved_autograd_ops);
    free(s->inplace_op);
    free(s->inplace_parent);
    free(s);
}

/* An op index: integer in [0, n_ops). */
static int op_index(partd_reader *d, json_t *v, const char *ptr, uint32_t n_ops,
                    uint32_t *out)
{
    int64_t x;
    if (!partd_json_read_integral(v, &x) || x < 0 || x >= (int64_t)n_ops) {
        partd__modules_report(d, ptr, "must be an op index between 0 and %u", n_ops ? n_ops - 1 : 0);
        return PARTD_EINVALID;
    }
    *out = (uint32_t)x;
    return PARTD_OK;
}

static int get_index_list(partd_reader *d, json_t *obj, const char *base,
                          const char *key, uint32_t n_ops, uint32_t **out,
                          uint32_t *n)
{
    *out = NULL;
    *n = 0;
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *arr = partd__modules_get_array(d, obj, base, key, arr_ptr);
    if (!arr)
        return PARTD_EINVALID;
    size_t len = json_array_size(arr);
    if (len == 0)
        return PARTD_OK;
    uint32_t *xs = calloc(len, sizeof *xs);
    if (!xs) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        partd_pointer_index(ptr, arr_ptr, i);
        if (op_index(d, json_array_get(arr, i), ptr, n_ops, &xs[i]) < 0)
            bad = 1;
    }
    *out = xs;
    *n = (uint32_t)len;
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static int get_inplace_ops(partd_reader *d, json_t *obj, const char *base,
                           partd_sac_stats *s)
{
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP], ptr2[PARTD_POINTER_CAP];
    json_t *arr = partd__modules_get_array(d, obj, base, "inplace_ops", arr_ptr);
    if (!arr)
        return PARTD_EINVALID;
    size_t len = json_array_size(arr);
    if (len == 0)
        return PARTD_OK;
    s->inplace_op = calloc(len, sizeof *s->inplace_op);
    s->inplace_parent = calloc(len, sizeof *s->inplace_parent);
    if (!s->inplace_op || !s->inplace_parent) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    s->n_inplace = (uint32_t)len;
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        json_t *pair = json_array_get(arr, i);
        partd_pointer_index(ptr, arr_ptr, i);
        if (!json_is_array(pair) || json_array_size(pair) != 2) {
            partd__modules_report(d, ptr, "must be a pair [op, parent] of op indices");
            bad = 1;
            continue;
        }
        uint32_t *dst[2] = { &s->inplace_op[i], &s->inplace_parent[i] };
        for (size_t k = 0; k < 2; k++) {
            partd_pointer_index(ptr2, ptr, k);
            if (op_index(d, json_array_get(pair, k), ptr2, s->n_ops, dst[k]) < 0) {
                bad = 1;
                break;
            }
        }
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static const char *const SAC_STATS_KEYS[] = {
    "func_names", "runtimes", "memory", "view_like_ops", "rand_ops",
    "saved_autograd_ops", "inplace_ops", "force_store_random", NULL
};

static int decode_func_names(partd_reader *d, json_t *obj, const char *base,
                             partd_sac_stats *s)
{
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *names = partd__modules_get_array(d, obj, base, "func_names", arr_ptr);
    if (!names)
        return PARTD_EINVALID;
    s->n_ops = (uint32_t)json_array_size(names);
    if (s->n_ops == 0)
        return PARTD_OK;
    s->func_names = calloc(s->n_ops, sizeof *s->func_names);
    if (!s->func_names) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    int bad = 0;
    for (uint32_t i = 0; i < s->n_ops; i++) {
        json_t *v = json_array_get(names, i);
        partd_pointer_index(ptr, arr_ptr, i);
        const char *name = partd_json_read_short(d, v, ptr);
        if (!name) {
            bad = 1;
            continue;
        }
        s->func_names[i] = partd_strtab_intern(d->strings, name, json_string_length(v));
        if (s->func_names[i] == PARTD_STR_NONE) {
            d->oom = 1;
            return PARTD_EINVALID;
        }
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static int decode_op_costs(partd_reader *d, json_t *obj, const char *base,
                           partd_sac_stats *s)
{
    char ptr[PARTD_POINTER_CAP], ptr2[PARTD_POINTER_CAP];
    uint32_t n_rt = 0;
    int bad = partd__modules_get_numbers(d, obj, base, "runtimes", 1, &s->runtimes, &n_rt) < 0;
    if (!bad && n_rt != s->n_ops) {
        partd_pointer_member(ptr, base, "runtimes");
        partd__modules_report(d, ptr, "must have one entry per op of func_names (%u), got %u",
                        s->n_ops, n_rt);
        bad = 1;
    }
    json_t *mem = partd__modules_get_array(d, obj, base, "memory", ptr);
    if (!mem)
        return PARTD_EINVALID;
    if (json_array_size(mem) != s->n_ops) {
        partd__modules_report(d, ptr, "must have one entry per op of func_names (%u), got %zu",
                        s->n_ops, json_array_size(mem));
        return PARTD_EINVALID;
    }
    if (s->n_ops) {
        s->memory = calloc(s->n_ops, sizeof *s->memory);
        if (!s->memory) {
            d->oom = 1;
            return PARTD_EINVALID;
        }
    }
    for (uint32_t i = 0; i < s->n_ops; i++) {
        partd_pointer_index(ptr2, ptr, i);
        if (partd_json_read_bytes(d, json_array_get(mem, i), ptr2, 0, &s->memory[i]) < 0)
            bad = 1;
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

int partd__modules_decode_sac_stats(partd_reader *d, json_t *obj, const char *base,
                              partd_sac_stats **out)
{
    *out = NULL;
    if (partd_json_read_object(d, obj, base, NULL) != 0)
        return PARTD_EINVALID;
    partd_json_read_reject_unknown(d, obj, base, SAC_STATS_KEYS, 0);
    partd_sac_stats *s = calloc(1, sizeof *s);
    if (!s) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    *out = s;
    if (decode_func_names(d, obj, base, s) < 0)
        return PARTD_EINVALID; /* op indices cannot be checked without n_ops */
    int bad = decode_op_costs(d, obj, base, s) < 0;
    bad |= get_index_list(d, obj, base, "view_like_ops", s->n_ops,
                          &s->view_like_ops, &s->n_view_like) < 0;
    bad |= get_index_list(d, obj, base, "rand_ops", s->n_ops, &s->rand_ops,
                          &s->n_rand) < 0;
    bad |= get_index_list(d, obj, base, "saved_autograd_ops", s->n_ops,
                          &s->saved_autograd_ops, &s->n_saved_autograd) < 0;
    bad |= get_inplace_ops(d, obj, base, s) < 0;
    bad |= partd__modules_get_bool(d, obj, base, "force_store_random", &s->force_store_random) < 0;
    return bad ? PARTD_EINVALID : PARTD_OK;
}
