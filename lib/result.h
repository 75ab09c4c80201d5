/*
 * result.h - partd_plan -> the contract's result document (JSON).
 *
 * Deterministic: keys in a fixed order, numbers printed the same way on every
 * machine, so the same plan gives byte-identical output.
 * partd_result_to_json returns a malloc'd NUL-terminated string (caller
 * frees) or NULL on ENOMEM; *len gets the length when len is not NULL.
 */
#ifndef PARTD_RESULT_H
#define PARTD_RESULT_H

#include <stddef.h>

#include "cancel.h"
#include "model.h"
#include "plan_types.h"

char *partd_result_to_json(const partd_request *req, const partd_plan *plan,
                           size_t *len);

/* The same bytes, made under a job's bounds: cancel (may be NULL) is
 * checked before and after the document is built and every megabyte while
 * it is written, and the text may not exceed max_bytes (0 = no limit).
 * Returns the text (*len its length) with *rc PARTD_OK, or NULL with *rc
 * PARTD_ECANCELLED / PARTD_ETIMEOUT (cancel), PARTD_ETOOBIG (over
 * max_bytes; nothing larger than about max_bytes was allocated) or
 * PARTD_ENOMEM. */
char *partd_result_render(const partd_request *req, const partd_plan *plan,
                          const partd_cancel *cancel, size_t max_bytes, size_t *len, int *rc);

#endif
