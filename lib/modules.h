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
 * Ownership: *out is a new model owned by the caller (partd_modules_free);
 * *canonical a malloc'd canonical JSON text of the object (sorted keys,
 * compact) for graph_hash. Both NULL on failure.
 * Errors: PARTD_EINVALID (problem filled), PARTD_ENOMEM.
 */
#ifndef PARTD_MODULES_H
#define PARTD_MODULES_H

#include <jansson.h>

#include "model.h"
#include "problem.h"
#include "strtab.h"

struct partd_modules;

int partd_modules_decode(json_t *modules, partd_strtab *strings,
                         partd_problem *problem, struct partd_modules **out,
                         char **canonical);

void partd_modules_free(struct partd_modules *m);

#endif
