/* test_json_read.c - typed getters, their errors by JSON Pointer, and
 * pointer building. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/json_read.h"
#include "partd/partd.h"

typedef struct fixture {
    partd_problem pb;
    partd_strtab strings;
    partd_reader r;
    json_t *doc;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    partd_problem_init(&f->pb);
    partd_strtab_init(&f->strings);
    f->r = (partd_reader){.pb = &f->pb, .strings = &f->strings};
    json_error_t err;
    f->doc = json_loads("{\"s\":\"text\",\"i\":42,\"neg\":-7,\"r\":2.5,\"t\":true,"
                        "\"n\":null,\"a\":[1,2],\"o\":{},\"big\":9007199254740993,"
                        "\"whole_real\":4.0,\"empty\":\"\",\"zero\":0}",
                        0, &err);
    assert_non_null(f->doc);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    json_decref(f->doc);
    partd_strtab_free(&f->strings);
    partd_problem_free(&f->pb);
    free(f);
    return 0;
}

static json_t *member(fixture *f, const char *key)
{
    json_t *v = json_object_get(f->doc, key);
    assert_non_null(v);
    return v;
}

static void test_type_names(void **state)
{
    fixture *f = *state;
    const char *want[][2] = {{"s", "a string"},   {"i", "an integer"}, {"r", "a number"},
                             {"t", "a boolean"},  {"n", "null"},       {"a", "an array"},
                             {"o", "an object"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        assert_string_equal(partd_json_read_type_name(member(f, want[i][0])), want[i][1]);
}

static void test_wrong_types_are_reported_at_the_member(void **state)
{
    fixture *f = *state;
    int64_t x = 99;
    double d = 99;
    int b = 99, e = 99;
    const char *const names[] = {"x", NULL};
    assert_int_equal(partd_json_read_object(&f->r, member(f, "a"), "/a", NULL), PARTD_EINVALID);
    assert_int_equal(partd_json_read_array(&f->r, member(f, "o"), "/o", "an array of names"),
                     PARTD_EINVALID);
    assert_null(partd_json_read_string(&f->r, member(f, "i"), "/i"));
    assert_int_equal(partd_json_read_int(&f->r, member(f, "s"), "/s", 0, 10, &x), PARTD_EINVALID);
    assert_int_equal(partd_json_read_number(&f->r, member(f, "t"), "/t", 0, 0, 10, &d),
                     PARTD_EINVALID);
    assert_int_equal(partd_json_read_bool(&f->r, member(f, "n"), "/n", &b), PARTD_EINVALID);
    assert_int_equal(partd_json_read_enum(&f->r, member(f, "i"), "/i2", names, &e), PARTD_EINVALID);
    assert_int_equal(partd_json_read_bytes(&f->r, member(f, "s"), "/s2", 0, &x), PARTD_EINVALID);
    /* Nothing written on failure. */
    assert_int_equal(x, 99);
    assert_true(d == 99);
    assert_int_equal(b, 99);
    assert_int_equal(e, 99);
    assert_int_equal(f->pb.n_errors, 8);
    tu_assert_error(&f->pb, "/a", "must be an object, not an array");
    tu_assert_error(&f->pb, "/o", "must be an array of names, not an object");
    tu_assert_error(&f->pb, "/i", "must be a string, not an integer");
    tu_assert_error(&f->pb, "/s", "must be an integer, not a string");
    tu_assert_error(&f->pb, "/t", "must be a number, not a boolean");
    tu_assert_error(&f->pb, "/n", "must be a boolean, not null");
    tu_assert_error(&f->pb, "/i2", "must be a string, not an integer");
    tu_assert_error(&f->pb, "/s2", "must be an integer number of bytes, not a string");
}

static void test_good_values(void **state)
{
    fixture *f = *state;
    int64_t x;
    double d;
    int b, e;
    const char *const names[] = {"pipeline", "text", NULL};
    assert_int_equal(partd_json_read_object(&f->r, member(f, "o"), "/o", NULL), PARTD_OK);
    assert_int_equal(partd_json_read_array(&f->r, member(f, "a"), "/a", NULL), PARTD_OK);
    assert_string_equal(partd_json_read_string(&f->r, member(f, "s"), "/s"), "text");
    assert_int_equal(partd_json_read_int(&f->r, member(f, "i"), "/i", 42, 42, &x), PARTD_OK);
    assert_int_equal(x, 42);
    assert_int_equal(partd_json_read_bytes(&f->r, member(f, "neg"), "/neg", -PARTD_MAX_BYTES, &x),
                     PARTD_OK);
    assert_int_equal(x, -7);
    /* An integer is a number too. */
    assert_int_equal(partd_json_read_number(&f->r, member(f, "i"), "/i", 0, 1, 100, &d), PARTD_OK);
    assert_true(d == 42.0);
    assert_int_equal(partd_json_read_number(&f->r, member(f, "r"), "/r", 2.5, 0, 2.5, &d), PARTD_OK);
    assert_true(d == 2.5);
    assert_int_equal(partd_json_read_bool(&f->r, member(f, "t"), "/t", &b), PARTD_OK);
    assert_int_equal(b, 1);
    assert_int_equal(partd_json_read_enum(&f->r, member(f, "s"), "/s", names, &e), PARTD_OK);
    assert_int_equal(e, 1);
    assert_int_equal(f->pb.n_errors, 0);
}

static void test_ranges(void **state)
{
    fixture *f = *state;
    int64_t x = 5;
    double d = 5;
    assert_int_equal(partd_json_read_int(&f->r, member(f, "i"), "/i", 0, 41, &x), PARTD_EINVALID);
    tu_assert_error(&f->pb, "/i", "must be between 0 and 41, not 42");
    assert_int_equal(partd_json_read_int(&f->r, member(f, "neg"), "/neg", 0, 10, &x), PARTD_EINVALID);
    tu_assert_error(&f->pb, "/neg", "must be between 0 and 10, not -7");
    /* Byte counts: integers in [min, 2^53], bounds written as the contract does. */
    assert_int_equal(partd_json_read_bytes(&f->r, member(f, "big"), "/big", 0, &x), PARTD_EINVALID);
    tu_assert_error(&f->pb, "/big", "must be between 0 and 2^53, not 9007199254740993");
    assert_int_equal(partd_json_read_bytes(&f->r, member(f, "zero"), "/zero", 1, &x), PARTD_EINVALID);
    tu_assert_error(&f->pb, "/zero", "must be between 1 and 2^53, not 0");
    /* 4.0 is the integer 4 (contract: bytes are integral JSON numbers). */
    assert_int_equal(partd_json_read_bytes(&f->r, member(f, "whole_real"), "/whole_real", 0, &x),
                     PARTD_OK);
    assert_int_equal(x, 4);
    /* Numbers: inclusive and exclusive minimum, maximum. */
    assert_int_equal(partd_json_read_number(&f->r, member(f, "zero"), "/zero", 0, 1, 10, &d),
                     PARTD_EINVALID);
    tu_assert_error(&f->pb, "/zero", "must be greater than 0 and at most 10, not 0");
    assert_int_equal(partd_json_read_number(&f->r, member(f, "neg"), "/neg", 0, 0, 10, &d),
                     PARTD_EINVALID);
    tu_assert_error(&f->pb, "/neg", "must be at least 0 and at most 10, not -7");
    assert_int_equal(partd_json_read_number(&f->r, member(f, "r"), "/r", 0, 0, 2, &d), PARTD_EINVALID);
    tu_assert_error(&f->pb, "/r", "must be at least 0 and at most 2, not 2.5");
    assert_int_equal(x, 4); /* set by the 4.0 above, untouched by every refusal */
    assert_true(d == 5);
}

static void test_enum_lists_the_names(void **state)
{
    fixture *f = *state;
    const char *const names[] = {"pipeline", "size_based", NULL};
    int e = -1;
    assert_int_equal(partd_json_read_enum(&f->r, member(f, "s"), "/options/mode", names, &e),
                     PARTD_EINVALID);
    tu_assert_error(&f->pb, "/options/mode", "must be one of pipeline, size_based, not \"text\"");
    assert_int_equal(e, -1);
}

static void test_names(void **state)
{
    fixture *f = *state;
    uint32_t id = partd_json_read_name(&f->r, member(f, "s"), "/s");
    assert_int_not_equal(id, PARTD_STR_NONE);
    assert_string_equal(partd_str(&f->strings, id), "text");
    assert_int_equal(partd_json_read_name(&f->r, member(f, "s"), "/s"), id); /* interned once */

    assert_int_equal(partd_json_read_name(&f->r, member(f, "empty"), "/empty"), PARTD_STR_NONE);
    tu_assert_error(&f->pb, "/empty", "must not be empty");
    assert_int_equal(partd_json_read_name(&f->r, member(f, "i"), "/i"), PARTD_STR_NONE);
    tu_assert_error(&f->pb, "/i", "must be a string, not an integer");

    char longname[PARTD_NAME_MAX_BYTES + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    json_t *v = json_string(longname);
    assert_int_equal(partd_json_read_name(&f->r, v, "/long"), PARTD_STR_NONE);
    tu_assert_error(&f->pb, "/long", "is 1025 bytes long; names are at most 1024 bytes");
    json_decref(v);
    longname[PARTD_NAME_MAX_BYTES] = '\0'; /* exactly the limit: accepted */
    v = json_string(longname);
    assert_int_not_equal(partd_json_read_name(&f->r, v, "/long2"), PARTD_STR_NONE);
    json_decref(v);

    v = json_stringn("a\0b", 3);
    assert_int_equal(partd_json_read_name(&f->r, v, "/nul"), PARTD_STR_NONE);
    tu_assert_error(&f->pb, "/nul", "must not contain U+0000");
    json_decref(v);
    assert_int_equal(f->r.oom, 0);
    assert_int_equal(f->strings.count, 2);
}

static void test_required_and_unknown_members(void **state)
{
    fixture *f = *state;
    char ptr[PARTD_POINTER_CAP];
    assert_ptr_equal(partd_json_read_required(&f->r, f->doc, "/options", "i", ptr), member(f, "i"));
    assert_string_equal(ptr, "/options/i");
    assert_int_equal(f->pb.n_errors, 0);
    assert_null(partd_json_read_required(&f->r, f->doc, "/options", "a/b", ptr));
    assert_string_equal(ptr, "/options/a~1b");
    tu_assert_error(&f->pb, "/options/a~1b", "is required");

    json_error_t err;
    json_t *o = json_loads("{\"keep\":1,\"extra\":2,\"meta\":{\"k\":1}}", 0, &err);
    const char *const allowed[] = {"keep", NULL};
    partd_problem_free(&f->pb);
    partd_json_read_reject_unknown(&f->r, o, "/devices/0", allowed, 1);
    assert_int_equal(f->pb.n_errors, 1);
    tu_assert_error(&f->pb, "/devices/0/extra", "unknown member");
    partd_problem_free(&f->pb);
    partd_json_read_reject_unknown(&f->r, o, "/devices/0", allowed, 0); /* meta not allowed */
    assert_int_equal(f->pb.n_errors, 2);
    tu_assert_error(&f->pb, "/devices/0/meta", "unknown member");
    json_decref(o);

    o = json_loads("{\"meta\":[1]}", 0, &err);
    partd_problem_free(&f->pb);
    partd_json_read_reject_unknown(&f->r, o, "", allowed, 1); /* meta must be an object */
    assert_int_equal(f->pb.n_errors, 1);
    tu_assert_error(&f->pb, "/meta", "must be an object, not an array");
    json_decref(o);
}

static void test_pointer_building(void **state)
{
    (void)state;
    char base[PARTD_POINTER_CAP] = "/graph/nodes";
    char out[PARTD_POINTER_CAP];
    partd_pointer_index(out, base, 17);
    assert_string_equal(out, "/graph/nodes/17");
    partd_pointer_member(out, "/graph/modules/mod_stats/0", "a~b/c");
    assert_string_equal(out, "/graph/modules/mod_stats/0/a~0b~1c");
    partd_pointer_member(out, "", "graph");
    assert_string_equal(out, "/graph");

    /* A member longer than the buffer: truncated, never overflowing. */
    static char huge[3 * PARTD_POINTER_CAP];
    memset(huge, 'x', sizeof huge - 1);
    partd_pointer_member(out, base, huge);
    assert_int_equal(strlen(out), PARTD_POINTER_CAP - 1);
    assert_memory_equal(out, "/graph/nodes/xxx", 16);
    /* A base without room left: the result is the (truncated) base. */
    char full[PARTD_POINTER_CAP];
    memset(full, 'b', sizeof full - 1);
    full[sizeof full - 1] = '\0';
    partd_pointer_index(out, full, 3);
    assert_int_equal(strlen(out), PARTD_POINTER_CAP - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_type_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_types_are_reported_at_the_member, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_good_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enum_lists_the_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_required_and_unknown_members, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pointer_building, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
