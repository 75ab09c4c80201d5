/*
 * decode_stream.c - chunks of JSON text -> events; see decode_stream.h.
 * What it owns: the stream, its position in the body, the tokens it holds
 * back, and feeding each chunk through the pre-scan to yajl. Its parts
 * (decode_internal.h): yajl behind its allocator (decode_yajl.c), yajl's
 * callbacks turned into the handler's events (decode_events.c, with
 * decode_number.c), where tokens at a chunk's edges end (decode_token.c).
 *
 * Each chunk is pre-scanned first (decode_scan.h) for what yajl would let
 * through; yajl then parses the chunk up to the first such byte, so that a
 * syntax error before it is the one reported, as jansson would.
 *
 * yajl never sees a token cut by the end of a chunk. When a chunk ends
 * inside a string, a number or a literal, yajl buffers the part it has
 * and, with every later chunk, lexes the token again from its start: a
 * long string sent in many pieces costs the square of its length. So the
 * stream holds such a token back itself (copying each piece once) and
 * hands it to yajl whole once the chunk that ends it arrives; the
 * pre-scan's count of quotes tells where a string ends without reading
 * the chunk again. Positions stay those of the body: a held token keeps
 * where it started.
 *
 * Errors: as decode_stream.h says; the failure and its words are kept in
 * the events' record (partd_jevents: failed, error), where the callbacks
 * put theirs.
 */
#define _GNU_SOURCE /* memrchr */
#include "decode_stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "partd/partd.h"

#define HELD_KEEP 65536     /* a held token's buffer kept for the next one */

/* Where a text handed to yajl stands in the body: its first byte's offset,
 * line, and the offset of that line's first byte. */
typedef struct where {
    size_t offset, line, line_start;
} where;

struct partd_jstream {
    partd_yajl yajl;
    partd_jevents ev;    /* the handler, the open containers, the failure */
    /* position */
    size_t offset;       /* bytes of earlier chunks */
    size_t line;         /* 1 + newlines in earlier chunks */
    size_t line_start;   /* offset just after the last newline */
    partd_jscan scan;
    /* a token cut by the end of a chunk, kept until it is whole */
    partd_jheld held;
    char *held_text;
    size_t held_len, held_cap;
    where held_at;
    size_t open;         /* bytes of a token yajl holds unfinished */
    partd_jstream_stats stats;
};

/* ---- errors and position --------------------------------------------------- */

static int fail(partd_jstream *s, int code)
{
    return partd__decode_events_fail(&s->ev, code);
}

/* The position of the chunk about to be parsed. */
static where here(const partd_jstream *s)
{
    return (where){s->offset, s->line, s->line_start};
}

/* A syntax error at byte `at` of the text p, which stands at w. */
static void malformed_at(partd_jstream *s, const where *w, const char *p, size_t at,
                         const char *what)
{
    size_t line = w->line, start = w->line_start;
    for (size_t i = 0; i < at; i++)
        if (p[i] == '\n') {
            line++;
            start = w->offset + i + 1;
        }
    size_t off = w->offset + at;
    snprintf(s->ev.error, sizeof s->ev.error, "%s (line %zu, column %zu, byte %zu)", what, line,
             off - start + 1, off);
    fail(s, PARTD_EMALFORMED);
}

/* The chunk p[0, n) was parsed: line, and whether a string is open. */
static void advance(partd_jstream *s, const char *p, size_t n)
{
    size_t lines = s->scan.lines;
    if (lines) {
        s->line += lines;
        size_t last = n;
        while (p[--last] != '\n')
            ;
        s->line_start = s->offset + last + 1;
    }
    partd__decode_scan_done(&s->scan, p, n);
    s->offset += n;
}

/* ---- the stream ---------------------------------------------------------------- */

partd_jstream *partd__decode_stream_new(const partd_js_handler *h, void *ctx)
{
    partd_jstream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->line = 1;
    if (partd__decode_events_init(&s->ev, h, ctx) != 0 ||
        partd__decode_yajl_open(&s->yajl, &partd__decode_events_callbacks, &s->ev) != 0) {
        partd__decode_stream_free(s);
        return NULL;
    }
    return s;
}

void partd__decode_stream_free(partd_jstream *s)
{
    if (!s)
        return;
    partd__decode_yajl_close(&s->yajl);
    partd__decode_events_free(&s->ev);
    free(s->held_text);
    free(s);
}

void partd__decode_stream_set_cancel(partd_jstream *s, const partd_cancel *cancel)
{
    s->ev.cancel = cancel;
}

void partd__decode_stream_stats(const partd_jstream *s, partd_jstream_stats *out)
{
    *out = s->stats;
    out->nul_walked = s->scan.nul_walked;
}

/* yajl's error in text[0, n), which stands at p[base] of the text p at w,
 * or an out-of-memory failure. */
static void yajl_failed(partd_jstream *s, const where *w, const char *p, const char *text,
                        size_t base, size_t n)
{
    size_t at = yajl_get_bytes_consumed(s->yajl.h);
    if (at > n)
        at = n;
    char what[PARTD_DECODE_ERROR_CAP];
    if (partd__decode_yajl_error(&s->yajl, text, n, what, sizeof what) != 0) {
        s->ev.failed = PARTD_ENOMEM;
        return;
    }
    malformed_at(s, w, p, base + at, what);
}

/* Parses text[0, n), which stands at p[base] of the text p at w. */
static int parse_text(partd_jstream *s, const where *w, const char *p, const char *text,
                      size_t base, size_t n)
{
    yajl_status st = yajl_status_ok;
    s->stats.parsed += n;
    s->stats.relexed += s->open;
    if (n && partd__decode_yajl_parse(&s->yajl, text, n, &st) != 0)
        return s->ev.failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, w, p, text, base, n);
    else if (st == yajl_status_client_canceled && s->ev.failed == PARTD_EMALFORMED) {
        char msg[PARTD_DECODE_ERROR_CAP];
        snprintf(msg, sizeof msg, "%s", s->ev.error);
        size_t at = yajl_get_bytes_consumed(s->yajl.h);
        malformed_at(s, w, p, base + (at > n ? n : at), msg);
    }
    return s->ev.failed;
}

/* ---- tokens held back ------------------------------------------------------ */

/* Parses p[from, to) of the chunk p at w. A NUL that jansson reads as a
 * token boundary goes to yajl as a space. in_string: whether p[to] is
 * inside a string. */
static int parse_span(partd_jstream *s, const where *w, const char *p, size_t from, size_t to,
                      int in_string)
{
    const char *z;
    while ((z = memchr(p + from, '\0', to - from)) &&
           partd__decode_scan_skips_nul(&s->scan, p, (size_t)(z - p))) {
        size_t x = (size_t)(z - p);
        if (parse_text(s, w, p, p + from, from, x - from) != PARTD_OK)
            return s->ev.failed;
        s->open = partd__decode_token_open_after(p, from, x, s->open, 0, 0);
        if (parse_text(s, w, p, " ", x, 1) != PARTD_OK)
            return s->ev.failed;
        s->open = 0;
        from = x + 1;
    }
    int esc = from == 0 && s->scan.esc0 == PARTD_ESC_BACKSLASH;
    if (parse_text(s, w, p, p + from, from, to - from) == PARTD_OK)
        s->open = partd__decode_token_open_after(p, from, to, s->open, in_string, esc);
    return s->ev.failed;
}

static int held_append(partd_jstream *s, const char *p, size_t n)
{
    if (s->held_len + n > s->held_cap) {
        size_t cap = s->held_cap ? s->held_cap : 4096;
        while (cap < s->held_len + n)
            cap *= 2;
        char *b = realloc(s->held_text, cap);
        if (!b)
            return -1;
        s->held_text = b;
        s->held_cap = cap;
    }
    memcpy(s->held_text + s->held_len, p, n);
    s->held_len += n;
    s->stats.held += n;
    return 0;
}

/* Holds p[t, n) of the chunk p at w: it starts a token the chunk cuts. */
static int hold(partd_jstream *s, const where *w, const char *p, size_t t, size_t n,
                partd_jheld kind)
{
    s->held = kind;
    s->held_len = 0;
    s->held_at = (where){w->offset + t, w->line, w->line_start};
    if (s->scan.lines) { /* the newlines before t: the chunk's less the held part's */
        size_t after = 0;
        for (const char *c = p + t; (c = memchr(c, '\n', (size_t)(p + n - c))); c++)
            after++;
        s->held_at.line += s->scan.lines - after;
        const char *last = memrchr(p, '\n', t);
        if (last)
            s->held_at.line_start = w->offset + (size_t)(last - p) + 1;
    }
    return held_append(s, p + t, n - t);
}

/* The held token goes to yajl. */
static int release(partd_jstream *s)
{
    if (s->held == PARTD_HELD_NONE)
        return PARTD_OK;
    s->held = PARTD_HELD_NONE;
    if (parse_text(s, &s->held_at, s->held_text, s->held_text, 0, s->held_len) == PARTD_OK)
        s->open = partd__decode_token_open_after(s->held_text, 0, s->held_len, s->open, 0, 0);
    if (s->held_cap > HELD_KEEP) { /* a long string: its copy goes now */
        free(s->held_text);
        s->held_text = NULL;
        s->held_cap = 0;
    }
    return s->ev.failed;
}

/* ---- feeding ------------------------------------------------------------------ */

int partd__decode_stream_feed(partd_jstream *s, const char *p, size_t n)
{
    if (s->ev.failed)
        return s->ev.failed;
    if (n == 0)
        return PARTD_OK;
    if (partd__decode_events_stopped(&s->ev) != PARTD_OK)
        return s->ev.failed;
    char what[PARTD_DECODE_ERROR_CAP];
    where w = here(s);
    size_t good = partd__decode_scan_chunk(&s->scan, p, n, what, sizeof what);
    if (good < n) {
        /* yajl reads up to the byte jansson refuses, in case it finds an
         * error before it */
        if (release(s) == PARTD_OK && parse_span(s, &w, p, 0, good, 0) == PARTD_OK)
            malformed_at(s, &w, p, good, what);
        return s->ev.failed;
    }
    size_t from = 0;
    if (s->held != PARTD_HELD_NONE) {
        size_t e = partd__decode_token_held_end(&s->scan, s->held, p, n);
        if (held_append(s, p, e == SIZE_MAX ? n : e) != 0)
            return s->ev.failed = PARTD_ENOMEM;
        if (e == SIZE_MAX) {
            advance(s, p, n);
            return PARTD_OK;
        }
        if (release(s) != PARTD_OK)
            return s->ev.failed;
        from = e;
    }
    partd_jheld kind;
    int in_string;
    size_t t = partd__decode_token_cut(&s->scan, p, from, n, &kind, &in_string);
    if (parse_span(s, &w, p, from, t, t == n && in_string) != PARTD_OK)
        return s->ev.failed;
    if (t < n && hold(s, &w, p, t, n, kind) != 0)
        return s->ev.failed = PARTD_ENOMEM;
    advance(s, p, n);
    return PARTD_OK;
}

int partd__decode_stream_finish(partd_jstream *s)
{
    if (s->ev.failed)
        return s->ev.failed;
    if (release(s) != PARTD_OK)
        return s->ev.failed;
    char what[PARTD_DECODE_ERROR_CAP] = "";
    where w = here(s);
    yajl_status st;
    if (partd__decode_yajl_parse(&s->yajl, "", 0, &st) != 0)
        return s->ev.failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, &w, "", "", 0, 0);
    else if (st == yajl_status_client_canceled && s->ev.failed == PARTD_EMALFORMED) {
        snprintf(what, sizeof what, "%s", s->ev.error);
        malformed_at(s, &w, "", 0, what);
    } else if (s->scan.utf8_left) {
        malformed_at(s, &w, "", 0, "premature end of input (a character is cut short)");
    }
    return s->ev.failed;
}

const char *partd__decode_stream_error(const partd_jstream *s)
{
    return s->ev.error;
}
