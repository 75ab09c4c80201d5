/*
 * decode_stream.c - chunks of JSON text -> events; see decode_stream.h.
 *
 * Each chunk is pre-scanned first (decode_scan.h) for what yajl would let
 * through; yajl then parses the chunk up to the first such byte, so that a
 * syntax error before it is the one reported, as jansson would. Frames
 * follow the open containers; the keys of the open objects, for the
 * duplicate check, are kept by decode_keys.h.
 */
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
#include "partd.h"

#define MAX_YAJL_BLOCKS 32  /* yajl holds about 7 blocks at a time */
#define ERROR_CAP 256

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

static void *track(partd_jstream *s, void *old, void *p)
{
    for (int i = 0; i < MAX_YAJL_BLOCKS; i++)
        if (s->blocks[i] == old) {
            s->blocks[i] = p;
            return p;
        }
    free(p);
    nomem_jump(s);
    return NULL;
}

static void *ya_malloc(void *ctx, size_t n)
{
    partd_jstream *s = ctx;
    void *p = malloc(n);
    if (!p)
        nomem_jump(s);
    return track(s, NULL, p);
}

static void *ya_realloc(void *ctx, void *old, size_t n)
{
    partd_jstream *s = ctx;
    if (!old)
        return ya_malloc(ctx, n);
    void *p = realloc(old, n);
    if (!p)
        nomem_jump(s); /* old is still tracked and still valid */
    for (int i = 0; i < MAX_YAJL_BLOCKS; i++)
        if (s->blocks[i] == old) {
            s->blocks[i] = p;
            break;
        }
    return p;
}

static void ya_free(void *ctx, void *p)
{
    partd_jstream *s = ctx;
    if (!p)
        return;
    for (int i = 0; i < MAX_YAJL_BLOCKS; i++)
        if (s->blocks[i] == p) {
            s->blocks[i] = NULL;
            break;
        }
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

/* A syntax error at byte `at` of the current chunk p. */
static void malformed_at(partd_jstream *s, const char *p, size_t at, const char *what)
{
    size_t line = s->line, start = s->line_start;
    for (size_t i = 0; i < at; i++)
        if (p[i] == '\n') {
            line++;
            start = s->offset + i + 1;
        }
    size_t off = s->offset + at;
    snprintf(s->error, sizeof s->error, "%s (line %zu, column %zu, byte %zu)", what, line,
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
    partd_jscan_done(&s->scan, p, n);
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
                                           partd_keyset_last(&s->keys, &parent->keys), v);
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
    partd_keyset_open(&s->keys, &f->keys);
    f->build_root = m == MODE_BUILD && (!parent || parent->mode != MODE_BUILD);
    return 1;
}

static int container_end(partd_jstream *s)
{
    frame *f = top(s);
    s->depth--;
    partd_keyset_close(&s->keys, &f->keys);
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
    char *buf = len < sizeof s->num ? s->num : malloc(len + 1);
    if (!buf)
        return fail(s, PARTD_ENOMEM);
    memcpy(buf, t, len);
    buf[len] = '\0';
    errno = 0;
    const char *bad = NULL;
    if (integer) {
        v.i = strtoll(buf, NULL, 10);
        if (errno == ERANGE)
            bad = v.i < 0 ? "too big negative integer" : "too big integer";
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
    if (partd_keyset_has(&s->keys, &f->keys, key, len)) {
        snprintf(s->error, sizeof s->error, "duplicate object key \"%.*s\"",
                 (int)(len < 64 ? len : 64), key);
        return fail(s, PARTD_EMALFORMED);
    }
    if (partd_keyset_add(&s->keys, &f->keys, key, len) != 0)
        return fail(s, PARTD_ENOMEM);
    if (f->mode == MODE_DELIVER && s->h->key(s->ctx, partd_keyset_last(&s->keys, &f->keys), len) != 0)
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

partd_jstream *partd_jstream_new(const partd_js_handler *h, void *ctx)
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
        partd_jstream_free(s);
        return NULL;
    }
    return s;
}

void partd_jstream_free(partd_jstream *s)
{
    if (!s)
        return;
    if (s->yajl)
        yajl_free(s->yajl);
    for (uint32_t i = 0; i < s->depth; i++) {
        free(s->frames[i].keys.set);
        if (s->frames[i].build_root)
            json_decref(s->frames[i].json);
    }
    free(s->frames);
    partd_keys_free(&s->keys);
    free(s);
}

/* yajl's error in text[0, n), which stands at p[base] of the chunk p, or
 * an out-of-memory failure. */
static void yajl_failed(partd_jstream *s, const char *p, const char *text, size_t base,
                        size_t n)
{
    size_t at = yajl_get_bytes_consumed(s->yajl);
    if (at > n)
        at = n;
    char what[ERROR_CAP];
    if (guarded_error(s, text, n, what, sizeof what) != 0) {
        s->failed = PARTD_ENOMEM;
        return;
    }
    malformed_at(s, p, base + at, what);
}

/* Parses text[0, n), which stands at p[base] of the chunk p. */
static int parse_text(partd_jstream *s, const char *p, const char *text, size_t base, size_t n)
{
    yajl_status st = yajl_status_ok;
    if (n && guarded_parse(s, text, n, &st) != 0)
        return s->failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, p, text, base, n);
    else if (st == yajl_status_client_canceled && s->failed == PARTD_EMALFORMED) {
        char msg[ERROR_CAP];
        snprintf(msg, sizeof msg, "%s", s->error);
        size_t at = yajl_get_bytes_consumed(s->yajl);
        malformed_at(s, p, base + (at > n ? n : at), msg);
    }
    return s->failed;
}

int partd_jstream_feed(partd_jstream *s, const char *p, size_t n)
{
    if (s->failed)
        return s->failed;
    if (n == 0)
        return PARTD_OK;
    char what[ERROR_CAP];
    size_t good = partd_jscan_chunk(&s->scan, p, n, what, sizeof what);
    size_t start = 0;
    const char *z;
    while ((z = memchr(p + start, '\0', good - start)) &&
           partd_jscan_skips_nul(&s->scan, p, (size_t)(z - p))) {
        /* it still ends the token: a space to yajl */
        size_t x = (size_t)(z - p);
        if (parse_text(s, p, p + start, start, x - start) != PARTD_OK ||
            parse_text(s, p, " ", x, 1) != PARTD_OK)
            return s->failed;
        start = x + 1;
    }
    if (parse_text(s, p, p + start, start, good - start) != PARTD_OK)
        return s->failed;
    if (good < n) {
        malformed_at(s, p, good, what);
        return s->failed;
    }
    advance(s, p, n);
    return PARTD_OK;
}

int partd_jstream_finish(partd_jstream *s)
{
    if (s->failed)
        return s->failed;
    char what[ERROR_CAP] = "";
    yajl_status st;
    if (guarded_parse(s, "", 0, &st) != 0)
        return s->failed = PARTD_ENOMEM;
    if (st == yajl_status_error)
        yajl_failed(s, "", "", 0, 0);
    else if (st == yajl_status_client_canceled && s->failed == PARTD_EMALFORMED) {
        snprintf(what, sizeof what, "%s", s->error);
        malformed_at(s, "", 0, what);
    } else if (s->scan.utf8_left) {
        malformed_at(s, "", 0, "premature end of input (a character is cut short)");
    }
    return s->failed;
}

const char *partd_jstream_error(const partd_jstream *s)
{
    return s->error;
}
