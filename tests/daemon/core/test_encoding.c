/* test_encoding.c - coded forms of result documents (gzip, zstd) and
 * Accept-Encoding negotiation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "partd/clock.h"
#include "testutil.h"

#include "core/encoding.h"
#include "partd/partd.h"

/* A result-like document: JSON with repetitive node names. */
static partd_blob json_like(size_t nodes)
{
    size_t cap = nodes * 40 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"nodes\":[");
    for (size_t i = 0; i < nodes; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s\"h%zu.attn.q_proj\"", i ? "," : "", i);
    len += (size_t)snprintf(s + len, cap - len, "]}");
    return (partd_blob){s, len};
}

static partd_blob gunzip(const partd_blob *in, size_t expect)
{
    partd_blob out = {malloc(expect + 1), 0};
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
    zs.next_in = (Bytef *)in->data;
    zs.avail_in = (uInt)in->len;
    zs.next_out = (Bytef *)out.data;
    zs.avail_out = (uInt)expect + 1;
    assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
    out.len = zs.total_out;
    inflateEnd(&zs);
    return out;
}

static void test_every_form_decodes_to_the_document(void **state)
{
    (void)state;
    partd_blob forms[PARTD_CODINGS] = {json_like(20000)};
    size_t doc_len = forms[0].len;
    assert_int_equal(partd_encoding_encode_all(forms), PARTD_OK);
    assert_non_null(forms[PARTD_CODING_GZIP].data);
    assert_non_null(forms[PARTD_CODING_ZSTD].data);
    assert_true(forms[PARTD_CODING_GZIP].len * 4 < doc_len);
    assert_true(forms[PARTD_CODING_ZSTD].len * 4 < doc_len);

    partd_blob back = gunzip(&forms[PARTD_CODING_GZIP], doc_len);
    assert_int_equal(back.len, doc_len);
    assert_memory_equal(back.data, forms[0].data, doc_len);
    free(back.data);

    char *z = malloc(doc_len);
    size_t n = ZSTD_decompress(z, doc_len, forms[PARTD_CODING_ZSTD].data,
                               forms[PARTD_CODING_ZSTD].len);
    assert_false(ZSTD_isError(n));
    assert_int_equal(n, doc_len);
    assert_memory_equal(z, forms[0].data, doc_len);
    free(z);
    partd_encoding_forms_free(forms);
    assert_null(forms[0].data);
}

static void test_forms_are_deterministic(void **state)
{
    (void)state;
    partd_blob doc = json_like(5000);
    for (int c = PARTD_CODING_ZSTD; c < PARTD_CODINGS; c++) {
        partd_blob a, b;
        assert_int_equal(partd_encoding_encode((partd_coding)c, doc.data, doc.len, &a), PARTD_OK);
        assert_int_equal(partd_encoding_encode((partd_coding)c, doc.data, doc.len, &b), PARTD_OK);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        if (c == PARTD_CODING_GZIP) {
            /* RFC 1952 header: magic, deflate, no flags (no name), mtime 0. */
            assert_int_equal((unsigned char)a.data[0], 0x1f);
            assert_int_equal((unsigned char)a.data[1], 0x8b);
            assert_int_equal(a.data[3], 0);
            assert_memory_equal(a.data + 4, "\0\0\0\0", 4);
        }
        free(a.data);
        free(b.data);
    }
    free(doc.data);
}

/* The window size a zstd frame asks of its decoder (RFC 8878 section
 * 3.1.1.1.2), from its header. */
static uint64_t zstd_window_size(const unsigned char *frame, size_t len, int *checksum)
{
    assert_true(len > 6);
    assert_memory_equal(frame, "\x28\xb5\x2f\xfd", 4);
    unsigned char descriptor = frame[4];
    *checksum = (descriptor >> 2) & 1;
    assert_false(descriptor & 0x20); /* not single-segment: a window follows */
    unsigned char wd = frame[5];
    uint64_t base = (uint64_t)1 << (10 + (wd >> 3));
    return base + base / 8 * (wd & 7);
}

/* RFC 9659: HTTP clients may refuse zstd windows over 8 MiB. */
static void test_zstd_window_fits_http_clients(void **state)
{
    (void)state;
    partd_blob doc = json_like(600000); /* ~17 MB */
    partd_blob z;
    assert_int_equal(partd_encoding_encode(PARTD_CODING_ZSTD, doc.data, doc.len, &z), PARTD_OK);
    int checksum = 0;
    uint64_t window = zstd_window_size((const unsigned char *)z.data, z.len, &checksum);
    assert_true(window >= 1024 && window <= (uint64_t)8 << 20);
    assert_true(checksum);
    free(z.data);
    free(doc.data);
}

static void test_incompressible_document_has_no_coded_forms(void **state)
{
    (void)state;
    partd_blob forms[PARTD_CODINGS] = {{malloc(4096), 4096}};
    uint32_t x = 12345;
    for (size_t i = 0; i < 4096; i++) {
        x = x * 1103515245u + 12345u;
        forms[0].data[i] = (char)(x >> 24);
    }
    assert_int_equal(partd_encoding_encode_all(forms), PARTD_OK);
    assert_null(forms[PARTD_CODING_GZIP].data);
    assert_null(forms[PARTD_CODING_ZSTD].data);
    partd_encoding_forms_free(forms);

    partd_blob empty[PARTD_CODINGS] = {{strdup(""), 0}};
    assert_int_equal(partd_encoding_encode_all(empty), PARTD_OK);
    assert_null(empty[PARTD_CODING_GZIP].data);
    partd_encoding_forms_free(empty);
}

/* ---- request bodies ---- */

static partd_blob encoded(partd_coding coding, const partd_blob *doc)
{
    partd_blob z;
    assert_int_equal(partd_encoding_encode(coding, doc->data, doc->len, &z), PARTD_OK);
    return z;
}

static partd_blob concat(const partd_blob *a, const partd_blob *b)
{
    partd_blob c = {malloc(a->len + b->len), a->len + b->len};
    memcpy(c.data, a->data, a->len);
    memcpy(c.data + a->len, b->data, b->len);
    return c;
}

static void test_bodies_decode_in_both_codings(void **state)
{
    (void)state;
    partd_blob doc = json_like(30000);
    for (int c = PARTD_CODING_ZSTD; c < PARTD_CODINGS; c++) {
        partd_blob z = encoded((partd_coding)c, &doc), plain;
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, doc.len, NULL, NULL, &plain),
                         PARTD_OK);
        assert_int_equal(plain.len, doc.len);
        assert_memory_equal(plain.data, doc.data, doc.len);
        assert_int_equal(plain.data[plain.len], '\0');
        free(plain.data);
        /* Several gzip members or zstd frames decode to their concatenation. */
        partd_blob twice = concat(&z, &z);
        assert_int_equal(partd_encoding_decode((partd_coding)c, twice.data, twice.len, 2 * doc.len, NULL,
                                      NULL, &plain),
                         PARTD_OK);
        assert_int_equal(plain.len, 2 * doc.len);
        assert_memory_equal(plain.data + doc.len, doc.data, doc.len);
        free(plain.data);
        free(twice.data);
        free(z.data);
    }
    free(doc.data);
}

/* A decompression bomb stops at the limit: one byte over is refused, the
 * exact size is accepted. */
static void test_decoding_stops_at_the_limit(void **state)
{
    (void)state;
    size_t n = 8u << 20;
    partd_blob zeros = {calloc(n, 1), n};
    for (int c = PARTD_CODING_ZSTD; c < PARTD_CODINGS; c++) {
        partd_blob z = encoded((partd_coding)c, &zeros), plain;
        assert_true(z.len < n / 500);
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, n - 1, NULL, NULL, &plain),
                         PARTD_ETOOBIG);
        assert_null(plain.data);
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, 1 << 20, NULL, NULL,
                                      &plain),
                         PARTD_ETOOBIG);
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, n, NULL, NULL, &plain),
                         PARTD_OK);
        assert_int_equal(plain.len, n);
        free(plain.data);
        free(z.data);
    }
    free(zeros.data);
}

static int refuse_after_64k(void *ctx, size_t new_cap)
{
    ++*(int *)ctx;
    return new_cap <= 65536;
}

static void test_broken_bodies_are_malformed(void **state)
{
    (void)state;
    partd_blob doc = json_like(20000);
    for (int c = PARTD_CODING_ZSTD; c < PARTD_CODINGS; c++) {
        partd_blob z = encoded((partd_coding)c, &doc), plain;
        /* truncated */
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len - 9, doc.len, NULL, NULL,
                                      &plain),
                         PARTD_EMALFORMED);
        assert_null(plain.data);
        /* trailing junk */
        char text[] = "{\"not\":\"compressed\"}";
        partd_blob junk = {text, strlen(text)};
        partd_blob tail = concat(&z, &junk);
        assert_int_equal(partd_encoding_decode((partd_coding)c, tail.data, tail.len, 2 * doc.len, NULL,
                                      NULL, &plain),
                         PARTD_EMALFORMED);
        free(tail.data);
        /* plain JSON sent as if compressed, and nothing at all */
        assert_int_equal(partd_encoding_decode((partd_coding)c, doc.data, doc.len, doc.len, NULL, NULL,
                                      &plain),
                         PARTD_EMALFORMED);
        assert_int_equal(partd_encoding_decode((partd_coding)c, "", 0, doc.len, NULL, NULL, &plain),
                         PARTD_EMALFORMED);
        /* a flipped byte inside the data */
        z.data[z.len / 2] ^= 0x55;
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, doc.len, NULL, NULL,
                                      &plain),
                         PARTD_EMALFORMED);
        z.data[z.len / 2] ^= 0x55;
        /* the caller's memory budget refuses to let the buffer grow */
        int asked = 0;
        assert_int_equal(partd_encoding_decode((partd_coding)c, z.data, z.len, doc.len, refuse_after_64k,
                                      &asked, &plain),
                         PARTD_ENOMEM);
        assert_true(asked >= 2);
        assert_null(plain.data);
        free(z.data);
    }
    free(doc.data);
}

/* A job's cancel flag and deadline stop compression between megabytes,
 * leaving no coded form behind. */
static void test_compression_stops_for_cancel_and_deadline(void **state)
{
    (void)state;
    partd_blob forms[PARTD_CODINGS] = {json_like(200000)};
    assert_true(forms[PARTD_CODING_IDENTITY].len > (4u << 20));
    partd_cancel cancel;
    partd_cancel_init(&cancel, 0);
    atomic_store(&cancel.cancelled, 1);
    assert_int_equal(partd_encoding_encode_all_within(forms, &cancel), PARTD_ECANCELLED);
    for (int c = PARTD_CODING_IDENTITY + 1; c < PARTD_CODINGS; c++)
        assert_null(forms[c].data);
    partd_cancel_init(&cancel, 0);
    cancel.deadline_ns = partd_clock_ns() - 1;
    assert_int_equal(partd_encoding_encode_all_within(forms, &cancel), PARTD_ETIMEOUT);
    for (int c = PARTD_CODING_IDENTITY + 1; c < PARTD_CODINGS; c++)
        assert_null(forms[c].data);
    /* Not cancelled: the same forms as without bounds. */
    partd_cancel_init(&cancel, 0);
    assert_int_equal(partd_encoding_encode_all_within(forms, &cancel), PARTD_OK);
    for (int c = PARTD_CODING_IDENTITY + 1; c < PARTD_CODINGS; c++) {
        partd_blob plain;
        assert_non_null(forms[c].data);
        assert_int_equal(partd_encoding_decode((partd_coding)c, forms[c].data, forms[c].len,
                                      forms[0].len, NULL, NULL, &plain),
                         PARTD_OK);
        assert_int_equal(plain.len, forms[0].len);
        assert_memory_equal(plain.data, forms[0].data, plain.len);
        free(plain.data);
    }
    partd_encoding_forms_free(forms);
}

static void test_content_encoding_parse(void **state)
{
    (void)state;
    assert_int_equal(partd_encoding_parse(NULL), PARTD_CODING_IDENTITY);
    assert_int_equal(partd_encoding_parse(""), PARTD_CODING_IDENTITY);
    assert_int_equal(partd_encoding_parse(" Identity "), PARTD_CODING_IDENTITY);
    assert_int_equal(partd_encoding_parse("gzip"), PARTD_CODING_GZIP);
    assert_int_equal(partd_encoding_parse("X-GZIP"), PARTD_CODING_GZIP);
    assert_int_equal(partd_encoding_parse(" zstd\t"), PARTD_CODING_ZSTD);
    assert_int_equal(partd_encoding_parse("br"), PARTD_CODING_NONE);
    assert_int_equal(partd_encoding_parse("deflate"), PARTD_CODING_NONE);
    assert_int_equal(partd_encoding_parse("gzip, zstd"), PARTD_CODING_NONE);
    assert_int_equal(partd_encoding_parse("gzip;q=1"), PARTD_CODING_NONE);
    assert_int_equal(partd_encoding_parse("*"), PARTD_CODING_NONE);
}

#define ALL (1u << PARTD_CODING_IDENTITY | 1u << PARTD_CODING_ZSTD | 1u << PARTD_CODING_GZIP)
#define PLAIN (1u << PARTD_CODING_IDENTITY)

static void test_negotiation(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        unsigned available;
        partd_coding want;
    } cases[] = {
        {NULL, ALL, PARTD_CODING_IDENTITY},
        {"", ALL, PARTD_CODING_IDENTITY},
        {"gzip", ALL, PARTD_CODING_GZIP},
        {"x-gzip", ALL, PARTD_CODING_GZIP},
        {"GZip", ALL, PARTD_CODING_GZIP},
        {"gzip, deflate, br, zstd", ALL, PARTD_CODING_ZSTD},
        {"gzip, deflate, br", ALL, PARTD_CODING_GZIP},
        {"gzip;q=1, zstd;q=0.999", ALL, PARTD_CODING_GZIP},
        {"gzip ; q=0.5 , zstd ; Q=0.4", ALL, PARTD_CODING_GZIP},
        {"zstd;q=0", ALL, PARTD_CODING_IDENTITY},
        {"*", ALL, PARTD_CODING_ZSTD},
        {"*", PLAIN, PARTD_CODING_IDENTITY},
        {"*;q=0", ALL, PARTD_CODING_NONE},
        {"*;q=0, identity", ALL, PARTD_CODING_IDENTITY},
        {"*;q=0, gzip", ALL, PARTD_CODING_GZIP},
        {"identity;q=0", ALL, PARTD_CODING_NONE},
        {"identity;q=0, gzip", ALL, PARTD_CODING_GZIP},
        {"identity;q=0, gzip", PLAIN, PARTD_CODING_NONE},
        {"gzip", PLAIN, PARTD_CODING_IDENTITY}, /* stored before coded forms */
        {"gzip;q=1.0000", ALL, PARTD_CODING_IDENTITY}, /* four decimals: invalid */
        {"gzip;q=1.5", ALL, PARTD_CODING_IDENTITY},
        {"gzip;q=", ALL, PARTD_CODING_IDENTITY},
        {"gzip;q=0.001", ALL, PARTD_CODING_GZIP},
        {"gzip;level=1", ALL, PARTD_CODING_GZIP},
        {",,, ,gzip,,", ALL, PARTD_CODING_GZIP},
        {"gzip;q=0, gzip;q=1", ALL, PARTD_CODING_GZIP},
        {"zstdx, gzipper", ALL, PARTD_CODING_IDENTITY},
        {"identity;q=0.5, gzip;q=0.4", ALL, PARTD_CODING_IDENTITY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        partd_coding got = partd_encoding_negotiate(cases[i].header, cases[i].available);
        if (got != cases[i].want)
            fail_msg("Accept-Encoding \"%s\": got %d, want %d",
                     cases[i].header ? cases[i].header : "(absent)", got, cases[i].want);
    }
    assert_string_equal(partd_encoding_name(PARTD_CODING_GZIP), "gzip");
    assert_string_equal(partd_encoding_name(PARTD_CODING_ZSTD), "zstd");
    assert_string_equal(partd_encoding_name(PARTD_CODING_IDENTITY), "identity");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_form_decodes_to_the_document),
        cmocka_unit_test(test_forms_are_deterministic),
        cmocka_unit_test(test_zstd_window_fits_http_clients),
        cmocka_unit_test(test_incompressible_document_has_no_coded_forms),
        cmocka_unit_test(test_negotiation),
        cmocka_unit_test(test_bodies_decode_in_both_codings),
        cmocka_unit_test(test_decoding_stops_at_the_limit),
        cmocka_unit_test(test_broken_bodies_are_malformed),
        cmocka_unit_test(test_content_encoding_parse),
        cmocka_unit_test(test_compression_stops_for_cancel_and_deadline),
    };
    return cmocka_run_group_tests_name("encoding", tests, NULL, NULL);
}
