/*
 * test_decode_hostile.c - requests built to make the decoder slow: what
 * they cost is counted (slots read, bytes parsed, allocations), never
 * timed, and must grow linearly with the body.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collide.h"
#include "decode/decode_stream.h"
#include "partd/cancel.h"
#include "partd/partd.h"

#define DEV "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000000}]"

/* A chain of 2^12 nodes named to collide under FNV-1a (what the name
 * table hashed with before it was keyed), each reading the one before:
 * every name interned twice, a few slots read each. */
static void test_crafted_node_names_cost_linear(void **state)
{
    (void)state;
    enum { BLOCKS = 12, N = 1 << BLOCKS, LEN = BLOCKS * PARTD_COLLIDE_BLOCK };
    char (*pairs)[PARTD_COLLIDE_BLOCK] = malloc(2 * BLOCKS * sizeof *pairs);
    size_t cap = (size_t)N * (2 * LEN + 80) + 256, used = 0;
    char *body = malloc(cap);
    assert_non_null(pairs);
    assert_non_null(body);
    assert_int_equal(partd_collide_pairs(BLOCKS, pairs), 0);
    used += (size_t)snprintf(body, cap, "{" DEV ",\"graph\":{\"nodes\":[");
    char name[LEN + 1], prev[LEN + 1];
    for (uint32_t i = 0; i < N; i++) {
        partd_collide_name(pairs, BLOCKS, i, name);
        if (i == 0)
            used += (size_t)snprintf(body + used, cap - used,
                                     "{\"name\":\"%s\",\"op\":\"placeholder\"}", name);
        else
            used += (size_t)snprintf(body + used, cap - used,
                                     ",{\"name\":\"%s\",\"op\":\"call_function\",\"inputs\":[\"%s\"]}",
                                     name, prev);
        memcpy(prev, name, sizeof name);
    }
    used += (size_t)snprintf(body + used, cap - used, "]}}");
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decode(body, used, NULL, &req, &pb), PARTD_OK);
    assert_int_equal(req->graph.n_nodes, N);
    assert_true(req->strings.count >= N);
    assert_true(req->strings.probes <= (uint64_t)8 * 2 * N);
    partd_request_free(req);
    partd_problem_free(&pb);
    free(body);
    free(pairs);
}

/* ---- the reading layer alone ------------------------------------------- */

static partd_js_action skip_value(void *ctx, const partd_scalar *v)
{
    (void)ctx;
    return v->type == JSON_OBJECT || v->type == JSON_ARRAY ? PARTD_JS_DESCEND : PARTD_JS_SKIP;
}

static int no_key(void *ctx, const char *key, size_t len)
{
    (void)ctx, (void)key, (void)len;
    return 0;
}

static int no_end(void *ctx)
{
    (void)ctx;
    return 0;
}

static int no_built(void *ctx, json_t *v)
{
    (void)ctx;
    json_decref(v);
    return 0;
}

static const partd_js_handler skipper = {skip_value, no_key, no_end, no_built};

/* Feeds body in pieces of `piece` bytes (0: whole); the code and the
 * stream's counts. */
static int feed_in_pieces(const char *body, size_t len, size_t piece, partd_jstream_stats *st)
{
    partd_jstream *s = partd__decode_stream_new(&skipper, NULL);
    assert_non_null(s);
    int rc = PARTD_OK;
    for (size_t at = 0; at < len && rc == PARTD_OK; at += piece ? piece : len)
        rc = partd__decode_stream_feed(s, body + at, piece && len - at > piece ? piece : len - at);
    if (rc == PARTD_OK)
        rc = partd__decode_stream_finish(s);
    partd__decode_stream_stats(s, st);
    partd__decode_stream_free(s);
    return rc;
}

/* A body of `head`, n copies of `fill` and `tail`. */
static char *filled(const char *head, const char *fill, size_t n, const char *tail, size_t *len)
{
    size_t h = strlen(head), f = strlen(fill), t = strlen(tail);
    char *b = malloc(h + n * f + t + 1);
    assert_non_null(b);
    memcpy(b, head, h);
    for (size_t i = 0; i < n; i++)
        memcpy(b + h + i * f, fill, f);
    memcpy(b + h + n * f, tail, t + 1);
    *len = h + n * f + t;
    return b;
}

/* A 128 KiB string, a number of 128 Ki digits and a string of 64 Ki
 * escapes, cut into 1-byte, 7-byte and 4 KiB pieces: yajl is handed every byte once and
 * lexes almost none again (a token it holds unfinished it lexes anew from
 * its start with every text after: the square of its length in all, had
 * the stream handed it over piece by piece), and the stream copies each
 * byte at most once to hand a cut token over whole. */
static void test_long_tokens_cost_linear_in_any_pieces(void **state)
{
    (void)state;
    enum { LONG = 1 << 17 };
    static const size_t pieces[] = {0, 1, 7, 4096};
    static const struct {
        const char *head, *fill, *tail;
        size_t n;
    } bodies[] = {
        {"{\"meta\":{\"note\":\"", "x", "\"},\"k\":[1,2]}", LONG},
        {"[1,0.", "7", ",2]", LONG},
        {"{\"a\":[\"", "\\\"\\\\", "\"]}", LONG / 2},
    };
    for (size_t b = 0; b < sizeof bodies / sizeof *bodies; b++) {
        size_t len;
        char *body = filled(bodies[b].head, bodies[b].fill, bodies[b].n, bodies[b].tail, &len);
        for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
            partd_jstream_stats st;
            assert_int_equal(feed_in_pieces(body, len, pieces[k], &st), PARTD_OK);
            if (st.parsed > len || st.relexed > len + 16 || st.held > len)
                fail_msg("body %zu in pieces of %zu: parsed %llu, lexed again %llu, held %llu "
                         "of %zu bytes", b, pieces[k], (unsigned long long)st.parsed,
                         (unsigned long long)st.relexed, (unsigned long long)st.held, len);
        }
        free(body);
    }
}

/* NULs that end numbers (jansson reads them as token boundaries): where
 * each one stands is found by reading the chunk once, not once per NUL. */
static void test_many_nuls_read_once(void **state)
{
    (void)state;
    size_t len;
    char *body = filled("[", "1\0,", 100000, "1]", &len);
    /* filled() stops at the NUL: build it by hand */
    free(body);
    len = 1 + 100000 * 3 + 2;
    body = malloc(len);
    assert_non_null(body);
    body[0] = '[';
    for (size_t i = 0; i < 100000; i++)
        memcpy(body + 1 + 3 * i, "1\0,", 3);
    memcpy(body + len - 2, "1]", 2);
    static const size_t pieces[] = {0, 7, 65536};
    for (size_t k = 0; k < sizeof pieces / sizeof *pieces; k++) {
        partd_jstream_stats st;
        assert_int_equal(feed_in_pieces(body, len, pieces[k], &st), PARTD_OK);
        assert_true(st.nul_walked <= len);
    }
    free(body);
}

/* ---- every string has a limit ------------------------------------------ */

/* graph.name is at most 1024 bytes like every name: a 2 MiB one is a 422
 * at /graph/name saying how long it is, never accepted and stored. */
static void test_graph_name_has_the_names_limit(void **state)
{
    (void)state;
    static const size_t lengths[] = {1024, 1025, 2u << 20};
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        size_t len;
        char *body = filled("{" DEV ",\"graph\":{\"name\":\"", "m", lengths[k],
                            "\",\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]}}", &len);
        partd_problem pb;
        partd_problem_init(&pb);
        partd_request *req = NULL;
        int rc = partd_request_decode(body, len, NULL, &req, &pb);
        if (lengths[k] <= 1024) {
            assert_int_equal(rc, PARTD_OK);
        } else {
            assert_int_equal(rc, PARTD_EINVALID);
            char needle[64];
            snprintf(needle, sizeof needle, "is %zu bytes long", lengths[k]);
            tu_assert_error(&pb, "/graph/name", needle);
            assert_true(strlen(pb.errors[0].message) < 100);
        }
        partd_request_free(req);
        partd_problem_free(&pb);
        free(body);
    }
}

/* ---- cancel and deadline --------------------------------------------- */

/* A request of n chained nodes. */
static char *chain_request(uint32_t n, size_t *len)
{
    size_t cap = (size_t)n * 80 + 256, used = 0;
    char *b = malloc(cap);
    assert_non_null(b);
    used += (size_t)snprintf(b, cap, "{" DEV ",\"graph\":{\"nodes\":[{\"name\":\"n0\","
                                     "\"op\":\"placeholder\"}");
    for (uint32_t i = 1; i < n; i++)
        used += (size_t)snprintf(b + used, cap - used,
                                 ",{\"name\":\"n%u\",\"op\":\"call_function\",\"inputs\":[\"n%u\"]}",
                                 i, i - 1);
    used += (size_t)snprintf(b + used, cap - used, "]}}");
    *len = used;
    return b;
}

/* Feeds `split` bytes, raises the cancel, then feeds the rest (if any)
 * and finishes: the first call after the raise stops with a 503, and so
 * does every call after it. */
static void expect_cancelled_after(const char *body, size_t len, size_t split)
{
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    partd_decode_limits lim = {.cancel = &cancel};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_request_decoder_new(&lim, &pb);
    assert_non_null(dec);
    assert_int_equal(partd_request_decoder_feed(dec, body, split), PARTD_OK);
    atomic_store(&cancel.cancelled, 1);
    if (split < len)
        assert_int_equal(partd_request_decoder_feed(dec, body + split, len - split),
                         PARTD_ECANCELLED);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decoder_finish(dec, &req), PARTD_ECANCELLED);
    assert_null(req);
    assert_int_equal(pb.status, 503);
    assert_non_null(strstr(pb.type, "request-cancelled"));
    partd_request_decoder_free(dec);
    partd_problem_free(&pb);
}

/* Raised between two chunks, the next feed stops; raised after the last
 * byte, finish stops before its passes. */
static void test_cancel_stops_feed_and_finish(void **state)
{
    (void)state;
    size_t len;
    char *body = chain_request(1000, &len);
    expect_cancelled_after(body, len, len / 2);
    expect_cancelled_after(body, len, len);
    free(body);
}

/* Past its deadline: the whole body at once stops at once, with a 408. */
static void test_deadline_stops_decoding(void **state)
{
    (void)state;
    size_t len;
    char *body = chain_request(1000, &len);
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    cancel.deadline_ns = 1; /* long past */
    partd_decode_limits lim = {.cancel = &cancel};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decode(body, len, &lim, &req, &pb), PARTD_ETIMEOUT);
    assert_int_equal(pb.status, 408);
    assert_int_equal(pb.n_errors, 0);
    assert_null(req);
    partd_problem_free(&pb);
    free(body);
}

/* Inside one long chunk: a value raises the cancel (as another thread
 * would while the chunk is parsed), and the parse stops within the next
 * 4,096 values rather than at the chunk's end. */
typedef struct counting {
    partd_cancel *cancel;
    unsigned values;
} counting;

static partd_js_action count_value(void *ctx, const partd_scalar *v)
{
    counting *c = ctx;
    if (++c->values == 10)
        atomic_store(&c->cancel->cancelled, 1);
    return v->type == JSON_OBJECT || v->type == JSON_ARRAY ? PARTD_JS_DESCEND : PARTD_JS_SKIP;
}

static void test_cancel_stops_inside_a_chunk(void **state)
{
    (void)state;
    static const partd_js_handler counter = {count_value, no_key, no_end, no_built};
    size_t len;
    char *body = filled("[", "1,", 100000, "1]", &len);
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    counting c = {&cancel, 0};
    partd_jstream *s = partd__decode_stream_new(&counter, &c);
    assert_non_null(s);
    partd__decode_stream_set_cancel(s, &cancel);
    assert_int_equal(partd__decode_stream_feed(s, body, len), PARTD_ECANCELLED);
    assert_true(c.values <= 10 + 4096);
    assert_int_equal(partd__decode_stream_finish(s), PARTD_ECANCELLED);
    partd__decode_stream_free(s);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crafted_node_names_cost_linear),
        cmocka_unit_test(test_long_tokens_cost_linear_in_any_pieces),
        cmocka_unit_test(test_many_nuls_read_once),
        cmocka_unit_test(test_graph_name_has_the_names_limit),
        cmocka_unit_test(test_cancel_stops_feed_and_finish),
        cmocka_unit_test(test_deadline_stops_decoding),
        cmocka_unit_test(test_cancel_stops_inside_a_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
