/*
 * decode.h - request JSON -> partd_request, with every contract rule checked.
 *
 * The body is parsed by jansson with JSON_REJECT_DUPLICATES, converted into
 * the arrays of model.h, validated (types, ranges, references, cycles,
 * unknown members outside `meta`), topologically ordered, and hashed
 * (graph_hash, cache_key). The JSON tree is freed before returning.
 *
 * Errors:
 *   PARTD_EMALFORMED  not JSON (problem status 400, position in the detail)
 *   PARTD_EINVALID    contract violations (422), every one reported with its
 *                     JSON Pointer, up to PARTD_PROBLEM_MAX_ERRORS
 *   PARTD_ETOOBIG     over a limit in `limits` (422, naming the figure)
 *   PARTD_ENOMEM
 * On success *out owns a new request (free with partd_request_free).
 */
#ifndef PARTD_DECODE_H
#define PARTD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "problem.h"

typedef struct partd_decode_limits {
    uint32_t max_nodes;        /* 0 = no limit */
    uint32_t max_devices;      /* 0 = no limit */
    uint64_t max_model_bytes;  /* estimated decoded size; 0 = no limit */
} partd_decode_limits;

int partd_request_decode(const char *body, size_t len,
                         const partd_decode_limits *limits, /* NULL = none */
                         partd_request **out, partd_problem *problem);

/* The same, a piece at a time. partd_decoder_new returns NULL on ENOMEM;
 * problem is filled by feed and finish. feed returns PARTD_OK to go on, or
 * PARTD_EMALFORMED / PARTD_ENOMEM as soon as the body is known to be
 * refused (then every later feed returns the same and does nothing);
 * finish returns what partd_request_decode returns. */
typedef struct partd_decoder partd_decoder;
partd_decoder *partd_decoder_new(const partd_decode_limits *limits, partd_problem *problem);
int partd_decoder_feed(partd_decoder *d, const char *chunk, size_t len);
int partd_decoder_finish(partd_decoder *d, partd_request **out);
void partd_decoder_free(partd_decoder *d);

/* Estimated bytes of the decoded model (for --max-model-bytes). */
uint64_t partd_request_model_bytes(const partd_request *req);

#endif
