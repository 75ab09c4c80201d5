/*
 * json_read.c - typed reading of request members; see json_read.h.
 *
 * Messages name what was expected and what was found ("must be an integer
 * number of bytes, not a string"); the pointer names the member, so the
 * message never repeats it.
 */
#include "json_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "partd/partd.h"

const char *partd__json_read_type_word(json_type type)
{
    switch (type) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

const char *partd_json_read_type_name(const json_t *v)
{
    return partd__json_read_type_word(json_typeof(v));
}

/* The scalar view of v (strings borrowed from v). */
static void scalar_of(const json_t *v, partd_scalar *out)
{
    memset(out, 0, sizeof *out);
    out->type = json_typeof(v);
    if (out->type == JSON_STRING) {
        out->s = json_string_value(v);
        out->len = json_string_length(v);
    } else if (out->type == JSON_INTEGER) {
        out->i = json_integer_value(v);
    } else if (out->type == JSON_REAL) {
        out->d = json_real_value(v);
    }
}

/* Longest name compared for a hint: members are short, and the table
 * below has a row per byte of it. */
#define HINT_MAX 64

/* The optimal string alignment distance of a and b (edits: insert, delete,
 * change a byte, swap two adjacent ones), or HINT_MAX when it is more than
 * 2 or either is longer than HINT_MAX. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > HINT_MAX || m > HINT_MAX || (n > m ? n - m : m - n) > 2)
        return HINT_MAX;
    size_t d[3][HINT_MAX + 1]; /* rows i - 2, i - 1, i, by i mod 3 */
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t *row = d[i % 3], *up = d[(i - 1) % 3], *up2 = d[(i + 1) % 3];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = up[j - 1] + cost;
            if (up[j] + 1 < v)
                v = up[j] + 1;
            if (row[j - 1] + 1 < v)
                v = row[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                up2[j - 2] + 1 < v)
                v = up2[j - 2] + 1;
            row[j] = v;
        }
    }
    return d[n % 3][m] > 2 ? HINT_MAX : d[n % 3][m];
}

/* How near key is to name: 0 the same but for case, 1 or 2 edits, 3 the
 * start of name before an underscore; HINT_MAX not near. */
static size_t nearness(const char *key, const char *name)
{
    size_t n = strlen(name), k = strlen(key);
    if (k == n && strncasecmp(key, name, n) == 0)
        return 0;
    size_t e = edit_distance(key, name);
    if (e != HINT_MAX && 2 * e < n)
        return e;
    if (k >= 3 && k < n && name[k] == '_' && strncmp(key, name, k) == 0)
        return 3;
    return HINT_MAX;
}

void partd_json_read_unknown(partd_problem *pb, const char *ptr, const char *key,
                             const char *const *known)
{
    const char *best = NULL;
    size_t best_score = HINT_MAX;
    for (const char *const *a = known; a && *a; a++) {
        size_t s = nearness(key, *a);
        if (s < best_score) {
            best_score = s;
            best = *a;
        }
    }
    if (best)
        partd_problem_add(pb, ptr, "unknown member; did you mean \"%s\"?", best);
    else
        partd_problem_add(pb, ptr, "unknown member");
}

void partd_json_read_reject_unknown(partd_reader *r, json_t *obj, const char *base,
                               const char *const *allowed, int allow_meta)
{
    const char *key;
    json_t *val;
    char ptr[PARTD_POINTER_CAP];
    json_object_foreach(obj, key, val) {
        int known = 0;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, key) == 0;
        if (known)
            continue;
        partd_pointer_member(ptr, base, key);
        if (allow_meta && strcmp(key, "meta") == 0)
            partd_json_read_object(r, val, ptr, NULL);
        else
            partd_json_read_unknown(r->pb, ptr, key, allowed);
    }
}

json_t *partd_json_read_required(partd_reader *r, json_t *obj, const char *base,
                            const char *key, char *ptr)
{
    json_t *v = json_object_get(obj, key);
    partd_pointer_member(ptr, base, key);
    if (!v)
        partd_problem_add(r->pb, ptr, "is required");
    return v;
}

int partd__json_read_scalar_expect(partd_reader *r, const partd_scalar *v, const char *ptr, json_type type,
                        const char *what)
{
    if (v->type == type)
        return PARTD_OK;
    partd_problem_add(r->pb, ptr, "must be %s, not %s", what, partd__json_read_type_word(v->type));
    return PARTD_EINVALID;
}

static int expect_type(partd_reader *r, json_t *v, const char *ptr, json_type type,
                       const char *what)
{
    partd_scalar sv = {.type = json_typeof(v)};
    return partd__json_read_scalar_expect(r, &sv, ptr, type, what);
}

int partd_json_read_object(partd_reader *r, json_t *v, const char *ptr, const char *what)
{
    return expect_type(r, v, ptr, JSON_OBJECT, what ? what : "an object");
}

int partd_json_read_array(partd_reader *r, json_t *v, const char *ptr, const char *what)
{
    return expect_type(r, v, ptr, JSON_ARRAY, what ? what : "an array");
}

static const char *scalar_string(partd_reader *r, const partd_scalar *v, const char *ptr)
{
    return partd__json_read_scalar_expect(r, v, ptr, JSON_STRING, "a string") == 0 ? v->s : NULL;
}

const char *partd_json_read_string(partd_reader *r, json_t *v, const char *ptr)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return scalar_string(r, &sv, ptr);
}

const char *partd__json_read_scalar_short(partd_reader *r, const partd_scalar *v, const char *ptr)
{
    const char *s = scalar_string(r, v, ptr);
    if (s && v->len > PARTD_NAME_MAX_BYTES) {
        partd_problem_add(r->pb, ptr, "is %zu bytes long; names are at most %d bytes", v->len,
                          PARTD_NAME_MAX_BYTES);
        return NULL;
    }
    return s;
}

const char *partd_json_read_short(partd_reader *r, json_t *v, const char *ptr)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_short(r, &sv, ptr);
}

uint32_t partd__json_read_scalar_name(partd_reader *r, const partd_scalar *v, const char *ptr)
{
    const char *s = scalar_string(r, v, ptr);
    if (!s)
        return PARTD_STR_NONE;
    size_t len = v->len;
    if (len == 0) {
        partd_problem_add(r->pb, ptr, "must not be empty");
        return PARTD_STR_NONE;
    }
    if (!partd__json_read_scalar_short(r, v, ptr))
        return PARTD_STR_NONE;
    /* The string table keeps NUL-terminated strings. */
    if (memchr(s, '\0', len)) {
        partd_problem_add(r->pb, ptr, "must not contain U+0000");
        return PARTD_STR_NONE;
    }
    uint32_t id = partd_strtab_intern(r->strings, s, len);
    if (id == PARTD_STR_NONE) {
        r->oom = 1;
        partd_problem_add(r->pb, ptr, "out of memory while storing the name");
    }
    return id;
}

uint32_t partd_json_read_name(partd_reader *r, json_t *v, const char *ptr)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_name(r, &sv, ptr);
}

/* x in the fewest of 15 or 17 significant digits that read back as x:
 * 1e-308 rather than 9.9999999999999991e-309. */
static const char *number_text(char *buf, size_t cap, double x)
{
    snprintf(buf, cap, "%.15g", x);
    if (strtod(buf, NULL) != x)
        snprintf(buf, cap, "%.17g", x);
    return buf;
}

/* A bound as the contract writes it: 2^53 rather than 9007199254740992. */
static void bound_text(char *buf, size_t cap, int64_t x)
{
    if (x == PARTD_MAX_BYTES || x == -PARTD_MAX_BYTES)
        snprintf(buf, cap, "%s2^53", x < 0 ? "-" : "");
    else
        snprintf(buf, cap, "%lld", (long long)x);
}

static int check_int_range(partd_reader *r, int64_t x, const char *ptr, int64_t min,
                           int64_t max, int64_t *out)
{
    if (x < min || x > max) {
        char lo[24], hi[24];
        bound_text(lo, sizeof lo, min);
        bound_text(hi, sizeof hi, max);
        partd_problem_add(r->pb, ptr, "must be between %s and %s, not %lld", lo, hi,
                          (long long)x);
        return PARTD_EINVALID;
    }
    *out = x;
    return PARTD_OK;
}

static int scalar_integral(const partd_scalar *v, int64_t *out)
{
    if (v->type == JSON_INTEGER) {
        *out = v->i;
        return 1;
    }
    if (v->type != JSON_REAL)
        return 0;
    /* 4096.0 and 4.096e3 are the integer 4096; the bounds keep the cast
     * defined (every caller's range lies well inside them). */
    double x = v->d;
    if (!(x == floor(x)) || !(x >= -0x1p62 && x <= 0x1p62))
        return 0;
    *out = (int64_t)x;
    return 1;
}

int partd_json_read_integral(const json_t *v, int64_t *out)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return scalar_integral(&sv, out);
}

/* For a v that scalar_integral refused: 1 (reported) when it is a
 * real without a fraction, i.e. an integer too large to hold: out of range
 * rather than "not an integer". */
static int huge_integral(partd_reader *r, const partd_scalar *v, const char *ptr, int64_t min,
                         int64_t max)
{
    if (v->type != JSON_REAL || floor(v->d) != v->d)
        return 0;
    char lo[24], hi[24], num[32];
    bound_text(lo, sizeof lo, min);
    bound_text(hi, sizeof hi, max);
    partd_problem_add(r->pb, ptr, "must be between %s and %s, not %s", lo, hi,
                      number_text(num, sizeof num, v->d));
    return 1;
}

int partd__json_read_scalar_bytes(partd_reader *r, const partd_scalar *v, const char *ptr, int64_t min,
                       int64_t *out)
{
    int64_t x;
    char num[32];
    if (!scalar_integral(v, &x)) {
        if (huge_integral(r, v, ptr, min, PARTD_MAX_BYTES))
            return PARTD_EINVALID;
        /* A fraction is most likely a computed size that lost its integer
         * type: show the value. */
        if (v->type == JSON_REAL)
            partd_problem_add(r->pb, ptr,
                              "must be an integer number of bytes, not %s; an integer "
                              "is needed",
                              number_text(num, sizeof num, v->d));
        else
            partd_problem_add(r->pb, ptr, "must be an integer number of bytes, not %s",
                              partd__json_read_type_word(v->type));
        return PARTD_EINVALID;
    }
    return check_int_range(r, x, ptr, min, PARTD_MAX_BYTES, out);
}

int partd_json_read_bytes(partd_reader *r, json_t *v, const char *ptr, int64_t min,
                     int64_t *out)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_bytes(r, &sv, ptr, min, out);
}

int partd__json_read_scalar_int(partd_reader *r, const partd_scalar *v, const char *ptr, int64_t min,
                     int64_t max, int64_t *out)
{
    int64_t x;
    char num[32];
    if (!scalar_integral(v, &x)) {
        if (huge_integral(r, v, ptr, min, max))
            return PARTD_EINVALID;
        if (v->type == JSON_REAL)
            partd_problem_add(r->pb, ptr, "must be an integer, not %s; an integer is needed",
                              number_text(num, sizeof num, v->d));
        else
            partd_problem_add(r->pb, ptr, "must be an integer, not %s",
                              partd__json_read_type_word(v->type));
        return PARTD_EINVALID;
    }
    return check_int_range(r, x, ptr, min, max, out);
}

int partd_json_read_int(partd_reader *r, json_t *v, const char *ptr, int64_t min,
                   int64_t max, int64_t *out)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_int(r, &sv, ptr, min, max, out);
}

int partd__json_read_scalar_number(partd_reader *r, const partd_scalar *v, const char *ptr, double min,
                        int min_exclusive, double max, double *out)
{
    if (v->type != JSON_INTEGER && v->type != JSON_REAL) {
        partd_problem_add(r->pb, ptr, "must be a number, not %s", partd__json_read_type_word(v->type));
        return PARTD_EINVALID;
    }
    double x = v->type == JSON_INTEGER ? (double)v->i : v->d;
    if (!isfinite(x)) {
        partd_problem_add(r->pb, ptr, "must be a finite number");
        return PARTD_EINVALID;
    }
    /* Both bounds in every message: the client learns the allowed range. */
    if ((min_exclusive ? !(x > min) : !(x >= min)) || x > max) {
        char num[32];
        partd_problem_add(r->pb, ptr, "must be %s %g and at most %g, not %s",
                          min_exclusive ? "greater than" : "at least", min, max,
                          number_text(num, sizeof num, x));
        return PARTD_EINVALID;
    }
    *out = x;
    return PARTD_OK;
}

int partd_json_read_number(partd_reader *r, json_t *v, const char *ptr, double min,
                      int min_exclusive, double max, double *out)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_number(r, &sv, ptr, min, min_exclusive, max, out);
}

int partd_json_read_bool(partd_reader *r, json_t *v, const char *ptr, int *out)
{
    if (!json_is_boolean(v)) {
        partd_problem_add(r->pb, ptr, "must be a boolean, not %s", partd_json_read_type_name(v));
        return PARTD_EINVALID;
    }
    *out = json_is_true(v);
    return PARTD_OK;
}

int partd__json_read_scalar_enum(partd_reader *r, const partd_scalar *v, const char *ptr,
                      const char *const *names, int *out)
{
    const char *s = scalar_string(r, v, ptr);
    if (!s)
        return PARTD_EINVALID;
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return PARTD_OK;
        }
    char list[256] = "";
    for (int i = 0; names[i]; i++) {
        strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
        strncat(list, names[i], sizeof list - strlen(list) - 1);
    }
    partd_problem_add(r->pb, ptr, "must be one of %s, not \"%.64s\"", list, s);
    return PARTD_EINVALID;
}

int partd_json_read_enum(partd_reader *r, json_t *v, const char *ptr,
                    const char *const *names, int *out)
{
    partd_scalar sv;
    scalar_of(v, &sv);
    return partd__json_read_scalar_enum(r, &sv, ptr, names, out);
}
