/*
 * modules.h - graph.modules: PyTorch's SAC `module_info`, decoded.
 *
 * partd_modules_decode() converts the `graph.modules` JSON object (mod_order,
 * mod_stats with optional sac_stats) into plain arrays, checking every member
 * (types, ranges, each fqn once in mod_stats and in each order list, index
 * lists in range, slopes/intercepts of length n_segments) and reporting each
 * violation under "/graph/modules/...". Ancestry is by fqn prefix at a "."
 * boundary.
 *
 * The decoded tree does not assume that a module's subtree is contiguous in
 * forward pre-order: `parent` is found from the fqns themselves (the nearest
 * strict ancestor by prefix at a "." boundary that is itself a module), and
 * every ancestry question is answered from `parent`, never from positions.
 *
 * Ownership: *out is a new model owned by the caller (partd_modules_free);
 * *canonical a malloc'd canonical JSON text of the object (sorted keys,
 * compact) for graph_hash. Both NULL on failure.
 * Errors: PARTD_OK, or PARTD_EINVALID (problem filled) or PARTD_ENOMEM.
 *
 * The decoder is split by what it reads (modules_internal.h): member readers
 * (modules_read.c), sac_stats (modules_sac_stats.c), the order lists and
 * tree (modules_tree.c), mod_stats and the entry points (modules.c).
 */
#ifndef PARTD_MODULES_H
#define PARTD_MODULES_H

#include <stdint.h>

#include <jansson.h>

#include "partd/model.h"
#include "partd/problem.h"
#include "partd/strtab.h"

/* PyTorch's SACStats of one module: per-op runtimes and saved memory. */
typedef struct partd_sac_stats {
    uint32_t n_ops;
    uint32_t *func_names;          /* string ids, n_ops */
    double *runtimes;              /* ms, n_ops */
    int64_t *memory;               /* bytes, n_ops */
    uint32_t n_view_like, n_rand, n_saved_autograd, n_inplace;
    uint32_t *view_like_ops;       /* op indices */
    uint32_t *rand_ops;
    uint32_t *saved_autograd_ops;
    uint32_t *inplace_op;          /* n_inplace pairs (op, parent) */
    uint32_t *inplace_parent;
    int force_store_random;
} partd_sac_stats;

/* One entry of mod_stats (PyTorch's ModStats). Bytes are int64, times ms. */
typedef struct partd_module {
    uint32_t fqn;                  /* string id */
    uint32_t request_index;        /* position in mod_stats, for pointers */
    int64_t param_per_module, grad_per_module, grad_total;
    int64_t act_fw_per_module, act_bw_per_module, act_grad_per_module;
    int64_t act_total, input_per_module, output_per_module;
    double fw_runtime_per_module, bw_runtime_per_module;
    int is_leaf;
    double sac_runtime;
    int64_t sac_memory;
    uint32_t n_segments;
    double *slopes, *intercepts;   /* n_segments each */
    uint32_t n_breakpoints;
    double *breakpoints;
    partd_sac_stats *sac_stats;    /* NULL when absent */

    /* Tree, from the fqns (module indices, i.e. forward pre-order). */
    uint32_t parent;               /* nearest strict ancestor, PARTD_NONE for the root */
    uint32_t post_pos;             /* position in fw_post_order */
} partd_module;

typedef struct partd_modules {
    uint32_t n;
    partd_module *mods;            /* in fw_pre_order; mods[0] is the root */
    uint32_t *post_order;          /* module indices in fw_post_order */
    uint32_t *by_fqn;              /* module indices by ascending fqn string id */
} partd_modules;

int partd_modules_decode(json_t *modules, partd_strtab *strings,
                         partd_problem *problem, struct partd_modules **out,
                         char **canonical);

void partd_modules_free(struct partd_modules *m);

/* Index of the module named `fqn` (a string id of the same table), or
 * PARTD_NONE. O(log n). */
uint32_t partd_modules_find(const partd_modules *m, uint32_t fqn);

/* 1 when module `anc` is a strict ancestor of module `desc`. */
int partd_modules_is_ancestor(const partd_modules *m, uint32_t anc,
                              uint32_t desc);

#endif
