/*
 * json_read.h - typed reading of request members, with errors by JSON Pointer.
 *
 * The request decoder (decode_*.c) and the graph.modules decoder
 * (modules.c) read their small jansson trees through these helpers, and the
 * nodes, streamed without a tree, through the partd_scalar_* getters under
 * them, so that every part checks members the same way and words its errors
 * the same way. The unit owns:
 *   - building the JSON Pointer of a child member or index (no printf: the
 *     decoder builds one for every member of every node);
 *   - rejecting members outside an allowed list (`meta` optionally allowed),
 *     naming the known member nearest an unknown one;
 *   - the English name of a JSON type, for "must be X, not <type>";
 *   - typed value getters: objects, arrays, strings, names (interned),
 *     byte counts, bounded integers, bounded finite numbers, booleans and
 *     enumerations.
 * What a member means, and what is required where, stays with the decoders.
 *
 * Errors: a getter that finds a bad value adds one error to the reader's
 * problem, at the pointer it was given (the offending member), and returns
 * PARTD_EINVALID (partd.h; or NULL / PARTD_STR_NONE as stated); on success
 * it returns PARTD_OK and writes *out. Nothing is written to *out on failure. Interning a name can
 * run out of memory: that is reported at the member too and sets `oom`, so a
 * decoder that must answer ENOMEM instead can tell.
 *
 * Ownership: the reader borrows its problem and string table; nothing here
 * allocates except the string table when a name is interned.
 */
#ifndef PARTD_JSON_READ_H
#define PARTD_JSON_READ_H

#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "partd/problem.h"
#include "partd/strtab.h"

/* Capacity of a pointer buffer: room for a path with a name of
 * PARTD_NAME_MAX_BYTES in it; partd_problem_pointer_append truncates anything
 * longer rather than overflow. */
#define PARTD_POINTER_CAP 1200
/* Names (nodes, devices, modules, parameters) are at most this long. */
#define PARTD_NAME_MAX_BYTES 1024
/* Bytes are JSON integers up to 2^53, the largest every JSON reader keeps
 * exact. */
#define PARTD_MAX_BYTES (INT64_C(1) << 53)

typedef struct partd_reader {
    partd_problem *pb;      /* errors are added here */
    partd_strtab *strings;  /* names are interned here */
    int oom;                /* set once an allocation failed */
} partd_reader;

/* out = base + "/" + escaped(member), or base + "/" + i; out and base hold
 * PARTD_POINTER_CAP bytes and may not overlap. Inline: these run for every
 * member of every node. */
static inline void partd_pointer_member(char *out, const char *base, const char *member)
{
    size_t n = strnlen(base, PARTD_POINTER_CAP - 1);
    memcpy(out, base, n);
    out[n] = '\0';
    partd_problem_pointer_append(out, PARTD_POINTER_CAP, member);
}

static inline void partd_pointer_index(char *out, const char *base, size_t i)
{
    size_t n = strnlen(base, PARTD_POINTER_CAP - 1);
    memcpy(out, base, n);
    out[n] = '\0';
    partd_problem_pointer_append_index(out, PARTD_POINTER_CAP, i);
}

/* "an object", "an array", "a string", "an integer", "a number",
 * "a boolean", "null". */
const char *partd_json_read_type_name(const json_t *v);
const char *partd__json_read_type_word(json_type type);

/* One JSON value as the getters see it, without a json_t: the streaming
 * decoder (decode_stream.h) reads node members from parser events and
 * words their errors through the partd_scalar_* getters below, which the
 * json_t getters call too, so both paths say exactly the same thing. For an
 * object or array only `type` is set (the getters never look inside). */
typedef struct partd_scalar {
    json_type type;
    const char *s;  /* JSON_STRING: the bytes, NUL-terminated */
    size_t len;     /* JSON_STRING: their number */
    json_int_t i;   /* JSON_INTEGER */
    double d;       /* JSON_REAL */
} partd_scalar;

const char *partd__json_read_scalar_short(partd_reader *r, const partd_scalar *v, const char *ptr);
uint32_t partd__json_read_scalar_name(partd_reader *r, const partd_scalar *v, const char *ptr);
int partd__json_read_scalar_bytes(partd_reader *r, const partd_scalar *v, const char *ptr, int64_t min,
                       int64_t *out);
/* An integral number in [min, max] (graph.batch_size, read as it streams). */
int partd__json_read_scalar_int(partd_reader *r, const partd_scalar *v, const char *ptr, int64_t min,
                                int64_t max, int64_t *out);
int partd__json_read_scalar_number(partd_reader *r, const partd_scalar *v, const char *ptr, double min,
                        int min_exclusive, double max, double *out);
int partd__json_read_scalar_enum(partd_reader *r, const partd_scalar *v, const char *ptr,
                      const char *const *names, int *out);
/* PARTD_OK when v has the type, else "must be <what>, not <type>". */
int partd__json_read_scalar_expect(partd_reader *r, const partd_scalar *v, const char *ptr, json_type type,
                        const char *what);

/* Reports "unknown member" at ptr for the member `key`, adding "; did you
 * mean \"x\"?" when one of `known` (NULL-terminated) is near it: the same
 * name but for case, at most 2 edits away (letters inserted, deleted,
 * changed or two swapped; fewer for short names, so that "id" is not taken
 * for "op"), or the start of it before an underscore ("latency" for
 * "latency_ms"). The nearest wins, the first listed among equals. */
void partd_json_read_unknown(partd_problem *pb, const char *ptr, const char *key,
                             const char *const *known);

/* Reports "unknown member" for each member of obj (at base) not in
 * `allowed` (NULL-terminated), with partd_json_read_unknown's hint. With
 * allow_meta, a member `meta` is allowed too and must be an object (its
 * content is never read). */
void partd_json_read_reject_unknown(partd_reader *r, json_t *obj, const char *base,
                               const char *const *allowed, int allow_meta);

/* The member `key` of obj (at base); ptr receives its pointer either way
 * (PARTD_POINTER_CAP bytes). NULL with "is required" reported when absent. */
json_t *partd_json_read_required(partd_reader *r, json_t *obj, const char *base,
                            const char *key, char *ptr);

/* Type checks: PARTD_OK, or PARTD_EINVALID with "must be <what>, not
 * <type>" reported. `what` NULL means "an object" / "an array"; a caller
 * passes a longer phrase ("an array of node names") where that helps the
 * client. */
int partd_json_read_object(partd_reader *r, json_t *v, const char *ptr, const char *what);
int partd_json_read_array(partd_reader *r, json_t *v, const char *ptr, const char *what);

/* The string's bytes (NUL-terminated, json_string_length long), or NULL
 * with an error. */
const char *partd_json_read_string(partd_reader *r, json_t *v, const char *ptr);

/* A string of at most PARTD_NAME_MAX_BYTES bytes, not interned (graph.name,
 * an fqn to look up): its bytes, or NULL with an error ("must be a
 * string", "is N bytes long; names are at most 1024 bytes"). */
const char *partd_json_read_short(partd_reader *r, json_t *v, const char *ptr);

/* A name: a non-empty string of at most PARTD_NAME_MAX_BYTES bytes without
 * U+0000, interned. Returns its id, or PARTD_STR_NONE with an error. */
uint32_t partd_json_read_name(partd_reader *r, json_t *v, const char *ptr);

/* 1 and *out = the value when v is an integral JSON number: an integer, or
 * a real without a fraction (4096.0, 4.096e3) within +-2^62; else 0. The
 * contract takes `4096.0` wherever an integer is expected. */
int partd_json_read_integral(const json_t *v, int64_t *out);

/* A byte count: an integral JSON number (partd_json_read_integral) in
 * [min, 2^53]; min may be -2^53 for a difference of two byte counts. A
 * fraction is reported as "an integer is needed". */
int partd_json_read_bytes(partd_reader *r, json_t *v, const char *ptr, int64_t min,
                     int64_t *out);

/* An integral JSON number (partd_json_read_integral) in [min, max]. */
int partd_json_read_int(partd_reader *r, json_t *v, const char *ptr, int64_t min,
                   int64_t max, int64_t *out);

/* A finite number in [min, max], or (min, max] with min_exclusive. */
int partd_json_read_number(partd_reader *r, json_t *v, const char *ptr, double min,
                      int min_exclusive, double max, double *out);

/* true or false, as 1 or 0. */
int partd_json_read_bool(partd_reader *r, json_t *v, const char *ptr, int *out);

/* One of `names` (NULL-terminated): *out is its index. */
int partd_json_read_enum(partd_reader *r, json_t *v, const char *ptr,
                    const char *const *names, int *out);

#endif
