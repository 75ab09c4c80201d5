/* json_out.c - compact JSON written as a stream; see json_out.h. */
#include "partd/json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"

void partd_json_out_init(partd_json_out *o, partd_json_sink sink, void *ctx)
{
    o->sink = sink;
    o->ctx = ctx;
    o->rc = PARTD_OK;
    o->comma = 0;
    o->flushed = 0;
    o->len = 0;
    o->capturing = 0;
    o->capture = NULL;
    o->capture_len = o->capture_cap = 0;
}

int partd_json_out_fail(partd_json_out *o, int rc)
{
    if (o->rc == PARTD_OK)
        o->rc = rc;
    return o->rc;
}

int partd_json_out_flush(partd_json_out *o)
{
    if (o->rc == PARTD_OK && o->len > 0) {
        int rc = o->sink(o->buf, o->len, o->ctx);
        if (rc != PARTD_OK)
            return partd_json_out_fail(o, rc);
        o->flushed += o->len;
        o->len = 0;
    }
    return o->rc;
}

uint64_t partd_json_out_bytes(const partd_json_out *o)
{
    return o->flushed + o->len;
}

void partd_json_out_release(partd_json_out *o)
{
    free(o->capture);
    o->capture = NULL;
    o->capture_len = o->capture_cap = 0;
    o->capturing = 0;
}

static int capture(partd_json_out *o, const char *data, size_t n)
{
    if (o->capture_len + n + 1 > o->capture_cap) {
        size_t cap = o->capture_cap ? o->capture_cap : 256;
        while (cap < o->capture_len + n + 1)
            cap *= 2;
        char *p = realloc(o->capture, cap);
        if (!p)
            return partd_json_out_fail(o, PARTD_ENOMEM);
        o->capture = p;
        o->capture_cap = cap;
    }
    memcpy(o->capture + o->capture_len, data, n);
    o->capture_len += n;
    return PARTD_OK;
}

/* Every byte goes through here: buffered, flushed in whole chunks. */
static int emit(partd_json_out *o, const char *data, size_t n)
{
    if (o->rc != PARTD_OK)
        return o->rc;
    if (o->capturing && capture(o, data, n) != PARTD_OK)
        return o->rc;
    while (n > 0) {
        size_t room = sizeof o->buf - o->len;
        size_t k = n < room ? n : room;
        memcpy(o->buf + o->len, data, k);
        o->len += k;
        data += k;
        n -= k;
        if (o->len == sizeof o->buf && partd_json_out_flush(o) != PARTD_OK)
            return o->rc;
    }
    return PARTD_OK;
}

/* The ',' between items: due after any complete value, never after a key
 * or an opening bracket. One flag is enough because a closing bracket
 * completes a value of the enclosing container. */
static int separate(partd_json_out *o)
{
    if (o->comma) {
        o->comma = 0;
        return emit(o, ",", 1);
    }
    return o->rc;
}

static int open_bracket(partd_json_out *o, const char *b)
{
    separate(o);
    o->comma = 0;
    return emit(o, b, 1);
}

static int close_bracket(partd_json_out *o, const char *b)
{
    o->comma = 1;
    return emit(o, b, 1);
}

int partd_json_out_begin_object(partd_json_out *o) { return open_bracket(o, "{"); }
int partd_json_out_end_object(partd_json_out *o) { return close_bracket(o, "}"); }
int partd_json_out_begin_array(partd_json_out *o) { return open_bracket(o, "["); }
int partd_json_out_end_array(partd_json_out *o) { return close_bracket(o, "]"); }

/* jansson's dump_string without JSON_ENSURE_ASCII / JSON_ESCAPE_SLASH. */
static int quoted(partd_json_out *o, const char *s)
{
    emit(o, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c != '"' && c != '\\' && c >= 0x20)
            continue;
        emit(o, run, (size_t)(p - run));
        run = p + 1;
        char seq[8];
        const char *text = seq;
        size_t n = 2;
        switch (c) {
        case '\\': text = "\\\\"; break;
        case '"': text = "\\\""; break;
        case '\b': text = "\\b"; break;
        case '\f': text = "\\f"; break;
        case '\n': text = "\\n"; break;
        case '\r': text = "\\r"; break;
        case '\t': text = "\\t"; break;
        default:
            snprintf(seq, sizeof seq, "\\u%04X", (unsigned)c);
            n = 6;
        }
        emit(o, text, n);
    }
    emit(o, run, strlen(run));
    return emit(o, "\"", 1);
}

int partd_json_out_key(partd_json_out *o, const char *key)
{
    separate(o);
    quoted(o, key);
    o->comma = 0;
    return emit(o, ":", 1);
}

static int scalar(partd_json_out *o, const char *text, size_t n)
{
    separate(o);
    o->comma = 1;
    return emit(o, text, n);
}

int partd_json_out_string(partd_json_out *o, const char *s)
{
    separate(o);
    o->comma = 1;
    return quoted(o, s);
}

int partd_json_out_int(partd_json_out *o, int64_t v)
{
    char text[24];
    int n = snprintf(text, sizeof text, "%lld", (long long)v);
    return scalar(o, text, (size_t)n);
}

int partd_json_out_format_real(double v, char *buf)
{
    if (!isfinite(v))
        return -1;
    int len = snprintf(buf, 32, "%.15g", v);
    if (!strchr(buf, '.') && !strchr(buf, 'e')) {
        memcpy(buf + len, ".0", 3);
        len += 2;
    }
    /* The exponent: no '+', no leading zeros ("1e+20" -> "1e20",
     * "1e-05" -> "1e-5"), as jansson's jsonp_dtostr. */
    char *e = strchr(buf, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, (size_t)(buf + len - end) + 1);
            len -= (int)(end - start);
        }
    }
    return len;
}

int partd_json_out_real(partd_json_out *o, double v)
{
    char text[32];
    int n = partd_json_out_format_real(v, text);
    if (n < 0)
        return partd_json_out_fail(o, PARTD_EINTERNAL);
    return scalar(o, text, (size_t)n);
}

int partd_json_out_bool(partd_json_out *o, int v)
{
    return v ? scalar(o, "true", 4) : scalar(o, "false", 5);
}

int partd_json_out_verbatim(partd_json_out *o, const char *text, size_t len)
{
    return scalar(o, text, len);
}

int partd_json_out_raw(partd_json_out *o, const char *data, size_t len)
{
    return emit(o, data, len);
}

void partd_json_out_capture_start(partd_json_out *o)
{
    o->capture_len = 0;
    o->capturing = 1;
}

char *partd_json_out_capture_end(partd_json_out *o, size_t *len)
{
    o->capturing = 0;
    if (o->rc != PARTD_OK)
        return NULL;
    if (!o->capture && capture(o, "", 0) != PARTD_OK)
        return NULL;
    char *copy = o->capture;
    copy[o->capture_len] = '\0';
    if (len)
        *len = o->capture_len;
    o->capture = NULL;
    o->capture_len = o->capture_cap = 0;
    return copy;
}
