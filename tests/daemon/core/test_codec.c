/* test_codec.c - streaming gzip/zstd decompression and zstd packing,
 * fed in pieces of every size. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/codec.h"
#include "core/encoding.h"
#include "partd/partd.h"

/* JSON-like text of about n bytes. */
static partd_blob sample(size_t nodes)
{
    size_t cap = nodes * 48 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"nodes\":[");
    for (size_t i = 0; i < nodes; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s{\"name\":\"n%zu\",\"latency_ms\":%zu}",
                                i ? "," : "", i, i * 7919 % 1000);
    len += (size_t)snprintf(s + len, cap - len, "]}");
    return (partd_blob){s, len};
}

typedef struct collected {
    char *data;
    size_t len, cap;
    size_t calls;
    int fail_at_call; /* 0: never */
} collected;

static int collect(void *ctx, const char *data, size_t n)
{
    collected *c = ctx;
    if (++c->calls == (size_t)c->fail_at_call)
        return PARTD_EINVALID;
    if (c->len + n > c->cap) {
        c->cap = (c->len + n) * 2;
        c->data = realloc(c->data, c->cap);
        assert_non_null(c->data);
    }
    memcpy(c->data + c->len, data, n);
    c->len += n;
    return PARTD_OK;
}

/* Unpacks `in` fed in pieces of `step` bytes (0: random sizes). */
static int unpack_in_pieces(partd_coding coding, const partd_blob *in, size_t step,
                            collected *out)
{
    partd_unpacker *u = partd_codec_unpacker_new(coding);
    assert_non_null(u);
    unsigned seed = 7;
    int rc = PARTD_OK;
    for (size_t at = 0; rc == PARTD_OK && at < in->len;) {
        size_t n = step ? step : 1 + (size_t)(rand_r(&seed) % 9000);
        if (n > in->len - at)
            n = in->len - at;
        rc = partd_codec_unpacker_take(u, in->data + at, n, collect, out);
        at += n;
    }
    if (rc == PARTD_OK)
        rc = partd_codec_unpacker_finish(u);
    partd_codec_unpacker_free(u);
    return rc;
}

static partd_blob pack_in_pieces(const partd_blob *in, size_t step)
{
    partd_packer *p = partd_codec_packer_new(NULL, NULL);
    assert_non_null(p);
    for (size_t at = 0; at < in->len; at += step)
        assert_int_equal(partd_codec_packer_take(p, in->data + at,
                                           step < in->len - at ? step : in->len - at),
                         PARTD_OK);
    partd_blob out;
    assert_int_equal(partd_codec_packer_finish(p, &out), PARTD_OK);
    partd_codec_packer_free(p);
    return out;
}

static void test_pack_then_unpack_gives_the_text_back(void **state)
{
    (void)state;
    partd_blob text = sample(20000);
    size_t steps[] = {1 << 20, 4096, 7};
    for (size_t i = 0; i < 3; i++) {
        partd_blob packed = pack_in_pieces(&text, steps[i]);
        assert_true(partd_codec_is_zstd_frame(packed.data, packed.len));
        assert_true(packed.len < text.len / 3);
        size_t usteps[] = {0, 1, 65536};
        for (size_t k = 0; k < 3; k++) {
            collected out = {0};
            assert_int_equal(unpack_in_pieces(PARTD_CODING_ZSTD, &packed, usteps[k], &out),
                             PARTD_OK);
            assert_int_equal(out.len, text.len);
            assert_memory_equal(out.data, text.data, text.len);
            free(out.data);
        }
        free(packed.data);
    }
    free(text.data);
}

/* Two gzip members (or zstd frames) one after the other are one body. */
static void test_several_members_and_frames_concatenate(void **state)
{
    (void)state;
    partd_blob a = sample(3000), b = sample(10);
    partd_coding codings[] = {PARTD_CODING_GZIP, PARTD_CODING_ZSTD};
    for (size_t i = 0; i < 2; i++) {
        partd_blob ca, cb;
        assert_int_equal(partd_encoding_encode(codings[i], a.data, a.len, &ca), PARTD_OK);
        assert_int_equal(partd_encoding_encode(codings[i], b.data, b.len, &cb), PARTD_OK);
        partd_blob both = {malloc(ca.len + cb.len), ca.len + cb.len};
        memcpy(both.data, ca.data, ca.len);
        memcpy(both.data + ca.len, cb.data, cb.len);
        collected out = {0};
        assert_int_equal(unpack_in_pieces(codings[i], &both, 0, &out), PARTD_OK);
        assert_int_equal(out.len, a.len + b.len);
        assert_memory_equal(out.data, a.data, a.len);
        assert_memory_equal(out.data + a.len, b.data, b.len);
        free(out.data);
        free(both.data);
        free(ca.data);
        free(cb.data);
    }
    free(a.data);
    free(b.data);
}

static void test_truncated_empty_and_garbage_streams_are_malformed(void **state)
{
    (void)state;
    partd_blob text = sample(2000);
    partd_coding codings[] = {PARTD_CODING_GZIP, PARTD_CODING_ZSTD};
    for (size_t i = 0; i < 2; i++) {
        partd_blob coded;
        assert_int_equal(partd_encoding_encode(codings[i], text.data, text.len, &coded), PARTD_OK);
        partd_blob cut = {coded.data, coded.len - 5};
        collected out = {0};
        assert_int_equal(unpack_in_pieces(codings[i], &cut, 0, &out), PARTD_EMALFORMED);
        free(out.data);

        partd_blob empty = {coded.data, 0};
        assert_int_equal(unpack_in_pieces(codings[i], &empty, 0, &out), PARTD_EMALFORMED);

        /* A whole stream followed by bytes that are not another one. */
        partd_blob tail = {malloc(coded.len + 4), coded.len + 4};
        memcpy(tail.data, coded.data, coded.len);
        memcpy(tail.data + coded.len, "junk", 4);
        collected out2 = {0};
        assert_int_equal(unpack_in_pieces(codings[i], &tail, 0, &out2), PARTD_EMALFORMED);
        free(out2.data);
        free(tail.data);
        free(coded.data);
    }
    assert_null(partd_codec_unpacker_new(PARTD_CODING_IDENTITY));
    free(text.data);
}

/* The consumer's error stops the unpacker, and it stays stopped. */
static void test_the_consumers_error_stops_unpacking(void **state)
{
    (void)state;
    partd_blob text = sample(20000);
    partd_blob coded;
    assert_int_equal(partd_encoding_encode(PARTD_CODING_GZIP, text.data, text.len, &coded), PARTD_OK);
    partd_unpacker *u = partd_codec_unpacker_new(PARTD_CODING_GZIP);
    collected out = {.fail_at_call = 2};
    assert_int_equal(partd_codec_unpacker_take(u, coded.data, coded.len, collect, &out),
                     PARTD_EINVALID);
    assert_int_equal(out.calls, 2);
    assert_int_equal(partd_codec_unpacker_take(u, coded.data, 1, collect, &out), PARTD_EINVALID);
    assert_int_equal(partd_codec_unpacker_finish(u), PARTD_EINVALID);
    assert_int_equal(out.calls, 2);
    partd_codec_unpacker_free(u);
    free(out.data);
    free(coded.data);
    free(text.data);
}

static int refuse_past(void *ctx, size_t new_cap)
{
    return new_cap <= *(size_t *)ctx;
}

static void test_a_refused_growth_fails_the_packer(void **state)
{
    (void)state;
    partd_blob text = sample(50000);
    size_t limit = 20000;
    partd_packer *p = partd_codec_packer_new(refuse_past, &limit);
    int rc = PARTD_OK;
    for (size_t at = 0; rc == PARTD_OK && at < text.len; at += 65536)
        rc = partd_codec_packer_take(p, text.data + at, text.len - at < 65536 ? text.len - at : 65536);
    partd_blob out = {0};
    if (rc == PARTD_OK)
        rc = partd_codec_packer_finish(p, &out);
    assert_int_equal(rc, PARTD_ENOMEM);
    assert_null(out.data);
    partd_codec_packer_free(p);
    free(text.data);
}

/* Output far larger than its input: each piece of input gives many pieces
 * of output, and the last of them ends the stream. */
static void test_highly_compressed_input_unpacks_whole(void **state)
{
    (void)state;
    size_t n = (size_t)8 << 20;
    partd_blob zeros = {calloc(n, 1), n};
    partd_coding codings[] = {PARTD_CODING_GZIP, PARTD_CODING_ZSTD};
    for (size_t i = 0; i < 2; i++) {
        partd_blob coded;
        assert_int_equal(partd_encoding_encode(codings[i], zeros.data, n, &coded), PARTD_OK);
        assert_true(coded.len < n / 500);
        size_t steps[] = {0, 1, 1 << 20};
        for (size_t k = 0; k < 3; k++) {
            collected out = {0};
            assert_int_equal(unpack_in_pieces(codings[i], &coded, steps[k], &out), PARTD_OK);
            assert_int_equal(out.len, n);
            assert_memory_equal(out.data, zeros.data, n);
            free(out.data);
        }
        free(coded.data);
    }
    free(zeros.data);
}

static void test_zstd_magic_is_recognised(void **state)
{
    (void)state;
    assert_true(partd_codec_is_zstd_frame("\x28\xb5\x2f\xfd\x00", 5));
    assert_false(partd_codec_is_zstd_frame("\x28\xb5\x2f", 3));
    assert_false(partd_codec_is_zstd_frame("{\"graph\":1}", 11));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_then_unpack_gives_the_text_back),
        cmocka_unit_test(test_several_members_and_frames_concatenate),
        cmocka_unit_test(test_truncated_empty_and_garbage_streams_are_malformed),
        cmocka_unit_test(test_the_consumers_error_stops_unpacking),
        cmocka_unit_test(test_a_refused_growth_fails_the_packer),
        cmocka_unit_test(test_highly_compressed_input_unpacks_whole),
        cmocka_unit_test(test_zstd_magic_is_recognised),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
