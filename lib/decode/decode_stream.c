/*
 * decode_stream.c - chunks of JSON text -> events; see decode_stream.h.
 *
 * Each chunk is pre-scanned first (decode_scan.h) for what yajl would let
 * through; yajl then parses the chunk up to the first such byte, so that a
 * syntax error before it is the one reported, as jansson would. Frames
 * follow the open containers; the keys of the open objects, for the
 * duplicate check, are kept by decode_keys.h.
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
 */
#define _GNU_SOURCE /* memrchr */
#include "decode_stream.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>

#include "decode_keys.h"
#include "decode_scan.h"
#include "partd/partd.h"

#define MAX_YAJL_BLOCKS 32  /* yajl holds about 7 blocks at a time */
#define ERROR_CAP 256
#define CANCEL_EVERY 4096   /* values between two looks at the cancel flag */
#define HELD_KEEP 65536     /* a held token's buffer kept for the next one */

/* Where a text handed to yajl stands in the body: its first byte's offset,
 * line, and the offset of that line's first byte. */
typedef struct where {
    size_t offset, line, line_start;
} where;

typedef enum held_kind { HELD_NONE, HELD_STRING, HELD_WORD } held_kind;

typedef enum mode { MODE_DELIVER, MODE_SKIP, MODE_BUILD } mode;

typedef struct frame {
    uint8_t is_object;
    uint8_t mode;
    uint8_t build_root;  /* the outermost container of a built value */
    partd_keyset keys;   /* of an object */
    json_t *json;        /* MODE_BUILD: the container being built */
} frame;

struct partd_jstream {
    yajl_handle yajl;
    const partd_js_handler *h;
    void *ctx;
    int failed;          /* PARTD_OK or the code every call returns */
    int handler_nomem;
    char error[ERROR_CAP];
    /* yajl's blocks, freed here when a failed allocation leaves the parse */
    void *blocks[MAX_YAJL_BLOCKS];
    jmp_buf on_nomem;
    /* position */
    size_t offset;       /* bytes of earlier chunks */
    size_t line;         /* 1 + newlines in earlier chunks */
    size_t line_start;   /* offset just after the last newline */
    partd_jscan scan;
    /* a token cut by the end of a chunk, kept until it is whole */
    held_kind held;
    char *held_text;
    size_t held_len, held_cap;
    where held_at;
    size_t open;         /* bytes of a token yajl holds unfinished */
    const partd_cancel *cancel;
    uint32_t values;     /* since the last look at the cancel flag */
    partd_jstream_stats stats;
    /* containers */
    frame *frames;
    uint32_t depth;
    partd_keys keys;     /* of the open objects */
    char num[64];
};

static const yajl_callbacks callbacks;

/* ---- yajl's allocator ----------------------------------------------------- */

static void nomem_jump(partd_jstream *s)
{
    longjmp(s->on_nomem, 1);
}

/* The slot of yajl's block p (NULL: a free slot), or -1. */
static int block_of(const partd_jstream *s, const void *p)
{
    for (int i = 0; i < MAX_YAJL_BLOCKS; i++)
        if (s->blocks[i] == p)
            return i;
    return -1;
}


static void *ya_malloc(void *ctx, size_t n)
{
    partd_jstream *s = ctx;
    int i = block_of(s, NULL);
    void *p = i < 0 ? NULL : malloc(n);
    if (!p)
        nomem_jump(s);
    return s->blocks[i] = p;
}

static void *ya_realloc(void *ctx, void *old, size_t n)
{
    partd_jstream *s = ctx;
    if (!old)
        return ya_malloc(ctx, n);
    int i = block_of(s, old); /* always found: yajl's own block */
    void *p = realloc(old, n);
    if (!p)
        nomem_jump(s); /* old is still tracked and still valid */
    return s->blocks[i] = p;
}

static void ya_free(void *ctx, void *p)
{
    partd_jstream *s = ctx;
    if (!p)
        return;
    int i = block_of(s, p);
    if (i >= 0)
        s->blocks[i] = NULL;
    free(p);
}

/* After a jump out of yajl: its state is unusable, its memory is ours. */
static void drop_yajl(partd_jstream *s)
{
    for (int i = 0; i < MAX_YAJL_BLOCKS; i++) {
        free(s->blocks[i]);
        s->blocks[i] = NULL;
    }
    s->yajl = NULL;
}

/* The calls into yajl, each behind its own setjmp (nothing of the caller
 * lives across the jump): -1 when an allocation failed inside, after
 * which yajl's memory is freed and its handle gone. */
static __attribute__((noinline)) int guarded_alloc(partd_jstream *const s,
                                                   yajl_alloc_funcs *afs)
{
    if (setjmp(s->on_nomem)) {
        drop_yajl(s);
        return -1;
    }
    s->yajl = yajl_alloc(&callbacks, afs, s);
    /* the pre-scan checks UTF-8 more strictly than yajl does */
    yajl_config(s->yajl, yajl_dont_validate_strings, 1);
    return 0;
}

static __attribute__((noinline)) int guarded_parse(partd_jstream *const s, const char *p,
                                                   size_t n, yajl_status *st)
{
    if (setjmp(s->on_nomem)) {
        drop_yajl(s);
        return -1;
    }
    *st = n ? yajl_parse(s->yajl, (const unsigned char *)p, n) : yajl_complete_parse(s->yajl);
    return 0;
}

/* yajl's words for its error, without "parse error: " and the newline. */
static __attribute__((noinline)) int guarded_error(partd_jstream *const s, const char *p,
                                                   size_t n, char *what, size_t cap)
{
    if (setjmp(s->on_nomem)) {
        drop_yajl(s);
        return -1;
    }
    unsigned char *m = yajl_get_error(s->yajl, 0, (const unsigned char *)p, n);
    const char *t = m ? (const char *)m : "syntax error";
    if (strncmp(t, "parse error: ", 13) == 0)
        t += 13;
    snprintf(what, cap, "%s", t);
    what[strcspn(what, "\n")] = '\0';
    if (m)
        yajl_free_error(s->yajl, m);
    return 0;
}

/* ---- errors and position --------------------------------------------------- */

static int fail(partd_jstream *s, int code)
{
    if (s->failed == PARTD_OK)
        s->failed = code;
    return 0; /* yajl: stop */
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
    snprintf(s->error, sizeof s->error, "%s (line %zu, column %zu, byte %zu)", what, line,
             off - start + 1, off);
    fail(s, PARTD_EMALFORMED);
}

/* 0 to go on; else the code that stops the parse (s->failed set). */
static int stopped(partd_jstream *s)
{
    int rc = partd_cancel_check(s->cancel);
    if (rc != PARTD_OK) {
        snprintf(s->error, sizeof s->error, "%s", partd_strerror(rc));
        fail(s, rc);
    }
    return rc;
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

static frame *top(partd_jstream *s)
{
    return s->depth ? &s->frames[s->depth - 1] : NULL;
}

/* Attaches a built value to the container being built around it. */
static int attach(partd_jstream *s, frame *parent, json_t *v)
{
    if (!v)
        return -1;
    if (parent->is_object)
        return json_object_set_new_nocheck(parent->json,
                                           partd__decode_keys_last(&s->keys, &parent->keys), v);
    return json_array_append_new(parent->json, v);
}

static json_t *scalar_json(const partd_scalar *v)
{
    switch (v->type) {
    case JSON_STRING: return json_stringn_nocheck(v->s, v->len);
    case JSON_INTEGER: return json_integer(v->i);
    case JSON_REAL: return json_real(v->d);
    case JSON_TRUE: return json_true();
    case JSON_FALSE: return json_false();
    case JSON_NULL: return json_null();
    case JSON_OBJECT: return json_object();
    case JSON_ARRAY: return json_array();
    }
    return NULL;
}

/* A value starts (v->type says which; containers have no content yet).
 * Returns 1 to go on, 0 to stop the parse (s->failed set). */
static int value_start(partd_jstream *s, const partd_scalar *v)
{
    if (++s->values == CANCEL_EVERY) {
        s->values = 0;
        if (stopped(s) != PARTD_OK)
            return 0;
    }
    if (s->depth >= PARTD_JSON_MAX_DEPTH) {
        snprintf(s->error, sizeof s->error, "maximum parsing depth (%d) reached",
                 PARTD_JSON_MAX_DEPTH);
        return fail(s, PARTD_EMALFORMED);
    }
    int container = v->type == JSON_OBJECT || v->type == JSON_ARRAY;
    frame *parent = top(s);
    mode m;
    json_t *built = NULL;
    if (!parent || parent->mode == MODE_DELIVER) {
        partd_js_action a = s->h->value(s->ctx, v);
        if (a == PARTD_JS_NOMEM)
            return fail(s, PARTD_ENOMEM);
        m = a == PARTD_JS_DESCEND ? MODE_DELIVER : a == PARTD_JS_SKIP ? MODE_SKIP : MODE_BUILD;
        if (m == MODE_BUILD) {
            if (!(built = scalar_json(v)))
                return fail(s, PARTD_ENOMEM);
            if (!container && s->h->built(s->ctx, built) != 0)
                return fail(s, PARTD_ENOMEM);
        }
    } else {
        m = parent->mode;
        if (m == MODE_BUILD) {
            built = scalar_json(v);
            if (attach(s, parent, built) != 0)
                return fail(s, PARTD_ENOMEM);
        }
    }
    if (!container)
        return 1;
    frame *f = &s->frames[s->depth++];
    *f = (frame){.is_object = v->type == JSON_OBJECT, .mode = (uint8_t)m, .json = built};
    partd__decode_keys_open(&s->keys, &f->keys);
    f->build_root = m == MODE_BUILD && (!parent || parent->mode != MODE_BUILD);
    return 1;
}

static int container_end(partd_jstream *s)
{
    frame *f = top(s);
    s->depth--;
    partd__decode_keys_close(&s->keys, &f->keys);
    if (f->mode == MODE_DELIVER && s->h->end(s->ctx) != 0)
        return fail(s, PARTD_ENOMEM);
    if (f->build_root && s->h->built(s->ctx, f->json) != 0)
        return fail(s, PARTD_ENOMEM);
    return 1;
}

/* ---- yajl callbacks ----------------------------------------------------------- */

static int on_null(void *ctx)
{
    partd_scalar v = {.type = JSON_NULL};
    return value_start(ctx, &v);
}

static int on_boolean(void *ctx, int b)
{
    partd_scalar v = {.type = b ? JSON_TRUE : JSON_FALSE};
    return value_start(ctx, &v);
}

/* jansson's rules: no '.', 'e' or 'E' makes an integer, which must fit
 * json_int_t; a real must not overflow (underflow is fine). */
/* Clinger's fast path: a decimal of at most 15 significant digits times
 * 10^e with |e| <= 22 is a double exactly rounded by one multiplication or
 * division of two exactly held doubles, the value strtod gives. 1 with *out
 * set, or 0 for strtod. t is a number yajl has lexed. */
static int fast_real(const char *t, size_t len, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = t[0] == '-';
    uint64_t m = 0;
    int digits = 0, e10 = 0, fraction = 0;
    for (; i < len && t[i] != 'e' && t[i] != 'E'; i++) {
        if (t[i] == '.') {
            fraction = 1;
            continue;
        }
        if (m || t[i] != '0') {
            if (++digits > 15)
                return 0;
            m = m * 10 + (uint64_t)(t[i] - '0');
        }
        e10 -= fraction;
    }
    if (i < len) { /* the exponent */
        int neg = t[++i] == '-', x = 0;
        i += t[i] == '-' || t[i] == '+';
        if (len - i > 4)
            return 0;
        for (; i < len; i++)
            x = x * 10 + (t[i] - '0');
        e10 += neg ? -x : x;
    }
    double d;
    if (m == 0)
        d = 0.0;
    else if (e10 >= 0 && e10 <= 22)
        d = (double)m * pow10[e10];
    else if (e10 < 0 && e10 >= -22)
        d = (double)m / pow10[-e10];
    else
        return 0;
    *out = t[0] == '-' ? -d : d;
    return 1;
}

static int on_number(void *ctx, const char *t, size_t len)
{
    partd_jstream *s = ctx;
    partd_scalar v = {.type = JSON_INTEGER};
    int integer = 1;
    for (size_t k = 0; k < len && integer; k++)
        integer = t[k] != '.' && t[k] != 'e' && t[k] != 'E';
    if (integer && len <= 18) {
        size_t i = t[0] == '-';
        json_int_t x = 0;
        for (; i < len; i++)
            x = x * 10 + (t[i] - '0');
        v.i = t[0] == '-' ? -x : x;
        return value_start(s, &v);
    }
    if (!integer && fast_real(t, len, &v.d)) {
        v.type = JSON_REAL;
        return value_start(s, &v);
    }
    char *buf = len < sizeof s->num ? s->num : malloc(len + 1);
    if (!buf)
        return fail(s, PARTD_ENOMEM);
    memcpy(buf, t, len);
    buf[len] = '\0';
    errno = 0;
    const char *bad = NULL;
    if (integer) {
        v.i = strtoll(buf, NULL, 10);
        /* Too big for any integer type: delivered as the number it is, so
         * that the member's reader names it by pointer ("must be between 0
         * and 2^53, not 1e+20"), as it does 1e20. Only a literal past the
         * doubles too stays a syntax error. */
        if (errno == ERANGE) {
            errno = 0;
            v.type = JSON_REAL;
            v.d = strtod(buf, NULL);
            if (errno == ERANGE && (v.d == HUGE_VAL || v.d == -HUGE_VAL))
                bad = v.d < 0 ? "too big negative integer" : "too big integer";
        }
    } else {
        v.type = JSON_REAL;
        v.d = strtod(buf, NULL);
        if (errno == ERANGE && (v.d == HUGE_VAL || v.d == -HUGE_VAL))
            bad = "real number overflow";
    }
    if (buf != s->num)
        free(buf);
    if (bad) {
        snprintf(s->error, sizeof s->error, "%s", bad);
        return fail(s, PARTD_EMALFORMED);
    }
    return value_start(s, &v);
}

static int on_string(void *ctx, const unsigned char *str, size_t len)
{
    partd_scalar v = {.type = JSON_STRING, .s = (const char *)str, .len = len};
    return value_start(ctx, &v);
}

static int on_start_map(void *ctx)
{
    partd_scalar v = {.type = JSON_OBJECT};
    return value_start(ctx, &v);
}

static int on_start_array(void *ctx)
{
    partd_scalar v = {.type = JSON_ARRAY};
    return value_start(ctx, &v);
}

static int on_key(void *ctx, const unsigned char *k, size_t len)
{
    partd_jstream *s = ctx;
    frame *f = top(s);
    const char *key = (const char *)k;
    int had = partd__decode_keys_add(&s->keys, &f->keys, key, len);
    if (had < 0)
        return fail(s, PARTD_ENOMEM);
    if (had) {
        snprintf(s->error, sizeof s->error, "duplicate object key \"%.*s\"",
                 (int)(len < 64 ? len : 64), key);
        return fail(s, PARTD_EMALFORMED);
    }
    if (f->mode == MODE_DELIVER && s->h->key(s->ctx, partd__decode_keys_last(&s->keys, &f->keys), len) != 0)
        return fail(s, PARTD_ENOMEM);
    return 1;
}

static int on_end(void *ctx)
{
    return container_end(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* ---- the stream ---------------------------------------------------------------- */

partd_jstream *partd__decode_stream_new(const partd_js_handler *h, void *ctx)
{
    partd_jstream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->h = h;
    s->ctx = ctx;
    s->line = 1;
    s->frames = malloc(PARTD_JSON_MAX_DEPTH * sizeof *s->frames);
    if (!s->frames) {
        free(s);
        return NULL;
    }
    yajl_alloc_funcs afs = {ya_malloc, ya_realloc, ya_free, s};
    if (guarded_alloc(s, &afs) != 0) { /* yajl copies afs into its handle */
        partd__decode_stream_free(s);
        return NULL;
    }
    return s;
}

void partd__decode_stream_free(partd_jstream *s)
{
    if (!s)
        return;
    if (s->yajl)
        yajl_free(s->yajl);
    for (uint32_t i = s->depth; i-- > 0;) {
        partd__decode_keys_close(&s->keys, &s->frames[i].keys);
        if (s->frames[i].build_root)
            json_decref(s->frames[i].json);
    }
    free(s->frames);
    partd__decode_keys_free(&s->keys);
    free(s->held_text);
    free(s);
}

void partd__decode_stream_set_cancel(partd_jstream *s, const partd_cancel *cancel)
{
    s->cancel = cancel;
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
    size_t at = yajl_get_bytes_consumed(s->yajl);
    if (at > n)
        at = n;
    char what[ERROR_CAP];
    if (guarded_error(s, text, n, what, sizeof what) != 0) {
        s->failed = PARTD_ENOMEM;
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
    if (n && guarded_parse(s, text, n, &st) != 0)
        return s->failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, w, p, text, base, n);
    else if (st == yajl_status_client_canceled && s->failed == PARTD_EMALFORMED) {
        char msg[ERROR_CAP];
        snprintf(msg, sizeof msg, "%s", s->error);
        size_t at = yajl_get_bytes_consumed(s->yajl);
        malformed_at(s, w, p, base + (at > n ? n : at), msg);
    }
    return s->failed;
}

/* ---- tokens held back ------------------------------------------------------ */

static int word_byte(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '-' ||
           c == '+' || c == '.';
}

/* 1 when the quote at p[x] is escaped: an odd run of backslashes before
 * it, counting the one left open by the previous chunk (esc) when the run
 * reaches `from`, the start of the string's part in p. */
static int escaped(const char *p, size_t from, size_t x, int esc)
{
    size_t run = 0;
    while (x - run > from && p[x - run - 1] == '\\')
        run++;
    if (x - run == from)
        run += (size_t)esc;
    return (int)(run & 1);
}

/* Just past the first unescaped quote of p[from, n), or SIZE_MAX. */
static size_t string_end(const char *p, size_t from, size_t n, int esc)
{
    for (size_t i = from; i < n;) {
        const char *q = memchr(p + i, '"', n - i);
        if (!q)
            break;
        size_t x = (size_t)(q - p);
        if (!escaped(p, from, x, esc))
            return x + 1;
        i = x + 1;
    }
    return SIZE_MAX;
}

/* The last unescaped quote of p[from, n), or SIZE_MAX. */
static size_t last_quote(const char *p, size_t from, size_t n, int esc)
{
    for (size_t end = n; end > from;) {
        const char *q = memrchr(p + from, '"', end - from);
        if (!q)
            break;
        size_t x = (size_t)(q - p);
        if (!escaped(p, from, x, esc))
            return x;
        end = x;
    }
    return SIZE_MAX;
}

/* Bytes of the token left unfinished at the end of p[from, to), which
 * follows `open` bytes of a token yajl already held unfinished: a string
 * still open there (in_string; esc as for escaped()) or a trailing run of
 * word bytes (numbers and literals: yajl cannot tell they have ended). */
static size_t open_after(const char *p, size_t from, size_t to, size_t open, int in_string,
                         int esc)
{
    if (in_string) {
        size_t q = last_quote(p, from, to, esc);
        return q == SIZE_MAX ? open + (to - from) : to - q;
    }
    size_t t = to;
    while (t > from && word_byte((unsigned char)p[t - 1]))
        t--;
    return t == from ? open + (to - from) : to - t;
}

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
            return s->failed;
        s->open = open_after(p, from, x, s->open, 0, 0);
        if (parse_text(s, w, p, " ", x, 1) != PARTD_OK)
            return s->failed;
        s->open = 0;
        from = x + 1;
    }
    int esc = from == 0 && s->scan.esc0 == PARTD_ESC_BACKSLASH;
    if (parse_text(s, w, p, p + from, from, to - from) == PARTD_OK)
        s->open = open_after(p, from, to, s->open, in_string, esc);
    return s->failed;
}

/* Where in the chunk p[0, n) the held token ends (just past it), or
 * SIZE_MAX when it goes on past the chunk. */
static size_t held_end(const partd_jstream *s, const char *p, size_t n)
{
    if (s->held == HELD_WORD) {
        size_t i = 0;
        while (i < n && word_byte((unsigned char)p[i]))
            i++;
        return i < n ? i : SIZE_MAX;
    }
    /* no unescaped quote in the chunk: all of it is in the string */
    if (s->scan.quotes == s->scan.escaped_quotes)
        return SIZE_MAX;
    return string_end(p, 0, n, s->scan.esc0 == PARTD_ESC_BACKSLASH);
}

/* Where a token cut by the end of the chunk p[0, n) starts, at or after
 * `from` (where nothing is open); n when none is. *kind says which;
 * *in_string whether the chunk ends inside a string. */
static size_t cut_token(const partd_jstream *s, const char *p, size_t from, size_t n,
                        held_kind *kind, int *in_string)
{
    *in_string = s->scan.in_string ^ (int)((s->scan.quotes - s->scan.escaped_quotes) & 1);
    *kind = HELD_NONE;
    if (*in_string) {
        int esc = from == 0 && s->scan.esc0 == PARTD_ESC_BACKSLASH;
        size_t q = last_quote(p, from, n, esc);
        if (q == SIZE_MAX)
            return n; /* not JSON; yajl will say so */
        *kind = HELD_STRING;
        return q;
    }
    size_t t = n;
    while (t > from && word_byte((unsigned char)p[t - 1]))
        t--;
    if (t < n)
        *kind = HELD_WORD;
    return t;
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
                held_kind kind)
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
    if (s->held == HELD_NONE)
        return PARTD_OK;
    s->held = HELD_NONE;
    if (parse_text(s, &s->held_at, s->held_text, s->held_text, 0, s->held_len) == PARTD_OK)
        s->open = open_after(s->held_text, 0, s->held_len, s->open, 0, 0);
    if (s->held_cap > HELD_KEEP) { /* a long string: its copy goes now */
        free(s->held_text);
        s->held_text = NULL;
        s->held_cap = 0;
    }
    return s->failed;
}

/* ---- feeding ------------------------------------------------------------------ */

int partd__decode_stream_feed(partd_jstream *s, const char *p, size_t n)
{
    if (s->failed)
        return s->failed;
    if (n == 0)
        return PARTD_OK;
    if (stopped(s) != PARTD_OK)
        return s->failed;
    char what[ERROR_CAP];
    where w = here(s);
    size_t good = partd__decode_scan_chunk(&s->scan, p, n, what, sizeof what);
    if (good < n) {
        /* yajl reads up to the byte jansson refuses, in case it finds an
         * error before it */
        if (release(s) == PARTD_OK && parse_span(s, &w, p, 0, good, 0) == PARTD_OK)
            malformed_at(s, &w, p, good, what);
        return s->failed;
    }
    size_t from = 0;
    if (s->held != HELD_NONE) {
        size_t e = held_end(s, p, n);
        if (held_append(s, p, e == SIZE_MAX ? n : e) != 0)
            return s->failed = PARTD_ENOMEM;
        if (e == SIZE_MAX) {
            advance(s, p, n);
            return PARTD_OK;
        }
        if (release(s) != PARTD_OK)
            return s->failed;
        from = e;
    }
    held_kind kind;
    int in_string;
    size_t t = cut_token(s, p, from, n, &kind, &in_string);
    if (parse_span(s, &w, p, from, t, t == n && in_string) != PARTD_OK)
        return s->failed;
    if (t < n && hold(s, &w, p, t, n, kind) != 0)
        return s->failed = PARTD_ENOMEM;
    advance(s, p, n);
    return PARTD_OK;
}

int partd__decode_stream_finish(partd_jstream *s)
{
    if (s->failed)
        return s->failed;
    if (release(s) != PARTD_OK)
        return s->failed;
    char what[ERROR_CAP] = "";
    where w = here(s);
    yajl_status st;
    if (guarded_parse(s, "", 0, &st) != 0)
        return s->failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, &w, "", "", 0, 0);
    else if (st == yajl_status_client_canceled && s->failed == PARTD_EMALFORMED) {
        snprintf(what, sizeof what, "%s", s->error);
        malformed_at(s, &w, "", 0, what);
    } else if (s->scan.utf8_left) {
        malformed_at(s, &w, "", 0, "premature end of input (a character is cut short)");
    }
    return s->failed;
}

const char *partd__decode_stream_error(const partd_jstream *s)
{
    return s->error;
}
