/*
 * test_json_out.c - the streaming JSON writer prints what jansson's compact
 * dump (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))
 * prints: scalars one by one over many random values, and whole random
 * documents; the sink's refusal, capture and non-finite reals.
 */
#include "testutil.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "partd/json_out.h"
#include "partd/partd.h"

#define FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15) | JSON_ENCODE_ANY)

/* A sink into a growable string; refuses once `limit` bytes (0 = none)
 * would be passed, and records the largest chunk. */
typedef struct text {
    char *s;
    size_t len, cap, limit, largest;
    int calls;
} text;

static int text_sink(const char *data, size_t n, void *ctx)
{
    text *t = ctx;
    t->calls++;
    if (t->limit && t->len + n > t->limit)
        return PARTD_ETOOBIG;
    if (n > t->largest)
        t->largest = n;
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
        assert_non_null(t->s);
    }
    memcpy(t->s + t->len, data, n);
    t->len += n;
    t->s[t->len] = '\0';
    return PARTD_OK;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Doubles of every kind: random bit patterns (finite ones), integral
 * values, short decimals, powers of ten at the exponent boundaries. */
static double random_double(void)
{
    switch (rnd() % 6) {
    case 0: {
        double d;
        do {
            uint64_t bits = rnd();
            memcpy(&d, &bits, sizeof d);
        } while (!isfinite(d));
        return d;
    }
    case 1: return (double)(int64_t)(rnd() % 2000001) - 1000000.0;
    case 2: return (double)(rnd() % 100000) / 1000.0;
    case 3: return pow(10.0, (double)((int)(rnd() % 629) - 320)) * ((rnd() & 1) ? -1 : 1);
    case 4: return (double)(rnd() % 1000) * pow(2.0, (double)((int)(rnd() % 200) - 100));
    default: return (double)rnd() / 3.0;
    }
}

/* Valid UTF-8 with control characters, quotes, backslashes, slashes, DEL
 * and characters of 2, 3 and 4 bytes. */
static char *random_string(void)
{
    static const char *const pieces[] = {
        "a", "Z", "0", " ", "\"", "\\", "/", "\x01", "\x1f", "\n", "\r", "\t", "\b", "\f",
        "\x7f", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x8e\x89", "\xef\xbf\xbf", "\xc2\x80",
        "\x1b", "\x0b", "~"};
    size_t n = rnd() % 24;
    char *s = malloc(n * 4 + 1);
    assert_non_null(s);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[rnd() % (sizeof pieces / sizeof *pieces)];
        memcpy(s + len, p, strlen(p));
        len += strlen(p);
    }
    s[len] = '\0';
    return s;
}

static void assert_same_as_jansson(json_t *v, const text *t)
{
    char *expect = json_dumps(v, FLAGS);
    assert_non_null(expect);
    assert_string_equal(t->s ? t->s : "", expect);
    free(expect);
}

static void test_scalars_match_jansson(void **state)
{
    (void)state;
    for (int i = 0; i < 20000; i++) {
        text t = {0};
        partd_json_out o;
        partd_json_out_init(&o, text_sink, &t);
        json_t *v;
        char *s = NULL;
        switch (i % 3) {
        case 0: {
            double d = random_double();
            v = json_real(d);
            partd_json_out_real(&o, d);
            break;
        }
        case 1: {
            int64_t x = (int64_t)rnd();
            if (i % 7 == 0)
                x = i % 2 ? INT64_MIN : INT64_MAX;
            v = json_integer(x);
            partd_json_out_int(&o, x);
            break;
        }
        default:
            s = random_string();
            v = json_string(s);
            partd_json_out_string(&o, s);
        }
        assert_non_null(v);
        assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
        assert_same_as_jansson(v, &t);
        json_decref(v);
        free(s);
        free(t.s);
    }
}

static void test_edge_reals(void **state)
{
    (void)state;
    const double v[] = {0.0, -0.0, 1.0, -1.0, 0.1, 1e15, 1e16, 1e17, 1e20, 1e21, 1e100,
                        1e-5, 1e-4, 1.5e-7, 1e-300, 4.9e-324, DBL_MAX, -DBL_MAX, DBL_MIN,
                        123456789012345.0, 1234567890123456.0, 0.5000008, 2.0 / 3.0};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        text t = {0};
        partd_json_out o;
        partd_json_out_init(&o, text_sink, &t);
        partd_json_out_real(&o, v[i]);
        assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
        json_t *j = json_real(v[i]);
        assert_same_as_jansson(j, &t);
        json_decref(j);
        free(t.s);
    }
    char buf[32];
    assert_int_equal(partd_json_out_format_real(1e20, buf), 4);
    assert_string_equal(buf, "1e20");
    partd_json_out_format_real(1e-5, buf);
    assert_string_equal(buf, "1e-5");
    partd_json_out_format_real(3.0, buf);
    assert_string_equal(buf, "3.0");
    assert_int_equal(partd_json_out_format_real(NAN, buf), -1);
    assert_int_equal(partd_json_out_format_real(-INFINITY, buf), -1);
}

/* A random document, built as a DOM and written the same way through the
 * writer by walking the DOM. */
static json_t *random_value(int depth)
{
    int kind = depth > 3 ? (int)(rnd() % 4) : (int)(rnd() % 6);
    switch (kind) {
    case 0: return json_real(random_double());
    case 1: return json_integer((json_int_t)rnd());
    case 2: {
        char *s = random_string();
        json_t *v = json_string(s);
        free(s);
        return v;
    }
    case 3: return json_boolean(rnd() & 1);
    case 4: {
        json_t *a = json_array();
        for (size_t n = rnd() % 6; n > 0; n--)
            json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t n = rnd() % 6; n > 0; n--) {
            char *k = random_string();
            json_object_set_new(o, k, random_value(depth + 1));
            free(k);
        }
        return o;
    }
    }
}

static void write_value(partd_json_out *o, json_t *v)
{
    const char *k;
    json_t *x;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        partd_json_out_begin_object(o);
        json_object_foreach(v, k, x) {
            partd_json_out_key(o, k);
            write_value(o, x);
        }
        partd_json_out_end_object(o);
        break;
    case JSON_ARRAY:
        partd_json_out_begin_array(o);
        json_array_foreach(v, i, x) write_value(o, x);
        partd_json_out_end_array(o);
        break;
    case JSON_STRING: partd_json_out_string(o, json_string_value(v)); break;
    case JSON_INTEGER: partd_json_out_int(o, json_integer_value(v)); break;
    case JSON_REAL: partd_json_out_real(o, json_real_value(v)); break;
    default: partd_json_out_bool(o, json_is_true(v)); break;
    }
}

static void test_documents_match_jansson(void **state)
{
    (void)state;
    for (int i = 0; i < 2000; i++) {
        json_t *doc = json_object();
        for (int k = 0; k < 4; k++) {
            char key[8] = {(char)('a' + k), 0};
            json_object_set_new(doc, key, random_value(0));
        }
        text t = {0};
        partd_json_out o;
        partd_json_out_init(&o, text_sink, &t);
        write_value(&o, doc);
        assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
        assert_same_as_jansson(doc, &t);
        assert_int_equal(partd_json_out_bytes(&o), t.len);
        /* And the DOM's text copied in, between values of our own. */
        free(t.s);
        t = (text){0};
        partd_json_out_init(&o, text_sink, &t);
        partd_json_out_begin_array(&o);
        partd_json_out_int(&o, 1);
        char *dumped = json_dumps(doc, FLAGS);
        assert_non_null(dumped);
        partd_json_out_verbatim(&o, dumped, strlen(dumped));
        free(dumped);
        partd_json_out_bool(&o, 0);
        partd_json_out_end_array(&o);
        assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
        json_t *wrap = json_pack("[i,O,b]", 1, doc, 0);
        assert_same_as_jansson(wrap, &t);
        json_decref(wrap);
        json_decref(doc);
        free(t.s);
    }
}

/* Long strings cross chunk boundaries; chunks never exceed the buffer. */
static void test_chunks(void **state)
{
    (void)state;
    size_t n = 3 * PARTD_JSON_OUT_CHUNK + 17;
    char *s = malloc(n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = i % 97 == 0 ? '\n' : (char)('a' + i % 26);
    s[n] = '\0';
    text t = {0};
    partd_json_out o;
    partd_json_out_init(&o, text_sink, &t);
    partd_json_out_string(&o, s);
    assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
    json_t *v = json_string(s);
    assert_same_as_jansson(v, &t);
    assert_true(t.largest <= PARTD_JSON_OUT_CHUNK);
    assert_true(t.calls >= 3);
    json_decref(v);
    free(s);
    free(t.s);
}

/* The sink's refusal stops everything after it and is what every later
 * call returns; a non-finite real is an internal error. */
static void test_failures_are_sticky(void **state)
{
    (void)state;
    text t = {.limit = 100};
    partd_json_out o;
    partd_json_out_init(&o, text_sink, &t);
    partd_json_out_begin_array(&o);
    int rc = PARTD_OK;
    for (int i = 0; i < 100000 && rc == PARTD_OK; i++)
        rc = partd_json_out_int(&o, i);
    assert_int_equal(rc, PARTD_ETOOBIG);
    int calls = t.calls;
    assert_int_equal(partd_json_out_string(&o, "more"), PARTD_ETOOBIG);
    assert_int_equal(partd_json_out_flush(&o), PARTD_ETOOBIG);
    assert_int_equal(t.calls, calls);
    assert_int_equal(t.len, 0); /* the one chunk was refused whole */
    free(t.s);

    t = (text){0};
    partd_json_out_init(&o, text_sink, &t);
    assert_int_equal(partd_json_out_real(&o, NAN), PARTD_EINTERNAL);
    assert_int_equal(partd_json_out_fail(&o, PARTD_ENOMEM), PARTD_EINTERNAL);
    assert_int_equal(partd_json_out_flush(&o), PARTD_EINTERNAL);
    assert_null(t.s);
}

static void test_capture(void **state)
{
    (void)state;
    text t = {0};
    partd_json_out o;
    partd_json_out_init(&o, text_sink, &t);
    partd_json_out_begin_object(&o);
    partd_json_out_key(&o, "a");
    partd_json_out_int(&o, 1);
    partd_json_out_key(&o, "s");
    partd_json_out_capture_start(&o);
    partd_json_out_begin_object(&o);
    partd_json_out_key(&o, "x");
    partd_json_out_real(&o, 2.5);
    partd_json_out_key(&o, "y");
    partd_json_out_string(&o, "q\"");
    partd_json_out_end_object(&o);
    size_t len = 0;
    char *c = partd_json_out_capture_end(&o, &len);
    partd_json_out_end_object(&o);
    assert_int_equal(partd_json_out_flush(&o), PARTD_OK);
    assert_string_equal(c, "{\"x\":2.5,\"y\":\"q\\\"\"}");
    assert_int_equal(len, strlen(c));
    assert_string_equal(t.s, "{\"a\":1,\"s\":{\"x\":2.5,\"y\":\"q\\\"\"}}");
    free(c);
    /* An empty capture is an empty string, not NULL. */
    partd_json_out_capture_start(&o);
    c = partd_json_out_capture_end(&o, &len);
    assert_string_equal(c, "");
    free(c);
    partd_json_out_release(&o);
    free(t.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars_match_jansson),
        cmocka_unit_test(test_edge_reals),
        cmocka_unit_test(test_documents_match_jansson),
        cmocka_unit_test(test_chunks),
        cmocka_unit_test(test_failures_are_sticky),
        cmocka_unit_test(test_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
