/* test_problem.c - problem documents: fields, the error cap, the JSON text,
 * JSON Pointer building. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "partd/partd.h"
#include "partd/problem.h"

static json_t *parse(const char *text, size_t len)
{
    assert_non_null(text);
    assert_true(len > 0);
    assert_int_equal(text[len - 1], '\n');
    assert_int_equal(strlen(text), len);
    json_error_t err;
    json_t *doc = json_loads(text, 0, &err);
    assert_non_null(doc);
    return doc;
}

static void test_set_fills_type_title_detail(void **state)
{
    (void)state;
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 422, "invalid-request", "Invalid request", "%d errors in %s", 2,
                      "graph");
    assert_int_equal(p.status, 422);
    assert_string_equal(p.type, "urn:partd:problem:invalid-request");
    assert_string_equal(p.title, "Invalid request");
    assert_string_equal(p.detail, "2 errors in graph");
    /* A second set replaces the first. */
    partd_problem_set(&p, 409, "cancelled", "Cancelled", "stopped");
    assert_int_equal(p.status, 409);
    assert_string_equal(p.type, "urn:partd:problem:cancelled");
    assert_string_equal(p.detail, "stopped");
    partd_problem_free(&p);
    assert_null(p.type);
    assert_int_equal(p.status, 0);
}

static void test_document_members_in_order(void **state)
{
    (void)state;
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 422, "invalid-request", "Invalid request", "see errors");
    assert_int_equal(partd_problem_add(&p, "/graph/nodes/3/op", "must be one of %s", "x, y"),
                     PARTD_OK);
    assert_int_equal(partd_problem_add(&p, "", "whole document"), PARTD_OK);
    size_t len = 0;
    char *text = partd_problem_to_json(&p, &len);
    assert_string_equal(text,
                        "{\"type\":\"urn:partd:problem:invalid-request\","
                        "\"title\":\"Invalid request\",\"status\":422,"
                        "\"detail\":\"see errors\",\"errors\":["
                        "{\"pointer\":\"/graph/nodes/3/op\",\"message\":\"must be one of x, y\"},"
                        "{\"pointer\":\"\",\"message\":\"whole document\"}]}\n");
    json_decref(parse(text, len));
    free(text);
    partd_problem_free(&p);
}

static void test_unset_problem_defaults(void **state)
{
    (void)state;
    partd_problem p;
    partd_problem_init(&p);
    size_t len;
    char *text = partd_problem_to_json(&p, &len);
    json_t *doc = parse(text, len);
    assert_string_equal(json_string_value(json_object_get(doc, "type")), "about:blank");
    assert_string_equal(json_string_value(json_object_get(doc, "title")), "Error");
    assert_int_equal(json_integer_value(json_object_get(doc, "status")), 500);
    assert_string_equal(json_string_value(json_object_get(doc, "detail")), "");
    assert_int_equal(json_array_size(json_object_get(doc, "errors")), 0);
    assert_null(json_object_get(doc, "errors_dropped"));
    json_decref(doc);
    free(text);
    /* len may be NULL */
    text = partd_problem_to_json(&p, NULL);
    assert_non_null(text);
    free(text);
    partd_problem_free(&p);
}

static void test_cap_drops_and_counts(void **state)
{
    (void)state;
    partd_problem p;
    partd_problem_init(&p);
    for (int i = 0; i < PARTD_PROBLEM_MAX_ERRORS; i++) {
        assert_false(partd_problem_full(&p));
        assert_int_equal(partd_problem_add(&p, "/x", "error %d", i), PARTD_OK);
    }
    assert_true(partd_problem_full(&p));
    assert_int_equal(partd_problem_add(&p, "/x", "one too many"), PARTD_ETOOBIG);
    assert_int_equal(partd_problem_add(&p, "/x", "two too many"), PARTD_ETOOBIG);
    assert_int_equal(p.n_errors, PARTD_PROBLEM_MAX_ERRORS);
    assert_int_equal(p.dropped, 2);
    size_t len;
    char *text = partd_problem_to_json(&p, &len);
    json_t *doc = parse(text, len);
    assert_int_equal(json_array_size(json_object_get(doc, "errors")), PARTD_PROBLEM_MAX_ERRORS);
    assert_int_equal(json_integer_value(json_object_get(doc, "errors_dropped")), 2);
    json_t *last = json_array_get(json_object_get(doc, "errors"), PARTD_PROBLEM_MAX_ERRORS - 1);
    assert_string_equal(json_string_value(json_object_get(last, "message")), "error 99");
    json_decref(doc);
    free(text);
    partd_problem_free(&p);
}

/* A message cut inside a UTF-8 sequence still gives a document: the
 * non-ASCII bytes become '?'. Valid UTF-8 is kept (escaped as ASCII). */
static void test_broken_utf8_is_replaced(void **state)
{
    (void)state;
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 400, "malformed-json", "Malformed JSON", "near '\xc3'");
    partd_problem_add(&p, "/graph/nodes/0/name", "name \"caf\xc3\xa9\"");
    size_t len;
    char *text = partd_problem_to_json(&p, &len);
    json_t *doc = parse(text, len);
    assert_string_equal(json_string_value(json_object_get(doc, "detail")), "near '?'");
    json_t *e = json_array_get(json_object_get(doc, "errors"), 0);
    assert_string_equal(json_string_value(json_object_get(e, "message")),
                        "name \"caf\xc3\xa9\"");
    for (const char *c = text; *c; c++) /* ENSURE_ASCII */
        assert_true((unsigned char)*c < 0x80);
    json_decref(doc);
    free(text);
    partd_problem_free(&p);
}

static void test_json_dump_line(void **state)
{
    (void)state;
    size_t len = 0;
    char *s = partd_problem_json_dump_line(json_pack("{s:i}", "a", 1), JSON_COMPACT, &len);
    assert_string_equal(s, "{\"a\":1}\n");
    assert_int_equal(len, 8);
    free(s);
    /* NULL document (e.g. json_pack failed): NULL, not a crash. */
    assert_null(partd_problem_json_dump_line(NULL, JSON_COMPACT, &len));
}

/* Byte counts for people, as partd show writes them: three significant
 * digits in binary units; the exact count goes in a member. */
static void test_bytes_for_people(void **state)
{
    (void)state;
    static const struct {
        double bytes;
        const char *text;
    } cases[] = {
        {0, "0 B"},           {512, "512 B"},           {1023, "1023 B"},
        {1024, "1.00 KiB"},   {1536, "1.50 KiB"},       {10239, "10.0 KiB"},
        {589824, "576 KiB"},  {1597415552, "1.49 GiB"}, {1073741824, "1.00 GiB"},
        {1048575, "1024 KiB"}, {5.0 * (1ull << 40), "5.00 TiB"}, {-3, "0 B"},
    };
    char out[PARTD_PROBLEM_BYTES_CAP];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(partd_problem_bytes(out, cases[i].bytes), cases[i].text);
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set_shortfall(&p, 200, 150);
    char *doc = partd_problem_to_json(&p, NULL);
    assert_non_null(strstr(doc, "\"memory_bytes\":200,\"device_memory_bytes\":150,\"short_bytes\":50"));
    free(doc);
    partd_problem_free(&p);
}

static void test_pointer_escaping_and_truncation(void **state)
{
    (void)state;
    char buf[64] = "";
    partd_problem_pointer_append(buf, sizeof buf, "graph");
    partd_problem_pointer_append(buf, sizeof buf, "a/b~c");
    partd_problem_pointer_append_index(buf, sizeof buf, 0);
    partd_problem_pointer_append_index(buf, sizeof buf, 1234567);
    assert_string_equal(buf, "/graph/a~1b~0c/0/1234567");
    partd_problem_pointer_append(buf, sizeof buf, "");
    assert_string_equal(buf, "/graph/a~1b~0c/0/1234567/");

    char small[8] = "";
    partd_problem_pointer_append(small, sizeof small, "abcdefghij");
    assert_string_equal(small, "/abcdef"); /* truncated, terminated */
    partd_problem_pointer_append(small, sizeof small, "x");
    assert_string_equal(small, "/abcdef"); /* full: unchanged */

    char tight[5] = "/ab";
    partd_problem_pointer_append(tight, sizeof tight, "~");
    assert_string_equal(tight, "/ab/"); /* never half an escape */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_fills_type_title_detail),
        cmocka_unit_test(test_document_members_in_order),
        cmocka_unit_test(test_unset_problem_defaults),
        cmocka_unit_test(test_cap_drops_and_counts),
        cmocka_unit_test(test_broken_utf8_is_replaced),
        cmocka_unit_test(test_json_dump_line),
        cmocka_unit_test(test_pointer_escaping_and_truncation),
        cmocka_unit_test(test_bytes_for_people),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
