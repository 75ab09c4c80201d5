/*
 * show.h - `partd show`'s renderers: the picture (SVG) and the table (text)
 * of a plan, made from its result document alone.
 *
 * Both functions parse the result (a JSON document as `partd plan` and
 * GET /v1/jobs/{id}/result give it) and append the rendering to `out`,
 * which the caller owns (buf.h). The bytes depend on the result only: fixed
 * number formatting, no locale, no clock, so the same result always gives
 * the same picture (the daemon serves these bytes at
 * GET /v1/jobs/{id}/plan.svg).
 *
 * Errors: PARTD_OK; PARTD_EMALFORMED when the input is not JSON;
 * PARTD_EINVALID when it is JSON but not a result document; PARTD_ENOMEM.
 * On error `err` (errcap bytes, may be 0) holds one sentence that names what
 * is wrong, a member by JSON Pointer where there is one
 * ("/partitions/2/memory_bytes is missing"), and `out` may hold a partial
 * rendering that the caller discards.
 */
#ifndef PARTD_SHOW_H
#define PARTD_SHOW_H

#include <stddef.h>

#include "core/buf.h"

int partd_show_svg(const char *result_json, size_t len, partd_buf *out, char *err,
                   size_t errcap);
int partd_show_text(const char *result_json, size_t len, partd_buf *out, char *err,
                    size_t errcap);

#endif
