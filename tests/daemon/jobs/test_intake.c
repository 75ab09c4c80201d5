/* test_intake.c - a request body taken a piece at a time: the decoded
 * request, digest and packed copy equal those of the whole body, whatever
 * the pieces and the coding; every refusal has its problem document. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/encoding.h"
#include "jobs/intake.h"
#include "partd/cancel.h"
#include "partd/decode.h"
#include "partd/hash.h"
#include "partd/partd.h"

#define BIG ((uint64_t)1 << 30)

/* A chain of n operations on one device. */
static char *chain(unsigned n)
{
    size_t cap = (size_t)n * 96 + 256, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "{\"graph\":{\"nodes\":[");
    for (unsigned i = 0; i < n; i++) {
        char input[32] = "";
        if (i)
            snprintf(input, sizeof input, "\"n%u\"", i - 1);
        len += (size_t)snprintf(s + len, cap - len,
                                "%s{\"name\":\"n%u\",\"op\":\"call_function\",\"inputs\":[%s],"
                                "\"output_bytes\":%u,\"latency_ms\":1.5}",
                                i ? "," : "", i, input, 1000 + i);
    }
    snprintf(s + len, cap - len, "]},\"devices\":[{\"name\":\"d\",\"memory_bytes\":%u}]}",
             1u << 30);
    return s;
}

static int take_in_pieces(partd_intake *in, const char *body, size_t len, size_t step)
{
    unsigned seed = 11;
    int rc = PARTD_OK;
    for (size_t at = 0; at < len;) {
        size_t n = step ? step : 1 + (size_t)(rand_r(&seed) % 5000);
        if (n > len - at)
            n = len - at;
        rc = partd_intake_take(in, body + at, n);
        at += n;
    }
    return rc;
}

static partd_intake *intake(partd_coding coding, uint64_t max)
{
    partd_intake_limits lim = {max, NULL, NULL, NULL, 1};
    partd_intake *in = partd_intake_new(coding, &lim);
    assert_non_null(in);
    return in;
}

static void test_pieces_and_codings_give_the_whole_bodys_request(void **state)
{
    (void)state;
    char *body = chain(3000);
    size_t len = strlen(body);
    partd_request *whole = tu_decode_ok(body);
    char whole_digest[72];
    assert_int_equal(partd_hash_bytes(body, len, whole_digest), PARTD_OK);
    partd_coding codings[] = {PARTD_CODING_IDENTITY, PARTD_CODING_GZIP, PARTD_CODING_ZSTD};
    size_t steps[] = {0, 1, 1 << 20};
    for (size_t c = 0; c < 3; c++) {
        partd_blob sent = {body, len};
        if (codings[c] != PARTD_CODING_IDENTITY)
            assert_int_equal(partd_encoding_encode(codings[c], body, len, &sent), PARTD_OK);
        for (size_t s = 0; s < 3; s++) {
            partd_intake *in = intake(codings[c], BIG);
            assert_int_equal(take_in_pieces(in, sent.data, sent.len, steps[s]), PARTD_OK);
            assert_int_equal(partd_intake_bytes(in), sent.len);
            partd_problem pb;
            partd_problem_init(&pb);
            char digest[72];
            assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_OK);
            assert_string_equal(digest, whole_digest);
            partd_request *req;
            partd_blob packed;
            assert_int_equal(partd_intake_finish(in, &req, &packed, &pb), PARTD_OK);
            assert_string_equal(req->cache_key, whole->cache_key);
            assert_true(packed.len < len);
            /* What the store keeps decodes to the same request. */
            partd_request *again;
            assert_int_equal(partd_intake_decode_stored(packed.data, packed.len, NULL, &again, &pb),
                             PARTD_OK);
            assert_string_equal(again->cache_key, whole->cache_key);
            partd_request_free(again);
            partd_request_free(req);
            free(packed.data);
            partd_problem_free(&pb);
            partd_intake_free(in);
        }
        if (sent.data != body)
            free(sent.data);
    }
    partd_request_free(whole);
    free(body);
}

static void test_without_a_digest_asked_the_request_is_the_same(void **state)
{
    (void)state;
    char *body = chain(200);
    size_t len = strlen(body);
    partd_request *whole = tu_decode_ok(body);
    partd_intake_limits lim = {BIG, NULL, NULL, NULL, 0};
    partd_intake *in = partd_intake_new(PARTD_CODING_IDENTITY, &lim);
    assert_non_null(in);
    assert_int_equal(take_in_pieces(in, body, len, 0), PARTD_OK);
    partd_problem pb;
    partd_problem_init(&pb);
    char digest[72] = "not cleared";
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_OK);
    assert_string_equal(digest, "");
    partd_request *req;
    partd_blob packed;
    assert_int_equal(partd_intake_finish(in, &req, &packed, &pb), PARTD_OK);
    assert_string_equal(req->cache_key, whole->cache_key);
    partd_request_free(req);
    free(packed.data);
    partd_problem_free(&pb);
    partd_intake_free(in);
    /* Freed before its end: nothing to release for the digest either. */
    in = partd_intake_new(PARTD_CODING_IDENTITY, &lim);
    assert_non_null(in);
    assert_int_equal(take_in_pieces(in, body, len / 2, 0), PARTD_OK);
    partd_intake_free(in);
    partd_request_free(whole);
    free(body);
}

static void test_a_stored_plain_body_still_decodes(void **state)
{
    (void)state;
    char *body = chain(5);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req;
    assert_int_equal(partd_intake_decode_stored(body, strlen(body), NULL, &req, &pb), PARTD_OK);
    assert_int_equal(req->graph.n_nodes, 5);
    partd_request_free(req);
    partd_problem_free(&pb);
    free(body);
}

static void test_a_damaged_stored_frame_is_the_servers_error(void **state)
{
    (void)state;
    char *body = chain(50);
    partd_blob packed;
    assert_int_equal(partd_encoding_encode(PARTD_CODING_ZSTD, body, strlen(body), &packed), PARTD_OK);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req;
    assert_int_equal(partd_intake_decode_stored(packed.data, packed.len / 2, NULL, &req, &pb),
                     PARTD_EMALFORMED);
    assert_null(req);
    assert_int_equal(pb.status, 500);
    partd_problem_free(&pb);
    free(packed.data);
    free(body);
}

static void test_too_large_bodies_name_the_limit(void **state)
{
    (void)state;
    char *body = chain(200);
    size_t len = strlen(body);
    partd_problem pb;
    char digest[72];

    partd_intake *in = intake(PARTD_CODING_IDENTITY, len - 1);
    assert_int_equal(take_in_pieces(in, body, len, 100), PARTD_ETOOBIG);
    partd_problem_init(&pb);
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_ETOOBIG);
    assert_int_equal(pb.status, 413);
    assert_non_null(strstr(pb.detail, "larger than"));
    assert_null(strstr(pb.detail, "decoded from"));
    partd_problem_free(&pb);
    partd_intake_free(in);

    /* Small when coded, too large once decoded: a bomb stops at the limit. */
    partd_blob coded;
    assert_int_equal(partd_encoding_encode(PARTD_CODING_GZIP, body, len, &coded), PARTD_OK);
    in = intake(PARTD_CODING_GZIP, len - 1);
    assert_int_equal(take_in_pieces(in, coded.data, coded.len, 0), PARTD_ETOOBIG);
    partd_problem_init(&pb);
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_ETOOBIG);
    assert_int_equal(pb.status, 413);
    assert_non_null(strstr(pb.detail, "decoded from gzip"));
    partd_problem_free(&pb);
    partd_intake_free(in);
    free(coded.data);
    free(body);
}

static void test_an_undecodable_coding_is_400(void **state)
{
    (void)state;
    partd_intake *in = intake(PARTD_CODING_ZSTD, BIG);
    assert_int_equal(partd_intake_take(in, "{\"graph\":{}}", 12), PARTD_EMALFORMED);
    partd_problem pb;
    partd_problem_init(&pb);
    char digest[72];
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_EMALFORMED);
    assert_int_equal(pb.status, 400);
    assert_string_equal(pb.type, "urn:partd:problem:undecodable-body");
    partd_problem_free(&pb);
    partd_intake_free(in);
}

/* Malformed JSON is answered at the end with the decoder's problem, and the
 * digest still covers the whole body (an Idempotency-Key is checked first). */
static void test_malformed_json_keeps_the_digest_whole(void **state)
{
    (void)state;
    const char *body = "{\"graph\": [}     and more text after the error";
    size_t len = strlen(body);
    partd_intake *in = intake(PARTD_CODING_IDENTITY, BIG);
    assert_int_equal(take_in_pieces(in, body, len, 3), PARTD_OK);
    partd_problem pb;
    partd_problem_init(&pb);
    char digest[72], expect[72];
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_OK);
    assert_int_equal(partd_hash_bytes(body, len, expect), PARTD_OK);
    assert_string_equal(digest, expect);
    partd_request *req;
    partd_blob packed;
    assert_int_equal(partd_intake_finish(in, &req, &packed, &pb), PARTD_EMALFORMED);
    assert_null(req);
    assert_null(packed.data);
    assert_int_equal(pb.status, 400);
    partd_problem_free(&pb);
    partd_intake_free(in);
}

static void test_invalid_requests_are_422_with_pointers(void **state)
{
    (void)state;
    const char *body = "{\"graph\":{\"nodes\":[]},\"devices\":[]}";
    partd_intake *in = intake(PARTD_CODING_IDENTITY, BIG);
    assert_int_equal(partd_intake_take(in, body, strlen(body)), PARTD_OK);
    partd_problem pb;
    partd_problem_init(&pb);
    char digest[72];
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_OK);
    partd_request *req;
    partd_blob packed;
    assert_int_equal(partd_intake_finish(in, &req, &packed, &pb), PARTD_EINVALID);
    assert_int_equal(pb.status, 422);
    tu_assert_error(&pb, "/graph/nodes", "at least one");
    partd_problem_free(&pb);
    partd_intake_free(in);
}

static int approve_up_to(void *ctx, size_t new_cap)
{
    size_t *limit = ctx;
    return new_cap <= *limit;
}

/* The caller's budget is asked as the body grows; a refusal stops it. */
static void test_the_budget_is_asked_as_the_body_grows(void **state)
{
    (void)state;
    char *body = chain(4000);
    size_t len = strlen(body), limit = 100000;
    assert_true(len > 2 * limit);
    partd_intake_limits lim = {BIG, NULL, approve_up_to, &limit, 1};
    partd_intake *in = partd_intake_new(PARTD_CODING_IDENTITY, &lim);
    assert_int_equal(take_in_pieces(in, body, len, 4096), PARTD_ENOMEM);
    partd_problem pb;
    partd_problem_init(&pb);
    char digest[72];
    assert_int_equal(partd_intake_end(in, digest, &pb), PARTD_ENOMEM);
    assert_int_equal(pb.status, 503);
    partd_problem_free(&pb);
    partd_intake_free(in);
    free(body);
}

/* A raised cancel (a cut connection, SIGTERM) or a passed deadline stops
 * the whole intake at once: the take says so, nothing more is decoded or
 * digested, and the end answers 503 request-cancelled or 408
 * request-timeout. */
static void test_a_cancel_stops_the_intake(void **state)
{
    (void)state;
    char *body = chain(50);
    size_t len = strlen(body);
    for (int timeout = 0; timeout < 2; timeout++) {
        partd_cancel cancel;
        partd_cancel_init(&cancel, 0);
        if (timeout)
            cancel.deadline_ns = 1; /* long past */
        else
            atomic_store(&cancel.cancelled, 1);
        partd_decode_limits dl = {0};
        dl.cancel = &cancel;
        partd_intake_limits lim = {BIG, &dl, NULL, NULL, 1};
        partd_intake *in = partd_intake_new(PARTD_CODING_IDENTITY, &lim);
        assert_non_null(in);
        int want = timeout ? PARTD_ETIMEOUT : PARTD_ECANCELLED;
        assert_int_equal(partd_intake_take(in, body, len), want);
        assert_int_equal(partd_intake_take(in, body, len), want); /* stays stopped */
        partd_problem pb;
        partd_problem_init(&pb);
        char digest[72];
        assert_int_equal(partd_intake_end(in, digest, &pb), want);
        assert_int_equal(pb.status, timeout ? 408 : 503);
        assert_string_equal(pb.type, timeout ? "urn:partd:problem:request-timeout"
                                             : "urn:partd:problem:request-cancelled");
        partd_problem_free(&pb);
        partd_intake_free(in);
    }
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_and_codings_give_the_whole_bodys_request),
        cmocka_unit_test(test_without_a_digest_asked_the_request_is_the_same),
        cmocka_unit_test(test_a_stored_plain_body_still_decodes),
        cmocka_unit_test(test_a_damaged_stored_frame_is_the_servers_error),
        cmocka_unit_test(test_too_large_bodies_name_the_limit),
        cmocka_unit_test(test_an_undecodable_coding_is_400),
        cmocka_unit_test(test_malformed_json_keeps_the_digest_whole),
        cmocka_unit_test(test_invalid_requests_are_422_with_pointers),
        cmocka_unit_test(test_the_budget_is_asked_as_the_body_grows),
        cmocka_unit_test(test_a_cancel_stops_the_intake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
