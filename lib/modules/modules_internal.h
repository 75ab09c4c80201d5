/*
 * modules_internal.h - the graph.modules decoder's own interface between its
 * files (not used outside modules*.c):
 *   modules_read.c       required-member readers for module_info (every
 *                        member is required), over json_read.h
 *   modules_sac_stats.c  one module's sac_stats: per-op names, costs and
 *                        op-index lists
 *   modules_tree.c       the fqn map, the four mod_order lists and the
 *                        assembled tree (pre/post order, parents, root check)
 *   modules.c            mod_stats entries and the entry points (modules.h)
 *
 * Errors: as json_read.h, every int function returns PARTD_OK, or
 * PARTD_EINVALID after reporting each violation at its JSON Pointer in the
 * reader's problem; an allocation failure sets the reader's `oom` (and
 * returns PARTD_EINVALID: the entry point then answers PARTD_ENOMEM).
 * Functions that allocate say who owns the result.
 */
#ifndef PARTD_MODULES_INTERNAL_H
#define PARTD_MODULES_INTERNAL_H

#include <stdint.h>

#include <jansson.h>

#include "decode/json_read.h"
#include "modules.h"
#include "partd/partd.h"

/* ---- modules_read.c ---- */

/* Adds an error at `pointer` with a printf-formatted message. */
void partd__modules_report(partd_reader *d, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The getters read the required member `key` of obj (at base), reporting it
 * when absent. */
int partd__modules_get_bytes(partd_reader *d, json_t *obj, const char *base, const char *key,
                       int64_t min, int64_t *out);
/* A finite number; `nonneg` also requires >= 0 (times). */
int partd__modules_number_value(partd_reader *d, json_t *v, const char *ptr, int nonneg,
                          double *out);
int partd__modules_get_number(partd_reader *d, json_t *obj, const char *base, const char *key,
                        int nonneg, double *out);
int partd__modules_get_bool(partd_reader *d, json_t *obj, const char *base, const char *key,
                      int *out);
/* An array member; NULL (reported) when missing or not an array. ptr
 * receives its pointer (PARTD_POINTER_CAP bytes). */
json_t *partd__modules_get_array(partd_reader *d, json_t *obj, const char *base,
                           const char *key, char *ptr);
/* A list of numbers into a new array the caller frees (*out NULL for an
 * empty list; set even when an entry was bad). */
int partd__modules_get_numbers(partd_reader *d, json_t *obj, const char *base,
                         const char *key, int nonneg, double **out, uint32_t *n);

/* ---- modules_sac_stats.c ---- */

/* Decodes sac_stats at base into a new *out (caller frees with
 * partd__modules_sac_stats_free, also after -1: *out may be partly filled). */
int partd__modules_decode_sac_stats(partd_reader *d, json_t *obj, const char *base,
                              partd_sac_stats **out);
void partd__modules_sac_stats_free(partd_sac_stats *s);

/* ---- modules_tree.c ---- */

typedef struct partd_mi_fqn_entry {
    uint32_t fqn;   /* string id */
    uint32_t index; /* position in mod_stats */
} partd_mi_fqn_entry;

/* Builds the fqn -> mod_stats position map (map: n entries, sorted by fqn
 * id; *n_map of them used); reports duplicate fqns. */
int partd__modules_build_map(partd_reader *d, const partd_module *stats, uint32_t n,
                       partd_mi_fqn_entry *map, uint32_t *n_map);

/* Checks mod_order's four lists are permutations of the mod_stats fqns.
 * pre[k], post[k]: mod_stats positions in forward pre- and post-order;
 * scratch: n entries for the backward lists. */
int partd__modules_decode_orders(partd_reader *d, json_t *modules, const partd_module *stats,
                           uint32_t n, const partd_mi_fqn_entry *map, uint32_t n_map,
                           uint32_t *pre, uint32_t *post, uint32_t *scratch);

/* Moves the modules of stats into out in forward pre-order (stats entries
 * are zeroed: out owns their arrays), links parents and checks that the
 * first module of fw_pre_order is the root: an ancestor of every other one. */
int partd__modules_assemble(partd_reader *d, partd_module *stats, const partd_mi_fqn_entry *map,
                      uint32_t n, const uint32_t *pre, const uint32_t *post,
                      partd_modules *out);

#endif
