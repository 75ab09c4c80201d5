/*
 * modules.c - decoding and validation of graph.modules (PyTorch's SAC
 * module_info); see modules.h.
 *
 * Every violation is reported with a JSON Pointer under "/graph/modules" and
 * decoding goes on, so one answer lists every error (up to the problem cap).
 * The model is only built when no error was found. Allocation failure returns
 * PARTD_ENOMEM with whatever was decoded released. Values are read with
 * json_read.h, as the rest of the request is, so errors are worded alike.
 */
#include "modules.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "partd.h"

/* The four order lists, in the order they are checked and reported. */
static const char *const ORDER_KEYS[4] = {
    "fw_pre_order", "fw_post_order", "bw_pre_order", "bw_post_order"
};

/* All the decoder needs is the reader's: the problem, the string table and
 * the out-of-memory flag. */
typedef partd_reader decoder;

static void report(decoder *d, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(decoder *d, const char *pointer, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    partd_problem_add(d->pb, pointer, "%s", msg);
}

/* Every member of module_info is required: the getters below read the
 * member `key` of obj (at base), reporting it when absent. */

static int get_bytes(decoder *d, json_t *obj, const char *base, const char *key,
                     int64_t min, int64_t *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_read_required(d, obj, base, key, ptr);
    return v ? partd_read_bytes(d, v, ptr, min, out) : -1;
}

/* A finite number; `nonneg` means a time: 0 to 1e12 ms, as a node's
 * latency. Curve figures (slopes, intercepts, breakpoints) are at most 1e15
 * in magnitude, so the SAC model's sums and products of them stay finite. */
static int number_value(decoder *d, json_t *v, const char *ptr, int nonneg,
                        double *out)
{
    return nonneg ? partd_read_number(d, v, ptr, 0, 0, 1e12, out)
                  : partd_read_number(d, v, ptr, -1e15, 0, 1e15, out);
}

static int get_number(decoder *d, json_t *obj, const char *base, const char *key,
                      int nonneg, double *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_read_required(d, obj, base, key, ptr);
    return v ? number_value(d, v, ptr, nonneg, out) : -1;
}

static int get_bool(decoder *d, json_t *obj, const char *base, const char *key,
                    int *out)
{
    char ptr[PARTD_POINTER_CAP];
    json_t *v = partd_read_required(d, obj, base, key, ptr);
    return v ? partd_read_bool(d, v, ptr, out) : -1;
}

/* An array member; NULL (reported) when missing or not an array. ptr
 * receives its pointer. */
static json_t *get_array(decoder *d, json_t *obj, const char *base,
                         const char *key, char *ptr)
{
    json_t *v = partd_read_required(d, obj, base, key, ptr);
    return v && partd_read_array(d, v, ptr, NULL) == 0 ? v : NULL;
}

/* A list of numbers into a new array (*out NULL for an empty list). */
static int get_numbers(decoder *d, json_t *obj, const char *base,
                       const char *key, int nonneg, double **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *arr = get_array(d, obj, base, key, arr_ptr);
    if (!arr)
        return -1;
    size_t len = json_array_size(arr);
    if (len == 0)
        return 0;
    double *xs = calloc(len, sizeof *xs);
    if (!xs) {
        d->oom = 1;
        return -1;
    }
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        partd_pointer_index(ptr, arr_ptr, i);
        if (number_value(d, json_array_get(arr, i), ptr, nonneg, &xs[i]) < 0)
            bad = 1;
    }
    *out = xs;
    *n = (uint32_t)len;
    return bad ? -1 : 0;
}

/* ---- sac_stats ---------------------------------------------------------- */

static void sac_stats_free(partd_sac_stats *s)
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
static int op_index(decoder *d, json_t *v, const char *ptr, uint32_t n_ops,
                    uint32_t *out)
{
    int64_t x;
    if (!partd_json_integral(v, &x) || x < 0 || x >= (int64_t)n_ops) {
        report(d, ptr, "must be an op index between 0 and %u", n_ops ? n_ops - 1 : 0);
        return -1;
    }
    *out = (uint32_t)x;
    return 0;
}

static int get_index_list(decoder *d, json_t *obj, const char *base,
                          const char *key, uint32_t n_ops, uint32_t **out,
                          uint32_t *n)
{
    *out = NULL;
    *n = 0;
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *arr = get_array(d, obj, base, key, arr_ptr);
    if (!arr)
        return -1;
    size_t len = json_array_size(arr);
    if (len == 0)
        return 0;
    uint32_t *xs = calloc(len, sizeof *xs);
    if (!xs) {
        d->oom = 1;
        return -1;
    }
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        partd_pointer_index(ptr, arr_ptr, i);
        if (op_index(d, json_array_get(arr, i), ptr, n_ops, &xs[i]) < 0)
            bad = 1;
    }
    *out = xs;
    *n = (uint32_t)len;
    return bad ? -1 : 0;
}

static int get_inplace_ops(decoder *d, json_t *obj, const char *base,
                           partd_sac_stats *s)
{
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP], ptr2[PARTD_POINTER_CAP];
    json_t *arr = get_array(d, obj, base, "inplace_ops", arr_ptr);
    if (!arr)
        return -1;
    size_t len = json_array_size(arr);
    if (len == 0)
        return 0;
    s->inplace_op = calloc(len, sizeof *s->inplace_op);
    s->inplace_parent = calloc(len, sizeof *s->inplace_parent);
    if (!s->inplace_op || !s->inplace_parent) {
        d->oom = 1;
        return -1;
    }
    s->n_inplace = (uint32_t)len;
    int bad = 0;
    for (size_t i = 0; i < len; i++) {
        json_t *pair = json_array_get(arr, i);
        partd_pointer_index(ptr, arr_ptr, i);
        if (!json_is_array(pair) || json_array_size(pair) != 2) {
            report(d, ptr, "must be a pair [op, parent] of op indices");
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
    return bad ? -1 : 0;
}

static const char *const SAC_STATS_KEYS[] = {
    "func_names", "runtimes", "memory", "view_like_ops", "rand_ops",
    "saved_autograd_ops", "inplace_ops", "force_store_random", NULL
};

static int decode_func_names(decoder *d, json_t *obj, const char *base,
                             partd_sac_stats *s)
{
    char arr_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *names = get_array(d, obj, base, "func_names", arr_ptr);
    if (!names)
        return -1;
    s->n_ops = (uint32_t)json_array_size(names);
    if (s->n_ops == 0)
        return 0;
    s->func_names = calloc(s->n_ops, sizeof *s->func_names);
    if (!s->func_names) {
        d->oom = 1;
        return -1;
    }
    int bad = 0;
    for (uint32_t i = 0; i < s->n_ops; i++) {
        json_t *v = json_array_get(names, i);
        partd_pointer_index(ptr, arr_ptr, i);
        const char *name = partd_read_string(d, v, ptr);
        if (!name) {
            bad = 1;
            continue;
        }
        s->func_names[i] = partd_strtab_intern(d->strings, name, json_string_length(v));
        if (s->func_names[i] == PARTD_STR_NONE) {
            d->oom = 1;
            return -1;
        }
    }
    return bad ? -1 : 0;
}

static int decode_op_costs(decoder *d, json_t *obj, const char *base,
                           partd_sac_stats *s)
{
    char ptr[PARTD_POINTER_CAP], ptr2[PARTD_POINTER_CAP];
    uint32_t n_rt = 0;
    int bad = get_numbers(d, obj, base, "runtimes", 1, &s->runtimes, &n_rt) < 0;
    if (!bad && n_rt != s->n_ops) {
        partd_pointer_member(ptr, base, "runtimes");
        report(d, ptr, "must have one entry per op of func_names (%u), got %u", s->n_ops,
               n_rt);
        bad = 1;
    }
    json_t *mem = get_array(d, obj, base, "memory", ptr);
    if (!mem)
        return -1;
    if (json_array_size(mem) != s->n_ops) {
        report(d, ptr, "must have one entry per op of func_names (%u), got %zu",
               s->n_ops, json_array_size(mem));
        return -1;
    }
    if (s->n_ops) {
        s->memory = calloc(s->n_ops, sizeof *s->memory);
        if (!s->memory) {
            d->oom = 1;
            return -1;
        }
    }
    for (uint32_t i = 0; i < s->n_ops; i++) {
        partd_pointer_index(ptr2, ptr, i);
        if (partd_read_bytes(d, json_array_get(mem, i), ptr2, 0, &s->memory[i]) < 0)
            bad = 1;
    }
    return bad ? -1 : 0;
}

static int decode_sac_stats(decoder *d, json_t *obj, const char *base,
                            partd_sac_stats **out)
{
    *out = NULL;
    if (partd_read_object(d, obj, base, NULL) != 0)
        return -1;
    partd_read_reject_unknown(d, obj, base, SAC_STATS_KEYS, 0);
    partd_sac_stats *s = calloc(1, sizeof *s);
    if (!s) {
        d->oom = 1;
        return -1;
    }
    *out = s;
    if (decode_func_names(d, obj, base, s) < 0)
        return -1; /* op indices cannot be checked without n_ops */
    int bad = decode_op_costs(d, obj, base, s) < 0;
    bad |= get_index_list(d, obj, base, "view_like_ops", s->n_ops,
                          &s->view_like_ops, &s->n_view_like) < 0;
    bad |= get_index_list(d, obj, base, "rand_ops", s->n_ops, &s->rand_ops,
                          &s->n_rand) < 0;
    bad |= get_index_list(d, obj, base, "saved_autograd_ops", s->n_ops,
                          &s->saved_autograd_ops, &s->n_saved_autograd) < 0;
    bad |= get_inplace_ops(d, obj, base, s) < 0;
    bad |= get_bool(d, obj, base, "force_store_random", &s->force_store_random) < 0;
    return bad ? -1 : 0;
}

/* ---- mod_stats ---------------------------------------------------------- */

static const char *const MOD_STATS_KEYS[] = {
    "fqn", "param_per_module", "grad_per_module", "grad_total",
    "act_fw_per_module", "act_bw_per_module", "act_grad_per_module",
    "act_total", "input_per_module", "output_per_module",
    "fw_runtime_per_module", "bw_runtime_per_module", "is_leaf",
    "sac_runtime", "sac_memory", "n_segments", "slopes", "intercepts",
    "breakpoints", "tradeoff_curve", "sac_stats", NULL
};

static void module_free_arrays(partd_module *m)
{
    free(m->slopes);
    free(m->intercepts);
    free(m->breakpoints);
    sac_stats_free(m->sac_stats);
}

static int decode_byte_members(decoder *d, json_t *obj, const char *base,
                               partd_module *m)
{
    struct { const char *key; int64_t *dst; } bytes[] = {
        { "param_per_module", &m->param_per_module },
        { "grad_per_module", &m->grad_per_module },
        { "grad_total", &m->grad_total },
        { "act_fw_per_module", &m->act_fw_per_module },
        { "act_bw_per_module", &m->act_bw_per_module },
        { "act_grad_per_module", &m->act_grad_per_module },
        { "act_total", &m->act_total },
        { "input_per_module", &m->input_per_module },
        { "output_per_module", &m->output_per_module },
        { "sac_memory", &m->sac_memory },
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
        /* PyTorch computes act_grad_per_module as the temporary memory at
         * the backward peak minus that before the backward: it can be < 0. */
        bad |= get_bytes(d, obj, base, bytes[i].key,
                         bytes[i].dst == &m->act_grad_per_module ? -PARTD_MAX_BYTES : 0,
                         bytes[i].dst) < 0;
    return bad ? -1 : 0;
}

static int decode_segments(decoder *d, json_t *obj, const char *base,
                           partd_module *m)
{
    char ptr[PARTD_POINTER_CAP];
    int bad = 0;
    json_t *ns = partd_read_required(d, obj, base, "n_segments", ptr);
    int ns_ok = 0;
    int64_t x;
    if (ns) {
        if (partd_read_int(d, ns, ptr, 0, 1000000, &x) < 0) {
            bad = 1;
        } else {
            m->n_segments = (uint32_t)x;
            ns_ok = 1;
        }
    }
    const char *keys[2] = { "slopes", "intercepts" };
    double **dst[2] = { &m->slopes, &m->intercepts };
    for (int k = 0; k < 2; k++) {
        uint32_t n = 0;
        if (get_numbers(d, obj, base, keys[k], 0, dst[k], &n) < 0) {
            bad = 1;
        } else if (ns_ok && n != m->n_segments) {
            partd_pointer_member(ptr, base, keys[k]);
            report(d, ptr, "must have n_segments (%u) entries, got %u", m->n_segments, n);
            bad = 1;
        }
    }
    bad |= get_numbers(d, obj, base, "breakpoints", 0, &m->breakpoints,
                       &m->n_breakpoints) < 0;
    return bad ? -1 : 0;
}

/* tradeoff_curve: PyTorch's OrderedDict[float, float], i.e. an object whose
 * values are numbers. Validated, not used by the planner. */
static int check_tradeoff_curve(decoder *d, json_t *obj, const char *base)
{
    char tc_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *tc = partd_read_required(d, obj, base, "tradeoff_curve", tc_ptr);
    if (!tc || partd_read_object(d, tc, tc_ptr, NULL) != 0)
        return -1;
    const char *key;
    json_t *v;
    int bad = 0;
    json_object_foreach(tc, key, v) {
        double x;
        partd_pointer_member(ptr, tc_ptr, key);
        if (number_value(d, v, ptr, 0, &x) < 0)
            bad = 1;
    }
    return bad ? -1 : 0;
}

static int decode_module(decoder *d, json_t *obj, const char *base,
                         partd_module *m)
{
    m->fqn = PARTD_STR_NONE;
    if (partd_read_object(d, obj, base, NULL) != 0)
        return -1;
    partd_read_reject_unknown(d, obj, base, MOD_STATS_KEYS, 0);
    char ptr[PARTD_POINTER_CAP];
    json_t *fqn = partd_read_required(d, obj, base, "fqn", ptr);
    if (fqn)
        m->fqn = partd_read_name(d, fqn, ptr);
    int bad = m->fqn == PARTD_STR_NONE;
    bad |= decode_byte_members(d, obj, base, m) < 0;
    bad |= get_number(d, obj, base, "fw_runtime_per_module", 1,
                      &m->fw_runtime_per_module) < 0;
    bad |= get_number(d, obj, base, "bw_runtime_per_module", 1,
                      &m->bw_runtime_per_module) < 0;
    bad |= get_number(d, obj, base, "sac_runtime", 1, &m->sac_runtime) < 0;
    bad |= get_bool(d, obj, base, "is_leaf", &m->is_leaf) < 0;
    bad |= decode_segments(d, obj, base, m) < 0;
    bad |= check_tradeoff_curve(d, obj, base) < 0;
    json_t *ss = json_object_get(obj, "sac_stats");
    if (ss && !json_is_null(ss)) {
        partd_pointer_member(ptr, base, "sac_stats");
        bad |= decode_sac_stats(d, ss, ptr, &m->sac_stats) < 0;
    }
    return bad ? -1 : 0;
}

/* ---- fqn lookup --------------------------------------------------------- */

typedef struct fqn_entry {
    uint32_t fqn;   /* string id */
    uint32_t index; /* position in mod_stats */
} fqn_entry;

static int cmp_entry(const void *a, const void *b)
{
    const fqn_entry *x = a, *y = b;
    return (x->fqn > y->fqn) - (x->fqn < y->fqn);
}

static uint32_t lookup(const fqn_entry *map, uint32_t n, uint32_t fqn)
{
    fqn_entry key = { fqn, 0 };
    const fqn_entry *e = bsearch(&key, map, n, sizeof *map, cmp_entry);
    return e ? e->index : PARTD_NONE;
}

static uint32_t lookup_text(const partd_strtab *strings, const fqn_entry *map,
                            uint32_t n, const char *s, size_t len)
{
    uint32_t id = partd_strtab_find(strings, s, len);
    return id == PARTD_STR_NONE ? PARTD_NONE : lookup(map, n, id);
}

/* mod_stats position of the nearest strict ancestor of `fqn` by prefix at a
 * "." boundary, or PARTD_NONE. */
static uint32_t find_parent(const partd_strtab *strings, const fqn_entry *map,
                            uint32_t n, uint32_t fqn)
{
    const char *s = partd_str(strings, fqn);
    for (size_t len = partd_strlen(strings, fqn); len > 0; len--) {
        if (s[len - 1] != '.' || len == 1)
            continue;
        uint32_t p = lookup_text(strings, map, n, s, len - 1);
        if (p != PARTD_NONE)
            return p;
    }
    return PARTD_NONE;
}

/* ---- mod_order ---------------------------------------------------------- */

/* Checks one order list is a permutation of the mod_stats fqns; fills
 * order[k] = mod_stats position of its k-th entry. */
static int decode_order(decoder *d, json_t *list, const char *ptr_list,
                        const partd_module *stats, uint32_t n,
                        const fqn_entry *map, uint32_t n_map, uint32_t *order)
{
    char ptr[PARTD_POINTER_CAP];
    if (partd_read_array(d, list, ptr_list, "an array of module fqns") != 0)
        return -1;
    uint8_t *seen = calloc(n ? n : 1, 1);
    if (!seen) {
        d->oom = 1;
        return -1;
    }
    int bad = 0;
    size_t len = json_array_size(list);
    for (size_t k = 0; k < len; k++) {
        json_t *v = json_array_get(list, k);
        partd_pointer_index(ptr, ptr_list, k);
        const char *fqn = partd_read_string(d, v, ptr);
        if (!fqn) {
            bad = 1;
            continue;
        }
        uint32_t i = lookup_text(d->strings, map, n_map, fqn, json_string_length(v));
        if (i == PARTD_NONE) {
            report(d, ptr, "module \"%s\" is not in mod_stats", fqn);
            bad = 1;
        } else if (seen[i]) {
            report(d, ptr, "module \"%s\" is listed more than once", fqn);
            bad = 1;
        } else {
            seen[i] = 1;
            if (k < n)
                order[k] = i;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!seen[i] && stats[i].fqn != PARTD_STR_NONE) {
            report(d, ptr_list, "module \"%s\" of mod_stats is missing",
                   partd_str(d->strings, stats[i].fqn));
            bad = 1;
        }
    free(seen);
    return bad ? -1 : 0;
}

static const char *const MOD_ORDER_KEYS[] = {
    "fw_pre_order", "fw_post_order", "bw_pre_order", "bw_post_order", NULL
};

/* pre[k], post[k]: mod_stats positions in forward pre- and post-order. */
static int decode_orders(decoder *d, json_t *modules, const partd_module *stats,
                         uint32_t n, const fqn_entry *map, uint32_t n_map,
                         uint32_t *pre, uint32_t *post, uint32_t *scratch)
{
    char base[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *mo = partd_read_required(d, modules, "/graph/modules", "mod_order", base);
    if (!mo || partd_read_object(d, mo, base, NULL) != 0)
        return -1;
    partd_read_reject_unknown(d, mo, base, MOD_ORDER_KEYS, 0);
    int bad = 0;
    uint32_t *dst[4] = { pre, post, scratch, scratch };
    for (int k = 0; k < 4; k++) {
        json_t *list = partd_read_required(d, mo, base, ORDER_KEYS[k], ptr);
        if (!list) {
            bad = 1;
            continue;
        }
        bad |= decode_order(d, list, ptr, stats, n, map, n_map, dst[k]) < 0;
    }
    return bad ? -1 : 0;
}

/* ---- assembly ----------------------------------------------------------- */

/* Builds the fqn -> mod_stats position map; reports duplicate fqns. */
static int build_map(decoder *d, const partd_module *stats, uint32_t n,
                     fqn_entry *map, uint32_t *n_map)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (stats[i].fqn != PARTD_STR_NONE)
            map[m++] = (fqn_entry){ stats[i].fqn, i };
    qsort(map, m, sizeof *map, cmp_entry);
    int bad = 0;
    char ptr[PARTD_POINTER_CAP];
    for (uint32_t k = 1; k < m; k++)
        if (map[k].fqn == map[k - 1].fqn) {
            uint32_t later = map[k].index > map[k - 1].index ? map[k].index
                                                              : map[k - 1].index;
            snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%u/fqn", later);
            report(d, ptr, "module \"%s\" appears more than once in mod_stats",
                   partd_str(d->strings, map[k].fqn));
            bad = 1;
        }
    *n_map = m;
    return bad ? -1 : 0;
}

/* Orders the modules by forward pre-order, links parents and checks that the
 * first module of fw_pre_order is the root: an ancestor of every other one. */
static int assemble(decoder *d, partd_module *stats, const fqn_entry *map,
                    uint32_t n, const uint32_t *pre, const uint32_t *post,
                    partd_modules *out)
{
    uint32_t *pos_in_pre = calloc(n, sizeof *pos_in_pre);
    out->mods = calloc(n, sizeof *out->mods);
    out->post_order = calloc(n, sizeof *out->post_order);
    out->by_fqn = calloc(n, sizeof *out->by_fqn);
    if (!pos_in_pre || !out->mods || !out->post_order || !out->by_fqn) {
        free(pos_in_pre);
        d->oom = 1;
        return -1;
    }
    for (uint32_t k = 0; k < n; k++)
        pos_in_pre[pre[k]] = k;
    for (uint32_t k = 0; k < n; k++) {
        out->mods[k] = stats[pre[k]];
        out->mods[k].request_index = pre[k];
        memset(&stats[pre[k]], 0, sizeof stats[pre[k]]); /* ownership moved */
    }
    out->n = n;
    for (uint32_t k = 0; k < n; k++) /* map is sorted by fqn id */
        out->by_fqn[k] = pos_in_pre[map[k].index];
    for (uint32_t k = 0; k < n; k++) {
        out->post_order[k] = pos_in_pre[post[k]];
        out->mods[out->post_order[k]].post_pos = k;
    }
    int bad = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t p = find_parent(d->strings, map, n, out->mods[k].fqn);
        out->mods[k].parent = p == PARTD_NONE ? PARTD_NONE : pos_in_pre[p];
        if ((k == 0) != (out->mods[k].parent == PARTD_NONE)) {
            char ptr[PARTD_POINTER_CAP];
            snprintf(ptr, sizeof ptr, "/graph/modules/mod_order/fw_pre_order/%u", k);
            report(d, ptr, k == 0
                       ? "the first module of fw_pre_order must be the root, "
                         "but \"%s\" is inside another module"
                       : "module \"%s\" is not inside the root module (the first "
                         "of fw_pre_order); ancestry is by fqn prefix at a \".\"",
                   partd_str(d->strings, out->mods[k].fqn));
            bad = 1;
        }
    }
    free(pos_in_pre);
    return bad ? -1 : 0;
}

static const char *const MODULES_KEYS[] = { "mod_order", "mod_stats", NULL };

static int decode_all(decoder *d, json_t *modules, partd_modules *out)
{
    const char *base = "/graph/modules";
    if (partd_read_object(d, modules, base, "an object with mod_order and mod_stats") != 0)
        return -1;
    partd_read_reject_unknown(d, modules, base, MODULES_KEYS, 0);
    char ms_ptr[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *ms = get_array(d, modules, base, "mod_stats", ms_ptr);
    if (!ms)
        return -1;
    uint32_t n = (uint32_t)json_array_size(ms);
    if (n == 0) {
        report(d, ms_ptr, "must list at least one module");
        return -1;
    }
    partd_module *stats = calloc(n, sizeof *stats);
    fqn_entry *map = calloc(n, sizeof *map);
    uint32_t *orders = calloc(3 * (size_t)n, sizeof *orders);
    int rc = -1;
    if (!stats || !map || !orders) {
        d->oom = 1;
        goto done;
    }
    int bad = 0;
    for (uint32_t i = 0; i < n && !d->oom; i++) {
        partd_pointer_index(ptr, ms_ptr, i);
        bad |= decode_module(d, json_array_get(ms, i), ptr, &stats[i]) < 0;
    }
    uint32_t n_map = 0;
    if (d->oom)
        goto done;
    bad |= build_map(d, stats, n, map, &n_map) < 0;
    bad |= decode_orders(d, modules, stats, n, map, n_map, orders, orders + n,
                         orders + 2 * (size_t)n) < 0;
    if (bad || d->oom)
        goto done;
    rc = assemble(d, stats, map, n, orders, orders + n, out);
done:
    if (stats)
        for (uint32_t i = 0; i < n; i++)
            module_free_arrays(&stats[i]);
    free(stats);
    free(map);
    free(orders);
    return rc;
}

int partd_modules_decode(json_t *modules, partd_strtab *strings,
                         partd_problem *problem, struct partd_modules **out,
                         char **canonical)
{
    *out = NULL;
    if (canonical)
        *canonical = NULL;
    partd_modules *m = calloc(1, sizeof *m);
    if (!m)
        return PARTD_ENOMEM;
    decoder d = { .pb = problem, .strings = strings };
    uint32_t errors_before = problem->n_errors + problem->dropped;
    int rc = decode_all(&d, modules, m);
    if (d.oom) {
        partd_modules_free(m);
        return PARTD_ENOMEM;
    }
    if (rc < 0 || problem->n_errors + problem->dropped > errors_before) {
        partd_modules_free(m);
        if (!problem->status)
            partd_problem_set(problem, 422, "invalid-request", "Invalid request",
                              "graph.modules does not match PyTorch's module_info");
        return PARTD_EINVALID;
    }
    if (canonical) {
        *canonical = partd_json_dumps(modules, JSON_SORT_KEYS | JSON_COMPACT |
                                             JSON_REAL_PRECISION(17));
        if (!*canonical) {
            partd_modules_free(m);
            return PARTD_ENOMEM;
        }
    }
    *out = m;
    return PARTD_OK;
}

void partd_modules_free(struct partd_modules *m)
{
    if (!m)
        return;
    if (m->mods)
        for (uint32_t i = 0; i < m->n; i++)
            module_free_arrays(&m->mods[i]);
    free(m->mods);
    free(m->post_order);
    free(m->by_fqn);
    free(m);
}

uint32_t partd_modules_find(const partd_modules *m, uint32_t fqn)
{
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        uint32_t id = m->mods[m->by_fqn[mid]].fqn;
        if (id == fqn)
            return m->by_fqn[mid];
        if (id < fqn)
            lo = mid + 1;
        else
            hi = mid;
    }
    return PARTD_NONE;
}

int partd_modules_is_ancestor(const partd_modules *m, uint32_t anc,
                              uint32_t desc)
{
    for (uint32_t p = m->mods[desc].parent; p != PARTD_NONE; p = m->mods[p].parent)
        if (p == anc)
            return 1;
    return 0;
}
