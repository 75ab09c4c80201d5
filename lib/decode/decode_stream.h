/*
 * decode_stream.h - the reading layer of the request decoder: JSON text in
 * chunks -> typed events, with exactly the syntax jansson accepts.
 *
 * Parser: yajl 2 (Debian libyajl-dev). Chosen because it is maintained and
 * packaged in Debian, because yajl_parse is an incremental push parser (the
 * body goes in chunk by chunk as it arrives, nothing is buffered beyond a
 * token split between chunks), because it validates UTF-8 and never builds
 * a DOM, and because its number callback hands over the raw text, so a
 * number can be converted with jansson's rules exactly.
 *
 * What this unit adds so that a body is malformed (400) exactly when
 * json_loadb(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY) refuses it:
 *   - a raw pre-scan of every chunk for what yajl lets through: overlong or
 *     surrogate UTF-8 and code points above U+10FFFF, the escapes \u0000
 *     and unpaired surrogates, and \v or \f between tokens;
 *   - duplicate keys in every object (a linear scan while an object is
 *     small, a hash set once it grows, so a huge object stays linear);
 *   - jansson's nesting limit (JSON_PARSER_MAX_DEPTH: no value may start
 *     inside 2048 open containers);
 *   - numbers: an integer literal (no '.', 'e', 'E') must fit json_int_t,
 *     a real must not overflow.
 *
 * Events go to a handler. When a value starts the handler chooses: descend
 * into it (containers: its keys, values and end are delivered), skip it
 * (checked, not delivered), or build it as a jansson value (delivered whole
 * through `built`, for the small parts of a request).
 *
 * Every byte costs about the same however the body is cut into chunks: a
 * token cut by a chunk's end (a long string sent in many pieces) is held
 * here and handed to yajl whole, as yajl would lex it again from its start
 * with every chunk.
 *
 * Errors: partd__decode_stream_feed/finish return PARTD_OK, PARTD_EMALFORMED (the
 * detail from partd__decode_stream_error says what and where: line, column and
 * byte offset), PARTD_ECANCELLED or PARTD_ETIMEOUT (the cancel set with
 * partd__decode_stream_set_cancel) or PARTD_ENOMEM (any allocation, yajl's own
 * included: yajl does not check its allocations, so its allocator leaves the
 * parse by longjmp and the stream frees what yajl held, decode_yajl.c). After a failure
 * every call returns the same code.
 *
 * Ownership: a stream owns its parser and buffers; a built value belongs to
 * the handler from the call on.
 */
#ifndef PARTD_DECODE_STREAM_H
#define PARTD_DECODE_STREAM_H

#include <stddef.h>

#include <stdint.h>

#include <jansson.h>

#include "json_read.h"
#include "partd/cancel.h"

/* jansson's JSON_PARSER_MAX_DEPTH (jansson_config.h). */
#define PARTD_JSON_MAX_DEPTH 2048

typedef enum partd_js_action {
    PARTD_JS_DESCEND, /* containers: deliver the content; scalars: taken */
    PARTD_JS_SKIP,    /* check the value, deliver nothing more of it */
    PARTD_JS_BUILD,   /* build it as a json_t and hand it to `built` */
    PARTD_JS_NOMEM    /* the handler ran out of memory: stop */
} partd_js_action;

typedef struct partd_js_handler {
    /* A value starts: a whole scalar, or only the type of a container. */
    partd_js_action (*value)(void *ctx, const partd_scalar *v);
    /* A key of a descended object (NUL-terminated). 0, or -1 out of memory. */
    int (*key)(void *ctx, const char *key, size_t len);
    /* The end of a descended container. 0, or -1 out of memory. */
    int (*end)(void *ctx);
    /* A value built on request; the handler owns it. 0, or -1. */
    int (*built)(void *ctx, json_t *v);
} partd_js_handler;

typedef struct partd_jstream partd_jstream;

/* NULL when memory runs out. */
partd_jstream *partd__decode_stream_new(const partd_js_handler *h, void *ctx);
void partd__decode_stream_free(partd_jstream *s);

int partd__decode_stream_feed(partd_jstream *s, const char *chunk, size_t len);
/* The end of the text: PARTD_OK when it was one complete JSON value. */
int partd__decode_stream_finish(partd_jstream *s);

/* From now on the parse stops (PARTD_ECANCELLED or PARTD_ETIMEOUT from
 * every call) once `cancel` (borrowed; NULL: never) says so: checked at
 * every chunk and every 4,096 values inside one (decode_events.c). */
void partd__decode_stream_set_cancel(partd_jstream *s, const partd_cancel *cancel);

/* What the stream has cost so far, for tests that count work. */
typedef struct partd_jstream_stats {
    uint64_t parsed;     /* bytes handed to yajl */
    uint64_t relexed;    /* bytes yajl lexed again: a token it held
                            unfinished, read anew with each text after */
    uint64_t held;       /* bytes copied to hand a cut token over whole */
    uint64_t nul_walked; /* bytes read to place NULs (decode_scan.h) */
} partd_jstream_stats;
void partd__decode_stream_stats(const partd_jstream *s, partd_jstream_stats *out);

/* After PARTD_EMALFORMED: what is wrong and where ("duplicate object key
 * \"a\" (line 1, column 20, byte 19)"). */
const char *partd__decode_stream_error(const partd_jstream *s);

#endif
