/*
 * modules_tree.c - the module tree of graph.modules: the fqn map, the four
 * mod_order lists and the assembled tree (forward pre/post order, parents by
 * fqn prefix, the root check); see modules_internal.h.
 */
#include "modules_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The four order lists, in the order they are checked and reported. */
static const char *const ORDER_KEYS[4] = {
    "fw_pre_order", "fw_post_order", "bw_pre_order", "bw_post_order"
};

/* ---- fqn lookup --------------------------------------------------------- */

static int cmp_entry(const void *a, const void *b)
{
    const partd_mi_fqn_entry *x = a, *y = b;
    return (x->fqn > y->fqn) - (x->fqn < y->fqn);
}

static uint32_t lookup(const partd_mi_fqn_entry *map, uint32_t n, uint32_t fqn)
{
    partd_mi_fqn_entry key = { fqn, 0 };
    const partd_mi_fqn_entry *e = bsearch(&key, map, n, sizeof *map, cmp_entry);
    return e ? e->index : PARTD_NONE;
}

static uint32_t lookup_text(const partd_strtab *strings, const partd_mi_fqn_entry *map,
                            uint32_t n, const char *s, size_t len)
{
    uint32_t id = partd_strtab_find(strings, s, len);
    return id == PARTD_STR_NONE ? PARTD_NONE : lookup(map, n, id);
}

/* mod_stats position of the nearest strict ancestor of `fqn` by prefix at a
 * "." boundary, or PARTD_NONE. */
static uint32_t find_parent(const partd_strtab *strings, const partd_mi_fqn_entry *map,
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
static int decode_order(partd_reader *d, json_t *list, const char *ptr_list,
                        const partd_module *stats, uint32_t n,
                        const partd_mi_fqn_entry *map, uint32_t n_map, uint32_t *order)
{
    char ptr[PARTD_POINTER_CAP];
    if (partd_json_read_array(d, list, ptr_list, "an array of module fqns") != 0)
        return PARTD_EINVALID;
    uint8_t *seen = calloc(n ? n : 1, 1);
    if (!seen) {
        d->oom = 1;
        return PARTD_EINVALID;
    }
    int bad = 0;
    size_t len = json_array_size(list);
    for (size_t k = 0; k < len; k++) {
        json_t *v = json_array_get(list, k);
        partd_pointer_index(ptr, ptr_list, k);
        const char *fqn = partd_json_read_short(d, v, ptr);
        if (!fqn) {
            bad = 1;
            continue;
        }
        uint32_t i = lookup_text(d->strings, map, n_map, fqn, json_string_length(v));
        if (i == PARTD_NONE) {
            partd__modules_report(d, ptr, "module \"%s\" is not in mod_stats", fqn);
            bad = 1;
        } else if (seen[i]) {
            partd__modules_report(d, ptr, "module \"%s\" is listed more than once", fqn);
            bad = 1;
        } else {
            seen[i] = 1;
            if (k < n)
                order[k] = i;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        if (!seen[i] && stats[i].fqn != PARTD_STR_NONE) {
            partd__modules_report(d, ptr_list, "module \"%s\" of mod_stats is missing",
                            partd_str(d->strings, stats[i].fqn));
            bad = 1;
        }
    free(seen);
    return bad ? PARTD_EINVALID : PARTD_OK;
}

static const char *const MOD_ORDER_KEYS[] = {
    "fw_pre_order", "fw_post_order", "bw_pre_order", "bw_post_order", NULL
};

int partd__modules_decode_orders(partd_reader *d, json_t *modules, const partd_module *stats,
                           uint32_t n, const partd_mi_fqn_entry *map, uint32_t n_map,
                           uint32_t *pre, uint32_t *post, uint32_t *scratch)
{
    char base[PARTD_POINTER_CAP], ptr[PARTD_POINTER_CAP];
    json_t *mo = partd_json_read_required(d, modules, "/graph/modules", "mod_order", base);
    if (!mo || partd_json_read_object(d, mo, base, NULL) != 0)
        return PARTD_EINVALID;
    partd_json_read_reject_unknown(d, mo, base, MOD_ORDER_KEYS, 0);
    int bad = 0;
    uint32_t *dst[4] = { pre, post, scratch, scratch };
    for (int k = 0; k < 4; k++) {
        json_t *list = partd_json_read_required(d, mo, base, ORDER_KEYS[k], ptr);
        if (!list) {
            bad = 1;
            continue;
        }
        bad |= decode_order(d, list, ptr, stats, n, map, n_map, dst[k]) < 0;
    }
    return bad ? PARTD_EINVALID : PARTD_OK;
}

/* ---- assembly ----------------------------------------------------------- */

int partd__modules_build_map(partd_reader *d, const partd_module *stats, uint32_t n,
                       partd_mi_fqn_entry *map, uint32_t *n_map)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (stats[i].fqn != PARTD_STR_NONE)
            map[m++] = (partd_mi_fqn_entry){ stats[i].fqn, i };
    qsort(map, m, sizeof *map, cmp_entry);
    int bad = 0;
    char ptr[PARTD_POINTER_CAP];
    for (uint32_t k = 1; k < m; k++)
        if (map[k].fqn == map[k - 1].fqn) {
            uint32_t later = map[k].index > map[k - 1].index ? map[k].index
                                                              : map[k - 1].index;
            snprintf(ptr, sizeof ptr, "/graph/modules/mod_stats/%u/fqn", later);
            partd__modules_report(d, ptr, "module \"%s\" appears more than once in mod_stats",
                            partd_str(d->strings, map[k].fqn));
            bad = 1;
        }
    *n_map = m;
    return bad ? PARTD_EINVALID : PARTD_OK;
}

int partd__modules_assemble(partd_reader *d, partd_module *stats, const partd_mi_fqn_entry *map,
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
        return PARTD_EINVALID;
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
            partd__modules_report(d, ptr, k == 0
                                        ? "the first module of fw_pre_order must be the root, "
                                          "but \"%s\" is inside another module"
                                        : "module \"%s\" is not inside the root module (the "
                                          "first of fw_pre_order); ancestry is by fqn prefix "
                                          "at a \".\"",
                            partd_str(d->strings, out->mods[k].fqn));
            bad = 1;
        }
    }
    free(pos_in_pre);
    return bad ? PARTD_EINVALID : PARTD_OK;
}
