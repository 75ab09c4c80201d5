/*
 * problem.h - RFC 9457 problem documents.
 *
 * A partd_problem collects what went wrong with a request: an HTTP status, a
 * type URI, a title, a detail sentence and up to PARTD_PROBLEM_MAX_ERRORS
 * `{pointer, message}` entries (JSON Pointer into the request). Errors beyond
 * the cap are counted in `dropped` and mentioned in the detail.
 *
 * Ownership: the struct owns every string in it; partd_problem_free() releases
 * them. All functions tolerate allocation failure by dropping the entry
 * (a problem document must never be the reason a request crashes).
 * Errors: partd_problem_add() returns PARTD_OK or a PARTD_E* code (partd.h)
 * that callers may ignore (the entry is counted in `dropped` either way);
 * the serialisers return a malloc'd string, or NULL when memory runs out.
 */
#ifndef PARTD_PROBLEM_H
#define PARTD_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_PROBLEM_MAX_ERRORS 100

typedef struct partd_problem_error {
    char *pointer; /* JSON Pointer, "" for the whole document */
    char *message;
} partd_problem_error;

/* An RFC 9457 extension member with an integer value, e.g. a SAC failure's
 * min_peak_memory_bytes. The name is a string literal (not copied). */
#define PARTD_PROBLEM_MAX_MEMBERS 4
typedef struct partd_problem_member {
    const char *name;
    int64_t value;
} partd_problem_member;

typedef struct partd_problem {
    int status;    /* HTTP status: 400, 413, 422, ...; 0 until set */
    char *type;    /* URI, e.g. "urn:partd:problem:invalid-request" */
    char *title;
    char *detail;
    partd_problem_error errors[PARTD_PROBLEM_MAX_ERRORS];
    uint32_t n_errors;
    uint32_t dropped; /* errors past the cap */
    partd_problem_member members[PARTD_PROBLEM_MAX_MEMBERS];
    uint32_t n_members; /* serialised after "detail", in the order set */
} partd_problem;

void partd_problem_init(partd_problem *p);
void partd_problem_free(partd_problem *p);

/* Sets status, type (slug appended to "urn:partd:problem:"), title and a
 * printf-style detail. Replaces earlier values. */
void partd_problem_set(partd_problem *p, int status, const char *type_slug,
                       const char *title, const char *detail_fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Appends one error. `pointer` is copied verbatim (build it with
 * partd_pointer_*). Returns PARTD_OK, or PARTD_ETOOBIG when the cap was
 * reached / PARTD_ENOMEM when a copy failed (the entry is counted in
 * `dropped`). */
int partd_problem_add(partd_problem *p, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the integer extension member `name` (a string literal), replacing an
 * earlier value; a member past PARTD_PROBLEM_MAX_MEMBERS is dropped (-1). */
int partd_problem_set_int(partd_problem *p, const char *name, int64_t value);

/* A byte count for people, as `partd show` writes it: "512 B", "1.04 GiB",
 * "576 KiB" (three significant digits, binary units up to TiB, no locale).
 * Messages use it; where a program needs the exact count, it goes in an
 * extension member (partd_problem_set_int). Returns out. */
#define PARTD_PROBLEM_BYTES_CAP 48
const char *partd_problem_bytes(char out[PARTD_PROBLEM_BYTES_CAP], double bytes);

/* The exact figures of a memory shortfall, as extension members:
 * memory_bytes (what the stage or rank needs), device_memory_bytes (what
 * its device has) and short_bytes (the difference), for the message that
 * says them in partd_problem_bytes' words. */
void partd_problem_set_shortfall(partd_problem *p, int64_t needs, int64_t has);

/* True once the cap is reached: validators may stop early. */
int partd_problem_full(const partd_problem *p);

/* Serialises as application/problem+json (keys in a fixed order, compact,
 * newline-terminated). Returns a malloc'd NUL-terminated string (caller
 * frees), or NULL when memory runs out. */
char *partd_problem_to_json(const partd_problem *p, size_t *len);

/* json_dumps(doc, flags) followed by a newline: the shape of every document
 * partd writes. Takes a reference to doc. NULL on ENOMEM. */
struct json_t;
char *partd_problem_json_dump_line(struct json_t *doc, size_t flags, size_t *len);

/* json_dumps(doc, flags), but NULL whenever an allocation failed on the way:
 * jansson's own json_dumps can return a document with an object key left
 * out when growing its buffer fails. Use this for every dump. */
char *partd_problem_json_dumps(const struct json_t *doc, size_t flags);

/* Appends "/" + escaped(token) (RFC 6901: "~" -> "~0", "/" -> "~1") to the
 * pointer in buf (NUL-terminated, capacity cap). Truncates safely. */
void partd_problem_pointer_append(char *buf, size_t cap, const char *token);
void partd_problem_pointer_append_index(char *buf, size_t cap, size_t index);

#endif
