/*
 * decode_events.c - yajl's callbacks turned into the reading layer's
 * events (decode_stream.h: a value starts, a key, a container ends, a
 * value built): the frames of the open containers and what the handler
 * chose for each (deliver, skip or build), the duplicate-key check
 * (decode_keys.h), jansson's nesting limit and numbers (decode_number.c),
 * and a look at the cancel flag every CANCEL_EVERY values.
 *
 * Errors: a callback that fails records why in ev->failed (PARTD_ENOMEM,
 * PARTD_EMALFORMED with ev->error saying what, PARTD_ECANCELLED or
 * PARTD_ETIMEOUT) and returns 0, which stops yajl; the stream places a
 * syntax error at the byte yajl stopped on. The first failure recorded is
 * the one kept.
 */
#include <stdio.h>
#include <stdlib.h>

#include "decode_internal.h"
#include "partd/partd.h"

#define CANCEL_EVERY 4096   /* values between two looks at the cancel flag */

int partd__decode_events_fail(partd_jevents *ev, int code)
{
    if (ev->failed == PARTD_OK)
        ev->failed = code;
    return 0; /* yajl: stop */
}

int partd__decode_events_stopped(partd_jevents *ev)
{
    int rc = partd_cancel_check(ev->cancel);
    if (rc != PARTD_OK) {
        snprintf(ev->error, sizeof ev->error, "%s", partd_strerror(rc));
        partd__decode_events_fail(ev, rc);
    }
    return rc;
}

static int fail(partd_jevents *ev, int code)
{
    return partd__decode_events_fail(ev, code);
}

static partd_jframe *top(partd_jevents *ev)
{
    return ev->depth ? &ev->frames[ev->depth - 1] : NULL;
}

/* Attaches a built value to the container being built around it. */
static int attach(partd_jevents *ev, partd_jframe *parent, json_t *v)
{
    if (!v)
        return -1;
    if (parent->is_object)
        return json_object_set_new_nocheck(parent->json,
                                           partd__decode_keys_last(&ev->keys, &parent->keys), v);
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
 * Returns 1 to go on, 0 to stop the parse (ev->failed set). */
static int value_start(partd_jevents *ev, const partd_scalar *v)
{
    if (++ev->values == CANCEL_EVERY) {
        ev->values = 0;
        if (partd__decode_events_stopped(ev) != PARTD_OK)
            return 0;
    }
    if (ev->depth >= PARTD_JSON_MAX_DEPTH) {
        snprintf(ev->error, sizeof ev->error, "maximum parsing depth (%d) reached",
                 PARTD_JSON_MAX_DEPTH);
        return fail(ev, PARTD_EMALFORMED);
    }
    int container = v->type == JSON_OBJECT || v->type == JSON_ARRAY;
    partd_jframe *parent = top(ev);
    partd_jmode m;
    json_t *built = NULL;
    if (!parent || parent->mode == PARTD_JMODE_DELIVER) {
        partd_js_action a = ev->h->value(ev->ctx, v);
        if (a == PARTD_JS_NOMEM)
            return fail(ev, PARTD_ENOMEM);
        m = a == PARTD_JS_DESCEND ? PARTD_JMODE_DELIVER
            : a == PARTD_JS_SKIP  ? PARTD_JMODE_SKIP
                                  : PARTD_JMODE_BUILD;
        if (m == PARTD_JMODE_BUILD) {
            if (!(built = scalar_json(v)))
                return fail(ev, PARTD_ENOMEM);
            if (!container && ev->h->built(ev->ctx, built) != 0)
                return fail(ev, PARTD_ENOMEM);
        }
    } else {
        m = parent->mode;
        if (m == PARTD_JMODE_BUILD) {
            built = scalar_json(v);
            if (attach(ev, parent, built) != 0)
                return fail(ev, PARTD_ENOMEM);
        }
    }
    if (!container)
        return 1;
    partd_jframe *f = &ev->frames[ev->depth++];
    *f = (partd_jframe){.is_object = v->type == JSON_OBJECT, .mode = (uint8_t)m, .json = built};
    partd__decode_keys_open(&ev->keys, &f->keys);
    f->build_root = m == PARTD_JMODE_BUILD && (!parent || parent->mode != PARTD_JMODE_BUILD);
    return 1;
}

static int container_end(partd_jevents *ev)
{
    partd_jframe *f = top(ev);
    ev->depth--;
    partd__decode_keys_close(&ev->keys, &f->keys);
    if (f->mode == PARTD_JMODE_DELIVER && ev->h->end(ev->ctx) != 0)
        return fail(ev, PARTD_ENOMEM);
    if (f->build_root && ev->h->built(ev->ctx, f->json) != 0)
        return fail(ev, PARTD_ENOMEM);
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

static int on_number(void *ctx, const char *t, size_t len)
{
    partd_jevents *ev = ctx;
    partd_scalar v;
    const char *bad = NULL;
    int rc = partd__decode_number_read(t, len, &v, &bad);
    if (rc == PARTD_EMALFORMED)
        snprintf(ev->error, sizeof ev->error, "%s", bad);
    if (rc != PARTD_OK)
        return fail(ev, rc);
    return value_start(ev, &v);
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
    partd_jevents *ev = ctx;
    partd_jframe *f = top(ev);
    const char *key = (const char *)k;
    int had = partd__decode_keys_add(&ev->keys, &f->keys, key, len);
    if (had < 0)
        return fail(ev, PARTD_ENOMEM);
    if (had) {
        snprintf(ev->error, sizeof ev->error, "duplicate object key \"%.*s\"",
                 (int)(len < 64 ? len : 64), key);
        return fail(ev, PARTD_EMALFORMED);
    }
    if (f->mode == PARTD_JMODE_DELIVER &&
        ev->h->key(ev->ctx, partd__decode_keys_last(&ev->keys, &f->keys), len) != 0)
        return fail(ev, PARTD_ENOMEM);
    return 1;
}

static int on_end(void *ctx)
{
    return container_end(ctx);
}

const yajl_callbacks partd__decode_events_callbacks = {
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

/* ---- life cycle --------------------------------------------------------------- */

int partd__decode_events_init(partd_jevents *ev, const partd_js_handler *h, void *ctx)
{
    *ev = (partd_jevents){.h = h, .ctx = ctx};
    ev->frames = malloc(PARTD_JSON_MAX_DEPTH * sizeof *ev->frames);
    return ev->frames ? 0 : -1;
}

void partd__decode_events_free(partd_jevents *ev)
{
    if (!ev->frames)
        return;
    for (uint32_t i = ev->depth; i-- > 0;) {
        partd__decode_keys_close(&ev->keys, &ev->frames[i].keys);
        if (ev->frames[i].build_root)
            json_decref(ev->frames[i].json);
    }
    free(ev->frames);
    ev->frames = NULL;
    partd__decode_keys_free(&ev->keys);
}
