/*
 * test_decode_scan.c - lib/decode/decode_scan.c, the pre-scan of the
 * reading layer: what jansson refuses and yajl lets through is found at
 * the same offset however the body is cut into chunks (a UTF-8 character
 * or an escape split anywhere), and the string state carries across chunks.
 */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "decode/decode_scan.h"

/* Scans s in chunks of `step` bytes; the absolute offset of the first bad
 * byte (strlen when none) and its reason in what. */
static size_t scan(const char *s, size_t len, size_t step, char *what, size_t cap)
{
    partd_jscan st;
    memset(&st, 0, sizeof st);
    what[0] = '\0';
    for (size_t at = 0; at < len;) {
        size_t n = len - at < step ? len - at : step;
        size_t bad = partd__decode_scan_chunk(&st, s + at, n, what, cap);
        if (bad < n)
            return at + bad;
        partd__decode_scan_done(&st, s + at, n);
        at += n;
    }
    return len;
}

/* The same offset and reason in every chunking; returns the offset. */
static size_t scan_all_ways(const char *s, size_t len, char *what, size_t cap)
{
    size_t whole = scan(s, len, len ? len : 1, what, cap);
    char first[256];
    snprintf(first, sizeof first, "%s", what);
    for (size_t step = 1; step <= 9; step++) {
        char w[256];
        assert_int_equal(scan(s, len, step, w, sizeof w), whole);
        assert_string_equal(w, first);
    }
    return whole;
}

static void test_good_text_passes_whole_and_in_pieces(void **state)
{
    (void)state;
    char what[256];
    const char *ok[] = {
        "{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
        "[\"\\u00e9\\ud83d\\ude00\\\"\\\\\\n\"]",
        "{\"long\":\"0123456789abcdef0123456789abcdef0123456789abcdef\"}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        assert_int_equal(scan_all_ways(ok[i], strlen(ok[i]), what, sizeof what), strlen(ok[i]));
}

static void test_bad_utf8_is_found_where_it_is(void **state)
{
    (void)state;
    char what[256];
    /* overlong, a lone continuation byte, a surrogate, above U+10FFFF */
    struct { const char *s; size_t at; } bad[] = {
        {"[\"ab\xc0\xaf\"]", 4},
        {"[\"ab\x80\"]", 4},
        {"[\"\xed\xa0\x80\"]", 3},
        {"[\"\xf4\x90\x80\x80\"]", 3},
        {"[\"0123456789\xff\"]", 12},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(scan_all_ways(bad[i].s, strlen(bad[i].s), what, sizeof what),
                         bad[i].at);
        assert_non_null(strstr(what, "unable to decode byte"));
    }
}

static void test_escapes_jansson_refuses(void **state)
{
    (void)state;
    char what[256];
    const char *s = "[\"x\\u00zz\"]";
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 7);
    assert_string_equal(what, "invalid \\u escape");
    s = "[\"\\u0000\"]";
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 7);
    assert_non_null(strstr(what, "\\u0000"));
    s = "[\"\\udc00\"]"; /* a low surrogate alone */
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 7);
    assert_non_null(strstr(what, "invalid Unicode"));
    s = "[\"\\ud800x\"]"; /* a high surrogate not followed by \u */
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 8);
    assert_non_null(strstr(what, "invalid Unicode '\\uD800'"));
    s = "[\"\\ud800\\u0041\"]"; /* ... nor by a low one */
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 13);
}

static void test_vertical_tab_and_form_feed_are_not_white_space(void **state)
{
    (void)state;
    char what[256];
    const char *s = "[1,\v2]";
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 3);
    assert_string_equal(what, "invalid token (control character 0x0b)");
    s = "[1,\f2]";
    assert_int_equal(scan_all_ways(s, strlen(s), what, sizeof what), 3);
}

/* The string state follows quotes across chunks, escaped quotes included:
 * a NUL right after a number outside a string is a token boundary, one
 * after a letter inside a string is not. */
static void test_nul_after_a_token_only_outside_strings(void **state)
{
    (void)state;
    partd_jscan st;
    memset(&st, 0, sizeof st);
    char what[64];
    const char a[] = "[\"a\\\"b\",12";
    assert_int_equal(partd__decode_scan_chunk(&st, a, sizeof a - 1, what, sizeof what),
                     sizeof a - 1);
    partd__decode_scan_done(&st, a, sizeof a - 1);
    assert_int_equal(st.in_string, 0);
    const char b[] = "\0]";
    assert_int_equal(partd__decode_scan_skips_nul(&st, b, 0), 1);

    memset(&st, 0, sizeof st);
    const char c[] = "[\"ab";
    assert_int_equal(partd__decode_scan_chunk(&st, c, sizeof c - 1, what, sizeof what),
                     sizeof c - 1);
    partd__decode_scan_done(&st, c, sizeof c - 1);
    assert_int_equal(st.in_string, 1);
    assert_int_equal(partd__decode_scan_skips_nul(&st, b, 0), 0);
    /* within one chunk: after "true" yes, after a comma no */
    memset(&st, 0, sizeof st);
    const char d[] = "[true\0,\0";
    assert_int_equal(partd__decode_scan_skips_nul(&st, d, 5), 1);
    assert_int_equal(partd__decode_scan_skips_nul(&st, d, 7), 0);
}

static void test_counts_lines_of_the_chunk(void **state)
{
    (void)state;
    partd_jscan st;
    memset(&st, 0, sizeof st);
    char what[64];
    /* more than 255 words of ASCII, so the packed counters are flushed */
    char big[4096];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = i % 64 == 63 ? '\n' : ' ';
    assert_int_equal(partd__decode_scan_chunk(&st, big, sizeof big, what, sizeof what),
                     sizeof big);
    assert_int_equal(st.lines, sizeof big / 64);
    assert_int_equal(st.quotes, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_text_passes_whole_and_in_pieces),
        cmocka_unit_test(test_bad_utf8_is_found_where_it_is),
        cmocka_unit_test(test_escapes_jansson_refuses),
        cmocka_unit_test(test_vertical_tab_and_form_feed_are_not_white_space),
        cmocka_unit_test(test_nul_after_a_token_only_outside_strings),
        cmocka_unit_test(test_counts_lines_of_the_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
