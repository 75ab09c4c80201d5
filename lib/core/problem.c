/* problem.c - RFC 9457 problem documents; see problem.h. */
#include "partd/problem.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

#define TYPE_PREFIX "urn:partd:problem:"

void partd_problem_init(partd_problem *p)
{
    memset(p, 0, sizeof *p);
}

void partd_problem_free(partd_problem *p)
{
    free(p->type);
    free(p->title);
    free(p->detail);
    for (uint32_t i = 0; i < p->n_errors; i++) {
        free(p->errors[i].pointer);
        free(p->errors[i].message);
    }
    memset(p, 0, sizeof *p);
}

static char *vformat(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

void partd_problem_set(partd_problem *p, int status, const char *type_slug,
                       const char *title, const char *detail_fmt, ...)
{
    free(p->type);
    free(p->title);
    free(p->detail);
    p->status = status;
    size_t tl = strlen(TYPE_PREFIX) + strlen(type_slug) + 1;
    p->type = malloc(tl);
    if (p->type)
        snprintf(p->type, tl, "%s%s", TYPE_PREFIX, type_slug);
    p->title = strdup(title);
    va_list ap;
    va_start(ap, detail_fmt);
    p->detail = vformat(detail_fmt, ap);
    va_end(ap);
}

int partd_problem_add(partd_problem *p, const char *pointer, const char *fmt, ...)
{
    if (p->n_errors >= PARTD_PROBLEM_MAX_ERRORS) {
        p->dropped++;
        return PARTD_ETOOBIG;
    }
    va_list ap;
    va_start(ap, fmt);
    char *msg = vformat(fmt, ap);
    va_end(ap);
    char *ptr = strdup(pointer);
    if (!msg || !ptr) {
        free(msg);
        free(ptr);
        p->dropped++;
        return PARTD_ENOMEM;
    }
    p->errors[p->n_errors].pointer = ptr;
    p->errors[p->n_errors].message = msg;
    p->n_errors++;
    return PARTD_OK;
}

int partd_problem_set_int(partd_problem *p, const char *name, int64_t value)
{
    for (uint32_t i = 0; i < p->n_members; i++)
        if (strcmp(p->members[i].name, name) == 0) {
            p->members[i].value = value;
            return 0;
        }
    if (p->n_members >= PARTD_PROBLEM_MAX_MEMBERS)
        return -1;
    p->members[p->n_members++] = (partd_problem_member){ name, value };
    return 0;
}

const char *partd_problem_bytes(char out[PARTD_PROBLEM_BYTES_CAP], double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (!(bytes >= 0) || bytes > 1e18) /* NaN, negative or absurd: say so plainly */
        bytes = bytes > 1e18 ? 1e18 : 0;
    int unit = 0;
    while (unit < 4 && bytes >= ldexp(1.0, 10 * (unit + 1)))
        unit++;
    double v = bytes / ldexp(1.0, 10 * unit);
    /* three significant digits below 1024 (bytes are whole) */
    int decimals = unit == 0 || v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
    static const unsigned long long pow10[] = {1, 10, 100};
    unsigned long long n = (unsigned long long)llround(v * (double)pow10[decimals]);
    if (decimals == 0)
        snprintf(out, PARTD_PROBLEM_BYTES_CAP, "%llu %s", n, units[unit]);
    else
        snprintf(out, PARTD_PROBLEM_BYTES_CAP, "%llu.%0*llu %s", n / pow10[decimals], decimals,
                 n % pow10[decimals], units[unit]);
    return out;
}

void partd_problem_set_shortfall(partd_problem *p, int64_t needs, int64_t has)
{
    partd_problem_set_int(p, "memory_bytes", needs);
    partd_problem_set_int(p, "device_memory_bytes", has);
    partd_problem_set_int(p, "short_bytes", needs - has);
}

int partd_problem_full(const partd_problem *p)
{
    return p->n_errors >= PARTD_PROBLEM_MAX_ERRORS;
}

/* A JSON string of s. Messages quote client input, and a quote cut short
 * (jansson's parse error text, a pointer truncated at its buffer) can end
 * inside a UTF-8 sequence, which json_string refuses: then the non-ASCII
 * bytes become '?' rather than the member going missing. */
static json_t *text_value(const char *s)
{
    json_t *v = json_string(s);
    if (v)
        return v;
    char *ascii = strdup(s);
    if (!ascii)
        return NULL;
    for (char *c = ascii; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    v = json_string(ascii);
    free(ascii);
    return v;
}

/* o[key] = v; -1 when v is NULL or the set fails. */
static int set(json_t *o, const char *key, json_t *v)
{
    return v && json_object_set_new(o, key, v) == 0 ? 0 : -1;
}

char *partd_problem_to_json(const partd_problem *p, size_t *len)
{
    json_t *doc = json_object();
    json_t *errors = json_array();
    if (!doc || !errors) {
        json_decref(doc);
        json_decref(errors);
        return NULL;
    }
    /* Every step checked: a document with a member missing is never
     * written (NULL instead, as for any allocation failure). The *_new
     * calls steal their value even when they fail. */
    int rc = set(doc, "type", text_value(p->type ? p->type : "about:blank"));
    rc |= set(doc, "title", text_value(p->title ? p->title : "Error"));
    rc |= set(doc, "status", json_integer(p->status ? p->status : 500));
    rc |= set(doc, "detail", text_value(p->detail ? p->detail : ""));
    for (uint32_t i = 0; rc == 0 && i < p->n_members; i++)
        rc |= set(doc, p->members[i].name, json_integer(p->members[i].value));
    for (uint32_t i = 0; rc == 0 && i < p->n_errors; i++) {
        json_t *e = json_object();
        if (!e) {
            rc = -1;
            break;
        }
        rc |= set(e, "pointer", text_value(p->errors[i].pointer));
        rc |= set(e, "message", text_value(p->errors[i].message));
        if (rc || json_array_append_new(errors, e) != 0) {
            if (rc)
                json_decref(e);
            rc = -1;
        }
    }
    if (rc) {
        json_decref(errors);
        json_decref(doc);
        return NULL;
    }
    rc = set(doc, "errors", errors);
    if (rc == 0 && p->dropped)
        rc = set(doc, "errors_dropped", json_integer(p->dropped));
    if (rc) {
        json_decref(doc);
        return NULL;
    }
    return partd_problem_json_dump_line(doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII, len);
}

/* Text being dumped. jansson's dumper ignores a failed write of an
 * object's key and carries on (dump.c: dump_string's result unused), so a
 * buffer that failed to grow once must refuse every later write: then the
 * dump fails as a whole instead of coming back with a key missing. */
typedef struct dump_buf {
    char *data;
    size_t used, cap;
    int failed;
} dump_buf;

static int dump_append(const char *bytes, size_t n, void *ctx)
{
    dump_buf *b = ctx;
    if (b->failed)
        return -1;
    if (n + 2 > b->cap - b->used) { /* room for a newline and NUL too */
        size_t cap = b->cap ? b->cap : 4096;
        while (n + 2 > cap - b->used) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return -1;
            }
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = 1;
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->used, bytes, n);
    b->used += n;
    return 0;
}

/* The dump of doc with `suffix` (0 or '\n') appended, NUL-terminated. */
static char *dump_with(const json_t *doc, size_t flags, char suffix, size_t *len)
{
    dump_buf b = {0};
    if (json_dump_callback(doc, dump_append, &b, flags) != 0 || b.failed ||
        dump_append("", 0, &b) != 0) {
        free(b.data);
        return NULL;
    }
    if (suffix)
        b.data[b.used++] = suffix;
    b.data[b.used] = '\0';
    if (len)
        *len = b.used;
    return b.data;
}

char *partd_problem_json_dumps(const json_t *doc, size_t flags)
{
    return dump_with(doc, flags, 0, NULL);
}

char *partd_problem_json_dump_line(json_t *doc, size_t flags, size_t *len)
{
    char *s = dump_with(doc, flags, '\n', len);
    json_decref(doc);
    return s;
}

void partd_problem_pointer_append(char *buf, size_t cap, const char *token)
{
    size_t n = strnlen(buf, cap);
    if (n + 1 >= cap)
        return;
    buf[n++] = '/';
    for (const char *c = token; *c && n + 1 < cap; c++) {
        if (*c == '~' || *c == '/') {
            if (n + 2 >= cap)
                break;
            buf[n++] = '~';
            buf[n++] = *c == '~' ? '0' : '1';
        } else {
            buf[n++] = *c;
        }
    }
    buf[n] = '\0';
}

void partd_problem_pointer_append_index(char *buf, size_t cap, size_t index)
{
    char tmp[24];
    int i = sizeof tmp - 1;
    tmp[i] = '\0';
    do {
        tmp[--i] = (char)('0' + index % 10);
        index /= 10;
    } while (index);
    partd_problem_pointer_append(buf, cap, tmp + i);
}
