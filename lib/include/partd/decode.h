/*
 * decode.h - request JSON -> partd_request, with every contract rule checked.
 *
 * The body is parsed as a stream (decode_stream.h: yajl, with jansson's
 * syntax rules: duplicate keys and nesting beyond 2048 are malformed), fed
 * in chunks of any size as it arrives. graph.nodes goes straight into the
 * arrays of model.h without a tree; the small parts (devices, options,
 * graph.modules) become small jansson trees. Everything is validated
 * (types, ranges, references, cycles, unknown members outside `meta`),
 * topologically ordered, and hashed (graph_hash, cache_key). Errors come
 * out in the same order whatever the order of the members in the body.
 *
 * What a body costs grows linearly with its length however it is cut
 * into chunks and whatever its strings are (decode_stream.h, strtab.h),
 * and the decoder stops when the cancel in its limits says so.
 *
 * Errors:
 *   PARTD_EMALFORMED  not JSON (problem status 400, position in the detail)
 *   PARTD_EINVALID    contract violations (422), every one reported with its
 *                     JSON Pointer, up to PARTD_PROBLEM_MAX_ERRORS
 *   PARTD_ETOOBIG     over a limit in `limits` (422, naming the figure)
 *   PARTD_ECANCELLED  limits->cancel was raised (problem 503, request-cancelled)
 *   PARTD_ETIMEOUT    limits->cancel's deadline passed (problem 408,
 *                     request-timeout)
 *   PARTD_ENOMEM
 * On success *out owns a new request (free with partd_request_free).
 */
#ifndef PARTD_DECODE_H
#define PARTD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "cancel.h"
#include "model.h"
#include "problem.h"

typedef struct partd_decode_limits {
    uint32_t max_nodes;        /* 0 = no limit */
    uint32_t max_devices;      /* 0 = no limit */
    uint64_t max_model_bytes;  /* estimated decoded size; 0 = no limit */
    /* Stops the decoder (borrowed; NULL = never): raised or past its
     * deadline, the next feed or finish returns PARTD_ECANCELLED or
     * PARTD_ETIMEOUT. Looked at on every chunk, every 4,096 values inside
     * one, and every 65,536 nodes of finish's longer passes, so that
     * decoding stops within milliseconds. It must outlive the decoder. */
    const partd_cancel *cancel;
} partd_decode_limits;

/* A decoder for one body. NULL on ENOMEM. `problem` (borrowed) is filled
 * by feed and finish; `limits` (copied) may be NULL. */
typedef struct partd_decoder partd_decoder;
partd_decoder *partd_request_decoder_new(const partd_decode_limits *limits, partd_problem *problem);

/* Feeds the next bytes of the body. PARTD_OK to go on; PARTD_EMALFORMED
 * (400 problem filled), PARTD_ECANCELLED, PARTD_ETIMEOUT or PARTD_ENOMEM
 * (503) as soon as the body is known to be rejected or decoding must stop;
 * after a failure further feeds return the same code and do nothing. */
int partd_request_decoder_feed(partd_decoder *d, const char *chunk, size_t len);

/* The end of the body: returns what partd_request_decode returns for the
 * whole body (below). */
int partd_request_decoder_finish(partd_decoder *d, partd_request **out);
void partd_request_decoder_free(partd_decoder *d);

/* The whole body at once: new + feed + finish. */
int partd_request_decode(const char *body, size_t len,
                         const partd_decode_limits *limits, /* NULL = none */
                         partd_request **out, partd_problem *problem);

/* Releases a request and everything it owns; NULL is a no-op. */
void partd_request_free(partd_request *req);

/* Estimated bytes of the decoded model (for --max-model-bytes). */
uint64_t partd_request_model_bytes(const partd_request *req);

#endif
