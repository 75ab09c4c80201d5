/*
 * encoding.h - content codings of result documents (RFC 9110 section 8.4):
 * compressing a document once into each coding partd serves, and choosing
 * the coding for a request from its Accept-Encoding header.
 *
 * Result documents are large, repetitive JSON (node names) that clients
 * fetch many times, so they are compressed once, when planned, and every
 * coded form is kept beside the document in the store and the cache. The
 * wire figures that motivate it are in README.md ("Performance").
 *
 * Request bodies may come compressed too (Content-Encoding on POST): a
 * 10^6-node graph is ~150 MB of JSON and a tenth of that in gzip.
 *
 * Errors: partd_encoding_encode returns PARTD_OK, PARTD_ENOMEM, or PARTD_EINTERNAL
 * when the compression library fails. partd_encoding_decode returns PARTD_OK,
 * PARTD_ETOOBIG (more than the caller's limit once decoded: a decompression
 * bomb stops there), PARTD_EMALFORMED (not a complete, valid stream) or
 * PARTD_ENOMEM (allocation failed or the grow callback refused). Negotiation
 * cannot fail; a request that accepts none of the available forms gets
 * PARTD_CODING_NONE.
 */
#ifndef PARTD_DAEMON_ENCODING_H
#define PARTD_DAEMON_ENCODING_H

#include <stddef.h>

#include "partd/cancel.h"

/* In the server's order of preference when a client accepts several
 * codings equally: zstd is smaller and cheaper to decode than gzip. */
typedef enum partd_coding {
    PARTD_CODING_IDENTITY = 0,
    PARTD_CODING_ZSTD,
    PARTD_CODING_GZIP,
    PARTD_CODINGS,               /* the number of codings */
    PARTD_CODING_NONE = -1       /* nothing the client accepts (406) */
} partd_coding;

/* One form of a document: malloc'd bytes, or {NULL, 0} when absent. */
typedef struct partd_blob {
    char *data;
    size_t len;
} partd_blob;

/* The coding's token in Content-Encoding ("identity", "zstd", "gzip"). */
const char *partd_encoding_name(partd_coding coding);

/* Compresses in[0..len) into a new malloc'd *out (caller frees) at the level
 * partd uses for the coding. The output is deterministic for the same input:
 * gzip headers carry no name and no time. */
int partd_encoding_encode(partd_coding coding, const char *in, size_t len, partd_blob *out);

/* forms has PARTD_CODINGS elements. Fills forms[PARTD_CODING_ZSTD] and
 * forms[PARTD_CODING_GZIP] from forms[PARTD_CODING_IDENTITY]. A coded form that would not be smaller than
 * the document is left out (absent). On error every coded form is freed. */
int partd_encoding_encode_all(partd_blob *forms);

/* The same under a job's bounds: cancel (NULL: none) is checked between
 * megabytes of input; PARTD_ECANCELLED or PARTD_ETIMEOUT (cancel.h) stop
 * it, with every coded form freed. */
int partd_encoding_encode_all_within(partd_blob *forms, const partd_cancel *cancel);

/* Frees every form of forms[0..PARTD_CODINGS) and clears them. */
void partd_encoding_forms_free(partd_blob *forms);

/* The coding to answer with, from the request's Accept-Encoding (NULL when
 * absent) and the forms available (bit 1 << coding). Follows RFC 9110
 * section 12.5.3: q-values, "*", "x-gzip", and identity acceptable unless
 * excluded by "identity;q=0" or "*;q=0". Among equal q-values the server's
 * preference (enum order) decides. */
partd_coding partd_encoding_negotiate(const char *accept_encoding, unsigned available);

/* The coding a request's Content-Encoding names: PARTD_CODING_IDENTITY when
 * absent, empty or "identity"; PARTD_CODING_GZIP ("gzip", "x-gzip") or
 * PARTD_CODING_ZSTD; PARTD_CODING_NONE for any other coding or a list of
 * several (partd decodes one layer). Case-insensitive. */
partd_coding partd_encoding_parse(const char *content_encoding);

/* Approves growing a decoded body's buffer to new_cap bytes; 0 refuses. */
typedef int (*partd_grow_fn)(void *ctx, size_t new_cap);

/* Decodes in[0..len) (gzip: one or more members; zstd: one or more frames)
 * into a new malloc'd, NUL-terminated out->data of out->len bytes, at most
 * max_out. grow (NULL: always) is asked before every enlargement of the
 * output buffer. On error nothing is left allocated. */
int partd_encoding_decode(partd_coding coding, const char *in, size_t len, size_t max_out,
                 partd_grow_fn grow, void *grow_ctx, partd_blob *out);

#endif
