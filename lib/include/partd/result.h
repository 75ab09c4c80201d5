/*
 * result.h - partd_plan -> the contract's result document (JSON).
 *
 * Deterministic: keys in a fixed order, numbers printed the same way on every
 * machine, so the same plan gives byte-identical output. The document is
 * written as a stream (json_out.h), never built whole in memory: writing it
 * costs a fixed amount of memory beyond what the sink keeps. With
 * options.result.detail "summary" the partitions carry no `nodes`, `inputs`
 * and `outputs` and the boundaries no `tensors`.
 *
 * Errors: PARTD_OK or a negative PARTD_E* code (partd.h); see each function.
 */
#ifndef PARTD_RESULT_H
#define PARTD_RESULT_H

#include <stddef.h>

#include "cancel.h"
#include "json_out.h"
#include "model.h"
#include "plan_types.h"

/* Writes the document and its final newline to sink, in chunks. cancel
 * (may be NULL) is checked before the first byte, between partitions and
 * every megabyte; the document may not exceed max_bytes (0 = no limit;
 * the final newline counts), and writing stops at the chunk that would pass
 * it. When summary is not NULL, *summary gets a malloc'd copy of the value
 * of the top-level "summary" member (as written) on success, NULL
 * otherwise. Returns PARTD_OK, PARTD_ECANCELLED / PARTD_ETIMEOUT, PARTD_ETOOBIG,
 * PARTD_ENOMEM, or the sink's own code. The sink may have taken part of the
 * document before a failure; but every allocation except the summary's copy
 * is made before the first byte goes out, so with summary NULL and no
 * bounds only the sink itself can fail once writing has begun. */
int partd_result_write(const partd_request *req, const partd_plan *plan,
                       const partd_cancel *cancel, size_t max_bytes,
                       partd_json_sink sink, void *ctx, char **summary);

/* The document in memory, under the same bounds: the text (malloc'd,
 * NUL-terminated, *len its length) with *rc PARTD_OK, or NULL with *rc as
 * partd_result_write returns it; nothing larger than about max_bytes is
 * allocated. summary as in partd_result_write (may be NULL). */
char *partd_result_render(const partd_request *req, const partd_plan *plan,
                          const partd_cancel *cancel, size_t max_bytes, size_t *len,
                          char **summary, int *rc);

/* The document without bounds: a malloc'd NUL-terminated string (caller
 * frees) or NULL on ENOMEM; *len gets the length when len is not NULL. */
char *partd_result_to_json(const partd_request *req, const partd_plan *plan,
                           size_t *len);

#endif
