/*
 * test_decode_stream.c - the streaming decoder: a body fed in chunks of any
 * size decodes exactly as when fed whole (request, string ids, hashes,
 * problem document with its positions), errors come out in the fixed order
 * whatever the order of the members, and the syntax is jansson's (duplicate
 * keys in meta, the nesting limit, integers that do not fit, \u0000, a NUL
 * after a number).
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decode_stream.h"
#include "partd/partd.h"
#include "request_dump.h"

#define DEV "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":1000}]"
#define OPNODE "{\"name\":\"a\",\"op\":\"call_function\"}"

/* chunk = 0: whole; 1: one byte at a time; else random sizes up to chunk. */
static char *outcome(const char *body, size_t len, const partd_decode_limits *lim, size_t chunk,
                     unsigned seed)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_request_decoder_new(lim, &pb);
    assert_non_null(dec);
    int rc = PARTD_OK;
    srand(seed);
    for (size_t at = 0; at < len && rc == PARTD_OK;) {
        size_t n = chunk == 0 ? len : chunk == 1 ? 1 : 1 + (size_t)rand() % chunk;
        if (n > len - at)
            n = len - at;
        rc = partd_request_decoder_feed(dec, body + at, n);
        at += n;
    }
    partd_request *req = NULL;
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, &req);
    else
        assert_int_equal(partd_request_decoder_feed(dec, "{", 1), rc); /* failures stick */
    char *text = tu_decode_outcome(rc, req, &pb);
    assert_non_null(text);
    partd_request_free(req);
    partd_request_decoder_free(dec);
    partd_problem_free(&pb);
    return text;
}

/* Whole, byte by byte and in random chunks: the same outcome. Returns it. */
static char *same_in_chunks(const char *body, size_t len, const partd_decode_limits *lim)
{
    char *whole = outcome(body, len, lim, 0, 0);
    static const size_t chunks[] = {1, 7, 64, 4096};
    for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++) {
        char *c = outcome(body, len, lim, chunks[k], (unsigned)(k + 1));
        if (strcmp(whole, c) != 0)
            fail_msg("chunks of %zu differ:\n%.2000s\n---\n%.2000s", chunks[k], whole, c);
        free(c);
    }
    return whole;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void test_examples_decode_the_same_in_chunks(void **state)
{
    (void)state;
    static const char *const examples[] = {"resnet50", "resnet50-size_based", "gpt2-small",
                                           "gpt2-sac", "gpt2-training", "vit_b_16"};
    for (size_t k = 0; k < sizeof examples / sizeof *examples; k++) {
        char path[256];
        snprintf(path, sizeof path, "examples/%s/request.json", examples[k]);
        size_t len;
        char *body = read_all(path, &len);
        char *o = same_in_chunks(body, len, NULL);
        assert_int_equal(strncmp(o, "rc 0\n", 5), 0);
        free(o);
        free(body);
    }
}

static void test_invalid_bodies_decode_the_same_in_chunks(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "", "  \n ", "{", "{\"graph\":", "[1,2]", "42", "{} x", "{}{}",
        "{\"graph\":{},\"graph\":{}}",
        "{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udc00\"}",
        "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\xc0\x80\"}", "{\"a\":\"\xed\xa0\x80\"}",
        "{\"a\":\"\xf4\x90\x80\x80\"}", "{\"a\":\"\xe2\x82\"}", "{\"a\":\v1}",
        "{\"a\":\"\\ud83d\\ude00\xe2\x82\xac\\\\u0000\\\"\"}", "{\"a\":\"\\ud83d\\\"\"}",
        "{\"a\":9223372036854775808}", "{\"a\":-9223372036854775809}", "{\"a\":1e400}",
        "{\n\"graph\":\n{\"nodes\":[" OPNODE ",]}}",
        "{\"graph\":{\"nodes\":[" OPNODE "]},\"devices\":[],\"zz\":1}",
        "{\"graph\":{\"nodes\":[{\"name\":\"\",\"op\":\"x\",\"inputs\":[1,{},\"\"],"
        "\"params\":[{\"name\":\"p\",\"bytes\":1.5,\"q\":1},{\"name\":\"p\",\"bytes\":2},3],"
        "\"meta\":[],\"latency_ms\":-1,\"zz\":0}]}," DEV ",\"options\":{\"mode\":\"y\"}}",
        "{\"options\":{\"pipeline\":{\"stages\":9}}," DEV ",\"graph\":{\"nodes\":["
        "{\"name\":\"a\",\"op\":\"call_function\",\"inputs\":[\"b\"]},"
        "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"]}]}}",
    };
    for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++)
        free(same_in_chunks(bodies[k], strlen(bodies[k]), NULL));
    partd_decode_limits lim = {.max_nodes = 1, .max_model_bytes = 100};
    const char *two = "{\"graph\":{\"nodes\":[" OPNODE "," OPNODE "]}," DEV "}";
    char *o = same_in_chunks(two, strlen(two), &lim);
    assert_non_null(strstr(o, "model-too-large"));
    free(o);
    lim.max_model_bytes = 0;
    o = same_in_chunks(two, strlen(two), &lim);
    assert_non_null(strstr(o, "has 2 nodes; this server takes at most 1"));
    free(o);
}

/* Errors in graph, devices, options and the root: the same document
 * whichever member comes first. */
static void test_member_order_does_not_change_the_errors(void **state)
{
    (void)state;
    const char *graph = "\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"q\"}],\"zz\":1}";
    const char *devices = "\"devices\":[{\"name\":\"g\",\"memory_bytes\":-1}]";
    const char *options = "\"options\":{\"mode\":\"nope\"}";
    const char *root = "\"yy\":1";
    char a[1024], b[1024];
    snprintf(a, sizeof a, "{%s,%s,%s,%s}", graph, devices, options, root);
    snprintf(b, sizeof b, "{%s,%s,%s,%s}", options, root, devices, graph);
    char *x = outcome(a, strlen(a), NULL, 0, 0), *y = outcome(b, strlen(b), NULL, 0, 0);
    assert_string_equal(x, y);
    /* root, graph (unknown member, then the node), devices, options */
    const char *order[] = {"/yy", "/graph/zz", "/graph/nodes/0/op", "/devices/0/memory_bytes",
                           "/options/mode"};
    const char *at = x;
    for (size_t k = 0; k < 5; k++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\"pointer\":\"%s\"", order[k]);
        const char *p = strstr(at, needle);
        assert_non_null(p);
        at = p;
    }
    free(x);
    free(y);
}

/* 150 node errors, then root and options errors at the end of the body:
 * the first 100 listed are root, graph, nodes..., the rest counted. */
static void test_more_than_100_errors_merge_in_order(void **state)
{
    (void)state;
    size_t cap = 64 * 1024, used = 0;
    char *body = malloc(cap);
    assert_non_null(body);
    used += (size_t)snprintf(body + used, cap - used, "{\"options\":{\"mode\":1},\"graph\":{\"nodes\":[");
    for (int i = 0; i < 150; i++)
        used += (size_t)snprintf(body + used, cap - used, "%s{\"name\":\"n%d\",\"op\":\"x\"}",
                                 i ? "," : "", i);
    used += (size_t)snprintf(body + used, cap - used, "]},\"zz\":1}");
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decode(body, used, NULL, &req, &pb), PARTD_EINVALID);
    /* /zz, 150 ops, /devices, /options/mode */
    assert_int_equal(pb.n_errors, 100);
    assert_int_equal(pb.dropped, 53);
    assert_string_equal(pb.errors[0].pointer, "/zz");
    assert_string_equal(pb.errors[1].pointer, "/graph/nodes/0/op");
    assert_string_equal(pb.errors[99].pointer, "/graph/nodes/98/op");
    assert_non_null(strstr(pb.detail, "153 errors (the first 100 are listed)"));
    partd_problem_free(&pb);
    free(same_in_chunks(body, used, NULL));
    free(body);
}

static void expect_malformed(const char *body, size_t len, const char *needle)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    assert_int_equal(partd_request_decode(body, len, NULL, &req, &pb), PARTD_EMALFORMED);
    assert_int_equal(pb.status, 400);
    if (!strstr(pb.detail, needle))
        fail_msg("\"%s\" not in \"%s\"", needle, pb.detail);
    assert_non_null(strstr(pb.detail, "byte "));
    partd_problem_free(&pb);
}

static void expect_not_malformed(const char *body, size_t len)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    int rc = partd_request_decode(body, len, NULL, &req, &pb);
    if (rc == PARTD_EMALFORMED)
        fail_msg("malformed: %s", pb.detail);
    partd_request_free(req);
    partd_problem_free(&pb);
}

static void test_duplicate_keys_inside_meta_are_malformed(void **state)
{
    (void)state;
    const char *b = "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                    "\"meta\":{\"x\":{\"k\":1,\"k\":2}}}]}," DEV "}";
    expect_malformed(b, strlen(b), "duplicate");
    /* a large object: the hash set finds the repeat too */
    char big[40000];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"meta\":{");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "\"k%d\":1,", i);
    snprintf(big + n, sizeof big - n, "\"k1234\":2}}");
    expect_malformed(big, strlen(big), "duplicate");
    big[n - 1] = '}';
    big[n] = '}';
    expect_not_malformed(big, n + 1);
}

/* The problem detail (with its position) of body fed in pieces of
 * `piece` bytes. */
static char *malformed_detail(const char *body, size_t len, size_t piece)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_request_decoder_new(NULL, &pb);
    assert_non_null(dec);
    int rc = PARTD_OK;
    for (size_t at = 0; at < len && rc == PARTD_OK; at += piece)
        rc = partd_request_decoder_feed(dec, body + at, len - at < piece ? len - at : piece);
    partd_request *req = NULL;
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, &req);
    assert_int_equal(rc, PARTD_EMALFORMED);
    char *detail = strdup(pb.detail);
    partd_request_decoder_free(dec);
    partd_problem_free(&pb);
    return detail;
}

/* A token cut by the end of a chunk is held back and parsed whole: an
 * error inside it is still reported where it is in the body. */
static void test_errors_inside_cut_tokens_keep_their_place(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\n\"meta\": {\"a\": \"0123456789\001abc\"}}",
        "{\n\"meta\": {\"a\": \"0123456789\\qabc\"}}",
        "{\n\"meta\": {\"a\": \"01234\\\"56789\\u12x4\"}}",
        "{\n \"meta\":\n [1, -x123456789, 2]}",
        "{\n \"meta\":\n [1, 12345.e4, 2]}",
        "{\n \"meta\":\n [1, truth, 2]}",
        "{\n \"meta\":\n [1, \"abc\" \"def\"]}",
        "{\n \"meta\":\n [1, \"abc\"\n",
        "{\n \"meta\":\n {\"abcdefgh\": 1, \"abcdefgh\": 2}}",
    };
    for (size_t k = 0; k < sizeof bodies / sizeof *bodies; k++) {
        size_t len = strlen(bodies[k]);
        char *whole = malformed_detail(bodies[k], len, len);
        for (size_t piece = 1; piece < 12; piece++) {
            char *cut = malformed_detail(bodies[k], len, piece);
            if (strcmp(whole, cut) != 0)
                fail_msg("body %zu in pieces of %zu: \"%s\", whole: \"%s\"", k, piece, cut,
                         whole);
            free(cut);
        }
        free(whole);
    }
}

/* jansson: no value may start inside 2048 open containers. */
static void test_nesting_limit_is_janssons(void **state)
{
    (void)state;
    char *b = malloc(8192);
    assert_non_null(b);
    for (int depth = 2047; depth <= 2048; depth++) {
        size_t n = (size_t)sprintf(b, "{\"meta\":{\"a\":");
        for (int i = 0; i < depth - 2; i++)
            b[n++] = '[';
        for (int i = 0; i < depth - 2; i++)
            b[n++] = ']';
        n += (size_t)sprintf(b + n, "}}");
        /* depth containers in all, the innermost an array */
        expect_not_malformed(b, n);
    }
    size_t n = (size_t)sprintf(b, "{\"meta\":{\"a\":");
    for (int i = 0; i < 2046; i++)
        b[n++] = '[';
    b[n++] = '1'; /* a scalar at depth 2049 */
    for (int i = 0; i < 2046; i++)
        b[n++] = ']';
    n += (size_t)sprintf(b + n, "}}");
    expect_malformed(b, n, "depth");
    free(b);
}

static void test_numbers_follow_janssons_rules(void **state)
{
    (void)state;
    const char *ok = "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                     "\"output_bytes\":9223372036854775807,\"latency_ms\":1e-400}]}," DEV "}";
    partd_problem pb;
    tu_decode_fail(ok, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/graph/nodes/0/output_bytes", "between 0 and 2^53");
    partd_problem_free(&pb);
    /* an integer too big for any integer type is the number it is, named
     * by its pointer like 1e20 (jansson refuses it without one) */
    const char *big = "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
                      "\"output_bytes\":9223372036854775808}]}," DEV
                      ",\"options\":{\"pipeline\":{\"microbatches\":-99999999999999999999}}}";
    tu_decode_fail(big, PARTD_EINVALID, &pb);
    tu_assert_error(&pb, "/graph/nodes/0/output_bytes", "between 0 and 2^53, not 9.2233720368547758e+18");
    tu_assert_error(&pb, "/options/pipeline/microbatches", "between 1 and 1024, not -1e+20");
    partd_problem_free(&pb);
    /* only past the doubles too is it a syntax error */
    char huge[420] = "{\"a\":";
    memset(huge + 5, '9', 400);
    strcpy(huge + 405, "}");
    expect_malformed(huge, strlen(huge), "too big integer");
    huge[5] = '-';
    expect_malformed(huge, strlen(huge), "too big negative integer");
    const char *real = "{\"a\":-1e400}";
    expect_malformed(real, strlen(real), "overflow");
    /* 4096.0 is a real without a fraction: an integer where one is needed */
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":"
                                    "\"call_function\",\"output_bytes\":4.096e3}]}," DEV "}");
    assert_int_equal(r->graph.output_bytes[0], 4096);
    partd_request_free(r);
}

static void test_strings_follow_janssons_rules(void **state)
{
    (void)state;
    const char *nul = "{\"graph\":{\"name\":\"a\\u0000b\"}}";
    expect_malformed(nul, strlen(nul), "\\u0000");
    const char *lone = "{\"graph\":{\"name\":\"\\ud800x\"}}";
    expect_malformed(lone, strlen(lone), "invalid Unicode");
    const char *overlong = "{\"graph\":{\"name\":\"\xc0\xaf\"}}";
    expect_malformed(overlong, strlen(overlong), "decode byte");
    const char *vt = "{\"graph\":\v{}}";
    expect_malformed(vt, strlen(vt), "0x0b");
    /* a surrogate pair is one character */
    partd_request *r = tu_decode_ok("{\"graph\":{\"nodes\":[{\"name\":\"\\ud83d\\ude00\",\"op\":"
                                    "\"call_function\"}]}," DEV "}");
    assert_string_equal(partd_node_name(r, 0), "\xf0\x9f\x98\x80");
    partd_request_free(r);
}

/* Reals read as strtod reads them (jansson's rule), whatever path the
 * reading takes: random decimals of up to 22 digits, with and without
 * exponents, and the edges of the fast path. */
typedef struct reals {
    double got[4];
    unsigned n;
} reals;

static partd_js_action take_real(void *ctx, const partd_scalar *v)
{
    reals *r = ctx;
    if (v->type == JSON_REAL && r->n < 4)
        r->got[r->n++] = v->d;
    return v->type == JSON_ARRAY ? PARTD_JS_DESCEND : PARTD_JS_SKIP;
}

static int take_key(void *ctx, const char *k, size_t len)
{
    (void)ctx, (void)k, (void)len;
    return 0;
}

static int take_end(void *ctx)
{
    (void)ctx;
    return 0;
}

static int take_built(void *ctx, json_t *v)
{
    (void)ctx;
    json_decref(v);
    return 0;
}

static void expect_real(const char *text)
{
    static const partd_js_handler h = {take_real, take_key, take_end, take_built};
    reals r = {.n = 0};
    char body[128];
    int n = snprintf(body, sizeof body, "[%s]", text);
    partd_jstream *s = partd__decode_stream_new(&h, &r);
    assert_non_null(s);
    assert_int_equal(partd__decode_stream_feed(s, body, (size_t)n), PARTD_OK);
    assert_int_equal(partd__decode_stream_finish(s), PARTD_OK);
    partd__decode_stream_free(s);
    assert_int_equal(r.n, 1);
    double want = strtod(text, NULL);
    if (memcmp(&r.got[0], &want, sizeof want) != 0)
        fail_msg("%s read as %.17g, strtod says %.17g", text, r.got[0], want);
}

static void test_reals_are_strtods(void **state)
{
    (void)state;
    static const char *const edges[] = {
        "0.0", "-0.0", "0e5", "-0E-5", "1.5", "0.3762", "123456789012345.0",
        "1234567890123456.0", "0.000000000000000000001", "1e22", "1e23", "9007199254740993.0",
        "1e-22", "1e-23", "4.9e-324", "1.7976931348623157e308", "2.2250738585072014e-308",
        "0.1", "0.30000000000000004", "1e0004", "1e00004", "12.5e-3", "-7.25E+2"};
    for (size_t k = 0; k < sizeof edges / sizeof *edges; k++)
        expect_real(edges[k]);
    srand(24);
    for (int k = 0; k < 20000; k++) {
        char text[64];
        int at = 0, whole = rand() % 11, frac = 1 + rand() % 12;
        if (rand() % 2)
            text[at++] = '-';
        text[at++] = (char)(whole ? '1' + rand() % 9 : '0');
        for (int d = 1; d < whole; d++)
            text[at++] = (char)('0' + rand() % 10);
        text[at++] = '.';
        for (int d = 0; d < frac; d++)
            text[at++] = (char)('0' + rand() % 10);
        if (rand() % 3 == 0)
            at += snprintf(text + at, sizeof text - (size_t)at, "e%d", rand() % 60 - 30);
        text[at] = '\0';
        expect_real(text);
    }
}

/* jansson reads a NUL that ends a number or a literal as a boundary. */
static void test_a_nul_after_a_number_is_janssons(void **state)
{
    (void)state;
    const char after_number[] = "{\"graph\":1\0}";
    expect_not_malformed(after_number, sizeof after_number - 1);
    free(same_in_chunks(after_number, sizeof after_number - 1, NULL));
    const char after_true[] = "{\"graph\":true\0,\"devices\":1}";
    expect_not_malformed(after_true, sizeof after_true - 1);
    const char two[] = "{\"graph\":1\0\0}";
    expect_malformed(two, sizeof two - 1, "column 1");
    const char in_string[] = "{\"graph\":\"a1\0\"}";
    expect_malformed(in_string, sizeof in_string - 1, "byte");
    const char joined[] = "{\"graph\":1\0002}";
    expect_malformed(joined, sizeof joined - 1, "byte");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_decode_the_same_in_chunks),
        cmocka_unit_test(test_invalid_bodies_decode_the_same_in_chunks),
        cmocka_unit_test(test_member_order_does_not_change_the_errors),
        cmocka_unit_test(test_more_than_100_errors_merge_in_order),
        cmocka_unit_test(test_duplicate_keys_inside_meta_are_malformed),
        cmocka_unit_test(test_errors_inside_cut_tokens_keep_their_place),
        cmocka_unit_test(test_nesting_limit_is_janssons),
        cmocka_unit_test(test_numbers_follow_janssons_rules),
        cmocka_unit_test(test_strings_follow_janssons_rules),
        cmocka_unit_test(test_a_nul_after_a_number_is_janssons),
        cmocka_unit_test(test_reals_are_strtods),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
