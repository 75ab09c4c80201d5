/*
 * intake.h - a job's request body on its way in. Each piece that arrives is
 * decompressed (Content-Encoding gzip or zstd), digested when asked (SHA-256,
 * what an Idempotency-Key is checked against), decoded by the streaming request
 * decoder (decode.h) and packed into a zstd frame for the store. Neither the
 * body's plain text nor a JSON tree of it is ever held whole: only the packed
 * frame and the decoded model, and a body that is malformed or too large is
 * known as soon as the piece that makes it so arrives.
 *
 * Also decodes a stored body (packed by this unit, or plain JSON as stored by
 * earlier versions) the same way.
 *
 * Ownership: the intake is the caller's (partd_intake_free); the request and
 * the packed frame handed out by partd_intake_finish become the caller's.
 * Errors come back as PARTD_* codes with the problem document to answer
 * filled (status 400, 413, 422 or 503); see each function.
 */
#ifndef PARTD_DAEMON_INTAKE_H
#define PARTD_DAEMON_INTAKE_H

#include <stddef.h>
#include <stdint.h>

#include "core/encoding.h"
#include "partd/decode.h"
#include "partd/problem.h"

typedef struct partd_intake partd_intake;

typedef struct partd_intake_limits {
    uint64_t max_body_bytes;              /* of the body and of its decoding */
    const partd_decode_limits *decode;    /* may be NULL */
    /* Approves the memory of a body of so many plain bytes (the decoded model
     * and the packed copy grow with it); NULL: always. */
    partd_grow_fn grow;
    void *grow_ctx;
    /* Digest the plain body (only a request with an Idempotency-Key needs
     * it: a replay is checked against it). */
    int digest;
} partd_intake_limits;

/* NULL when out of memory. limits is copied. */
partd_intake *partd_intake_new(partd_coding coding, const partd_intake_limits *limits);

/* Takes the next bytes of the body as sent. Returns PARTD_OK while the body
 * may still be good, else the reason it is refused (it stays refused, and
 * later pieces are only counted): PARTD_ETOOBIG, PARTD_EMALFORMED,
 * PARTD_ENOMEM, or PARTD_ECANCELLED / PARTD_ETIMEOUT when the cancel of the
 * decode limits stopped it (then nothing more is decompressed, digested or
 * decoded). PARTD_EINVALID is never returned here (those errors come at the
 * end). */
int partd_intake_take(partd_intake *in, const char *data, size_t n);

/* Bytes of the body as sent, taken so far. */
uint64_t partd_intake_bytes(const partd_intake *in);

/* The body has ended. First call: the body itself (size, coding); on PARTD_OK
 * digest gets "sha256:"-less hex of the plain body, or "" when the limits did
 * not ask for it. On error the problem is
 * filled: 413 (PARTD_ETOOBIG), 400 (PARTD_EMALFORMED: an undecodable coding),
 * 503 (PARTD_ENOMEM), 408 request-timeout (PARTD_ETIMEOUT) or 503
 * request-cancelled (PARTD_ECANCELLED): the decoder's, see decode.h. */
int partd_intake_end(partd_intake *in, char digest[72], partd_problem *pb);

/* After partd_intake_end succeeded: the decoded request and the packed body
 * for the store. Returns what partd_request_decode returns, with the problem
 * filled on failure (400 malformed JSON, 422, 503). */
int partd_intake_finish(partd_intake *in, partd_request **out, partd_blob *packed,
                        partd_problem *pb);

void partd_intake_free(partd_intake *in);

/* Decodes a body as the store keeps it (a zstd frame or plain JSON) without
 * unpacking it whole: as partd_request_decode. */
int partd_intake_decode_stored(const char *body, size_t len, const partd_decode_limits *limits,
                               partd_request **out, partd_problem *pb);

#endif
