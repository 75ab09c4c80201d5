/*
 * result.h - partd_plan -> the contract's result document (JSON).
 *
 * Deterministic: keys in a fixed order, numbers printed the same way on every
 * machine, so the same plan gives byte-identical output.
 * Returns a malloc'd NUL-terminated string (caller frees) or NULL on ENOMEM;
 * *len gets the length when len is not NULL.
 */
#ifndef PARTD_RESULT_H
#define PARTD_RESULT_H

#include <stddef.h>

#include "model.h"
#include "plan_types.h"

char *partd_result_to_json(const partd_request *req, const partd_plan *plan,
                           size_t *len);

#endif
