/*
 * json_out.h - a streaming writer of compact JSON.
 *
 * Owns the formatting of documents too large to build as a jansson DOM (the
 * result document, result.c): the caller emits keys and values in order and
 * the bytes leave in chunks of at most PARTD_JSON_OUT_CHUNK through a sink
 * callback, so the writer itself holds a fixed amount of memory whatever
 * the size of the document.
 *
 * The text is byte for byte what jansson's json_dumps() prints for the same
 * document with JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)
 * (no JSON_ENSURE_ASCII): strings escape only '"', '\\' and the control
 * characters below 0x20 (\b \f \n \r \t by name, the others as \u00XX in
 * upper-case hex), UTF-8 passes through; integers print as "%lld"; reals as
 * jansson's jsonp_dtostr with 15 significant digits ("%.15g", ".0" appended
 * when the text has neither '.' nor 'e', the exponent without '+' and
 * without leading zeros). Strings must be valid UTF-8 (the request decoder
 * guarantees it for every name partd prints).
 *
 * Errors: the first failure is kept (o->rc) and every later call is a no-op
 * that returns it, so a caller may emit a whole document and check once.
 * Failures are the sink's own code (a negative PARTD_E* code: a size cap, a
 * cancelled job, a write error), PARTD_ENOMEM (capture), PARTD_EINTERNAL (a
 * non-finite real, which JSON cannot hold; jansson refuses them too) or one
 * set by the caller with partd_json_out_fail().
 *
 * Ownership: the writer owns only its capture buffer (released by
 * partd_json_out_release); partd_json_out_capture_end hands a malloc'd copy to
 * the caller.
 */
#ifndef PARTD_JSON_OUT_H
#define PARTD_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_JSON_OUT_CHUNK 16384

/* Takes len bytes (len > 0); PARTD_OK or a negative PARTD_E* code that
 * stops the document. */
typedef int (*partd_json_sink)(const char *data, size_t len, void *ctx);

typedef struct partd_json_out {
    partd_json_sink sink;
    void *ctx;
    int rc;               /* first failure, PARTD_OK while none */
    int comma;            /* a ',' is due before the next key or value */
    uint64_t flushed;     /* bytes the sink has taken */
    size_t len;           /* bytes waiting in buf */
    int capturing;
    char *capture;        /* a copy of what was written since capture_start */
    size_t capture_len, capture_cap;
    char buf[PARTD_JSON_OUT_CHUNK];
} partd_json_out;

void partd_json_out_init(partd_json_out *o, partd_json_sink sink, void *ctx);

/* Hands the buffered bytes to the sink; returns o->rc. */
int partd_json_out_flush(partd_json_out *o);

/* Records rc (a negative code) as the failure, unless one is recorded. */
int partd_json_out_fail(partd_json_out *o, int rc);

/* Bytes emitted so far (handed to the sink or waiting). */
uint64_t partd_json_out_bytes(const partd_json_out *o);

/* Frees the capture buffer. */
void partd_json_out_release(partd_json_out *o);

int partd_json_out_begin_object(partd_json_out *o);
int partd_json_out_end_object(partd_json_out *o);
int partd_json_out_begin_array(partd_json_out *o);
int partd_json_out_end_array(partd_json_out *o);

/* An object member's key; its value is the next value emitted. */
int partd_json_out_key(partd_json_out *o, const char *key);

int partd_json_out_string(partd_json_out *o, const char *s);
int partd_json_out_int(partd_json_out *o, int64_t v);
int partd_json_out_real(partd_json_out *o, double v);
int partd_json_out_bool(partd_json_out *o, int v);

/* A complete JSON value already in text (e.g. a small jansson DOM dumped
 * beforehand with the flags above), copied as one value of the document. */
int partd_json_out_verbatim(partd_json_out *o, const char *text, size_t len);

/* Bytes copied verbatim, outside the JSON grammar (a final newline). */
int partd_json_out_raw(partd_json_out *o, const char *data, size_t len);

/* Keeps a copy of every byte emitted from now until capture_end, which
 * returns it (malloc'd, NUL-terminated, *len its length) or NULL when the
 * writer has failed (o->rc says why; PARTD_ENOMEM when the copy could not
 * grow). */
void partd_json_out_capture_start(partd_json_out *o);
char *partd_json_out_capture_end(partd_json_out *o, size_t *len);

/* jansson's text of a real with 15 significant digits into buf (at least
 * 32 bytes): its length, or -1 for NaN and the infinities. */
int partd_json_out_format_real(double v, char *buf);

#endif
