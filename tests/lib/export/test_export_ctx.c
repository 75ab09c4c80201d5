/* test_export_ctx.c - the context of one export (export_ctx.c): refusals
 * into the problem, approximations into warnings (refusals under
 * PARTD_EXPORT_STRICT), the growing text, comment lines and JSON warnings. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "partd/partd.h"

typedef struct fixture {
    partd__export_plan plan;
    partd__export_ctx c;
    partd_problem pb;
} fixture;

static void fixture_init(fixture *f, unsigned flags)
{
    memset(f, 0, sizeof *f);
    partd_problem_init(&f->pb);
    f->plan.mode = "pipeline";
    f->c = (partd__export_ctx){&f->plan, PARTD_EXPORT_FAIRSCALE, flags, &f->pb, 0, NULL, 0,
                               PARTD_OK};
}

static void fixture_free(fixture *f)
{
    partd__export_ctx_free(&f->c);
    partd_problem_free(&f->pb);
}

static void test_refusals_make_one_problem(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 0);
    partd__export_refuse(&f.c, "/partitions/1", "first %d", 1);
    partd__export_refuse(&f.c, "/mode", "second");
    assert_int_equal(f.c.n_refusals, 2);
    assert_int_equal(f.pb.status, 422);
    assert_string_equal(f.pb.type, "urn:partd:problem:export-not-expressible");
    assert_string_equal(f.pb.detail,
                        "the fairscale format cannot express this pipeline plan (see errors)");
    tu_assert_error(&f.pb, "/partitions/1", "first 1");
    tu_assert_error(&f.pb, "/mode", "second");
    fixture_free(&f);
}

static void test_approximations_are_warnings_or_strict_refusals(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f, 0);
    partd__export_approx(&f.c, "some-code", "/summary", "said %s", "approximately");
    assert_int_equal(f.c.n_refusals, 0);
    assert_int_equal(f.c.n_warnings, 1);
    char *out;
    size_t len;
    assert_int_equal(partd__export_json_finish(&f.c, json_object(), &out, &len), PARTD_OK);
    assert_string_equal(out, "{\n  \"warnings\": [\n    {\n      \"code\": \"some-code\",\n"
                             "      \"message\": \"said approximately\"\n    }\n  ]\n}\n");
    assert_int_equal(strlen(out), len);
    free(out);
    partd__export_text t;
    partd__export_text_init(&t);
    partd__export_comment_warnings(&f.c, &t, "#");
    assert_int_equal(partd__export_text_finish(&t, &out, &len), PARTD_OK);
    assert_string_equal(out, "# warning (some-code): said approximately\n");
    free(out);
    fixture_free(&f);

    fixture_init(&f, PARTD_EXPORT_STRICT);
    partd__export_approx(&f.c, "some-code", "/summary", "said %s", "approximately");
    assert_int_equal(f.c.n_warnings, 0);
    assert_int_equal(f.c.n_refusals, 1);
    tu_assert_error(&f.pb, "/summary", "said approximately");
    assert_non_null(strstr(f.pb.detail, "exactly"));
    fixture_free(&f);
}

static void test_text_grows(void **state)
{
    (void)state;
    partd__export_text t;
    partd__export_text_init(&t);
    char *out;
    size_t len;
    assert_int_equal(partd__export_text_finish(&t, &out, &len), PARTD_ENOMEM); /* nothing */
    partd__export_text_init(&t);
    for (int i = 0; i < 1000; i++)
        partd__export_printf(&t, "%04d,", i);
    partd__export_printf(&t, "%s", "");
    assert_int_equal(partd__export_text_finish(&t, &out, &len), PARTD_OK);
    assert_int_equal(len, 5000);
    assert_int_equal(strlen(out), 5000);
    assert_int_equal(strncmp(out + 4995, "0999,", 5), 0);
    free(out);
}

static void test_stage_pointers(void **state)
{
    (void)state;
    char buf[96];
    partd__export_stage_pointer(buf, sizeof buf, 3, NULL, (size_t)-1);
    assert_string_equal(buf, "/partitions/3");
    partd__export_stage_pointer(buf, sizeof buf, 3, "units", (size_t)-1);
    assert_string_equal(buf, "/partitions/3/units");
    partd__export_stage_pointer(buf, sizeof buf, 0, "checkpointed", 12);
    assert_string_equal(buf, "/partitions/0/checkpointed/12");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals_make_one_problem),
        cmocka_unit_test(test_approximations_are_warnings_or_strict_refusals),
        cmocka_unit_test(test_text_grows),
        cmocka_unit_test(test_stage_pointers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
