/* test_hash.c - graph_hash and cache_key. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "partd/hash.h"
#include "partd/partd.h"
#include "partd/sha256.h"

static void hashes_of(const char *json, char graph[72], char key[72])
{
    partd_request *r = tu_decode_ok(json);
    memcpy(graph, r->graph_hash, 72);
    memcpy(key, r->cache_key, 72);
    partd_request_free(r);
}

static void test_sha256_known_vector(void **state)
{
    (void)state;
    char out[72];
    assert_int_equal(partd_hash_bytes("abc", 3, out), PARTD_OK);
    assert_string_equal(out, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* FIPS 180-4 vectors: empty, two blocks of padding, and a long message fed
 * in pieces that straddle block boundaries. */
static void test_sha256_vectors_and_pieces(void **state)
{
    (void)state;
    char out[72];
    partd_hash_bytes("", 0, out);
    assert_string_equal(out, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    partd_hash_bytes(m, strlen(m), out);
    assert_string_equal(out, "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    partd_sha256 c;
    partd_sha256_init(&c);
    char chunk[1000];
    memset(chunk, 'a', sizeof chunk);
    for (size_t done = 0, k = 1; done < 1000000; k = k % 997 + 1) {
        size_t n = 1000000 - done < k ? 1000000 - done : k;
        partd_sha256_update(&c, chunk, n);
        done += n;
    }
    unsigned char md[PARTD_SHA256_BYTES];
    partd_sha256_final(&c, md);
    static const unsigned char want[] = {
        0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
        0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
    assert_memory_equal(md, want, sizeof want);
}

static const char *const base =
    "{\"graph\":{\"name\":\"m\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":8},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":4,\"param_bytes\":16,"
    "\"latency_ms\":0.25}]},"
    "\"devices\":[{\"name\":\"g0\",\"memory_bytes\":100}]}";

/* Same meaning: members shuffled, whitespace, another graph name, meta
 * added, and every default spelled out. */
static const char *const same =
    "{ \"options\" : {\"mode\":\"pipeline\",\"transfer_bytes_per_sec\":1e10,"
    "   \"pipeline\":{\"stages\":1,\"balance_by\":\"time\",\"cut_after\":[],"
    "   \"schedule\":\"inference\",\"microbatches\":1,\"param_factor\":1.0}},\n"
    "  \"devices\":[{\"speed\":1,\"memory_bytes\":100,\"name\":\"g0\",\"logical_id\":0,"
    "   \"meta\":{\"rack\":7}}],\n"
    "  \"graph\":{\"meta\":{\"owner\":\"me\"},\"name\":\"other\",\"nodes\":["
    "   {\"op\":\"placeholder\",\"name\":\"x\",\"output_bytes\":8,\"inputs\":[],\"param_bytes\":0,"
    "    \"latency_ms\":0,\"mem_latency_ms\":0.0},"
    "   {\"latency_ms\":0.25,\"param_bytes\":16,\"output_bytes\":4,\"inputs\":[\"x\"],"
    "    \"op\":\"call_module\",\"name\":\"a\",\"meta\":{\"note\":1}}]}}";

static void test_equivalent_requests_hash_the_same(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72];
    hashes_of(base, g1, k1);
    hashes_of(same, g2, k2);
    assert_string_equal(g1, g2);
    assert_string_equal(k1, k2);
}

static void test_graph_change_changes_both(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72];
    hashes_of(base, g1, k1);
    char other[1024];
    strcpy(other, base);
    char *p = strstr(other, "\"output_bytes\":4");
    p[15] = '5';
    hashes_of(other, g2, k2);
    assert_string_not_equal(g1, g2);
    assert_string_not_equal(k1, k2);
}

static void test_device_change_changes_only_cache_key(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72];
    hashes_of(base, g1, k1);
    char other[1024];
    strcpy(other, base);
    char *p = strstr(other, "\"memory_bytes\":100");
    p[15] = '2';
    hashes_of(other, g2, k2);
    assert_string_equal(g1, g2);
    assert_string_not_equal(k1, k2);
}

static void test_options_change_changes_only_cache_key(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72];
    hashes_of(base, g1, k1);
    char other[1024];
    strcpy(other, base);
    strcpy(other + strlen(other) - 1, ",\"options\":{\"mode\":\"size_based\"}}");
    hashes_of(other, g2, k2);
    assert_string_equal(g1, g2);
    assert_string_not_equal(k1, k2);
}

/* graph.batch_size is part of the graph (it qualifies its figures and
 * decides a training plan's warnings): given, it changes graph_hash and
 * cache_key; absent, the hash is the one graphs had before it existed. */
static void test_batch_size_is_part_of_the_graph(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72], g3[72], k3[72];
    hashes_of(base, g1, k1);
    char other[1024];
    strcpy(other, base);
    char *p = strstr(other, "\"nodes\"");
    memmove(p + 15, p, strlen(p) + 1);
    memcpy(p, "\"batch_size\":8,", 15);
    hashes_of(other, g2, k2);
    assert_string_not_equal(g1, g2);
    assert_string_not_equal(k1, k2);
    p[13] = '4';
    hashes_of(other, g3, k3);
    assert_string_not_equal(g2, g3);
    /* the canonical text with it is {"batch_size":8,"nodes":[...]} */
    partd_request *r = tu_decode_ok(base);
    r->graph.batch_size = 8;
    assert_int_equal(partd_hash_request(r, NULL, NULL), PARTD_OK);
    assert_string_equal(r->graph_hash, g2);
    partd_request_free(r);
}

/* options.result.detail: "full" (the default) keeps the cache_key requests
 * had before the option existed; "summary" is another result, another key. */
static void test_result_detail_in_cache_key(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72], g3[72], k3[72];
    hashes_of(base, g1, k1);
    char other[1024];
    strcpy(other, base);
    strcpy(other + strlen(other) - 1, ",\"options\":{\"result\":{\"detail\":\"full\"}}}");
    hashes_of(other, g2, k2);
    assert_string_equal(g1, g2);
    assert_string_equal(k1, k2);
    strcpy(other, base);
    strcpy(other + strlen(other) - 1, ",\"options\":{\"result\":{\"detail\":\"summary\"}}}");
    hashes_of(other, g3, k3);
    assert_string_equal(g1, g3);
    assert_string_not_equal(k1, k3);
}

static void test_node_order_is_part_of_the_graph(void **state)
{
    (void)state;
    char g1[72], k1[72], g2[72], k2[72];
    hashes_of("{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"},"
              "{\"name\":\"b\",\"op\":\"call_function\"}]},\"devices\":[{\"name\":\"g\",\"memory_bytes\":1}]}",
              g1, k1);
    hashes_of("{\"graph\":{\"nodes\":[{\"name\":\"b\",\"op\":\"call_function\"},"
              "{\"name\":\"a\",\"op\":\"call_function\"}]},\"devices\":[{\"name\":\"g\",\"memory_bytes\":1}]}",
              g2, k2);
    assert_string_not_equal(g1, g2);
}

static void latency_hashes(const char *latency, char graph[72])
{
    char json[512], key[72];
    snprintf(json, sizeof json,
             "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\","
             "\"latency_ms\":%s}]},\"devices\":[{\"name\":\"g\",\"memory_bytes\":1}]}",
             latency);
    hashes_of(json, graph, key);
}

/* The same double spelled two ways hashes the same; neighbouring doubles,
 * and values that need all 17 digits, hash apart. */
static void test_numbers_hash_by_value(void **state)
{
    (void)state;
    char a[72], b[72], c[72], d[72], e[72], f[72];
    latency_hashes("0.1", a);
    latency_hashes("0.1000000000000000055511151231257827", b);
    latency_hashes("0.10000000000000002", c);
    latency_hashes("1e-3", d);
    latency_hashes("0.001", e);
    latency_hashes("3.141592653589793", f);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_string_equal(d, e);
    assert_string_not_equal(f, a);
    latency_hashes("3.1415926535897931", b);
    assert_string_equal(f, b);
    latency_hashes("2", a);
    latency_hashes("2.0", b);
    assert_string_equal(a, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_known_vector),
        cmocka_unit_test(test_sha256_vectors_and_pieces),
        cmocka_unit_test(test_equivalent_requests_hash_the_same),
        cmocka_unit_test(test_graph_change_changes_both),
        cmocka_unit_test(test_device_change_changes_only_cache_key),
        cmocka_unit_test(test_options_change_changes_only_cache_key),
        cmocka_unit_test(test_batch_size_is_part_of_the_graph),
        cmocka_unit_test(test_result_detail_in_cache_key),
        cmocka_unit_test(test_node_order_is_part_of_the_graph),
        cmocka_unit_test(test_numbers_hash_by_value),
    };
    return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
