/* test_sha256.c - sha256.c: FIPS 180-4 test vectors through OpenSSL, fed
 * whole and in pieces; final releases the context; hex through hash.h. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#include "partd/hash.h"
#include "partd/partd.h"
#include "partd/sha256.h"

static void hex(const unsigned char *md, char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void test_vectors_whole_and_in_pieces(void **state)
{
    (void)state;
    static const struct {
        const char *text, *digest;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char md[PARTD_SHA256_BYTES];
        char got[65];
        partd_sha256 c;
        assert_int_equal(partd_sha256_init(&c), PARTD_OK);
        size_t n = strlen(v[i].text);
        for (size_t k = 0; k < n; k += 7) /* in pieces of 7 bytes */
            partd_sha256_update(&c, v[i].text + k, n - k < 7 ? n - k : 7);
        assert_int_equal(partd_sha256_final(&c, md), PARTD_OK);
        assert_null(c.ctx); /* released */
        hex(md, got);
        assert_string_equal(got, v[i].digest);
        char tagged[72];
        assert_int_equal(partd_hash_bytes(v[i].text, n, tagged), PARTD_OK);
        assert_memory_equal(tagged, "sha256:", 7);
        assert_string_equal(tagged + 7, v[i].digest);
    }
}

static void test_a_million_a(void **state)
{
    (void)state;
    char block[1000];
    memset(block, 'a', sizeof block);
    partd_sha256 c;
    assert_int_equal(partd_sha256_init(&c), PARTD_OK);
    for (int i = 0; i < 1000; i++)
        partd_sha256_update(&c, block, sizeof block);
    unsigned char md[PARTD_SHA256_BYTES];
    char got[65];
    assert_int_equal(partd_sha256_final(&c, md), PARTD_OK);
    hex(md, got);
    assert_string_equal(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_failed_update_is_reported_by_final(void **state)
{
    (void)state;
    partd_sha256 c;
    assert_int_equal(partd_sha256_init(&c), PARTD_OK);
    c.failed = 1; /* as after a refused update */
    partd_sha256_update(&c, "x", 1);
    unsigned char md[PARTD_SHA256_BYTES];
    assert_int_equal(partd_sha256_final(&c, md), PARTD_ENOMEM);
    assert_null(c.ctx);
    partd_sha256_abort(&c); /* harmless after final */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_whole_and_in_pieces),
        cmocka_unit_test(test_a_million_a),
        cmocka_unit_test(test_failed_update_is_reported_by_final),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
