/* test_job.c - daemon/job.c: status names and the job document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "job.h"

static void test_job_document_embeds_summary_and_error_verbatim(void **state)
{
    (void)state;
    partd_job_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "0123456789abcdef0123456789abcdef");
    snprintf(r.graph_hash, sizeof r.graph_hash, "sha256:g");
    snprintf(r.cache_key, sizeof r.cache_key, "sha256:k");
    r.created_ms = 1700000000000;
    r.status = PARTD_JOB_SUCCEEDED;
    r.summary = strdup("{\"bottleneck_ms\":1e-6}");
    size_t len = 0;
    char *text = partd_job_to_text(&r, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    assert_int_equal(text[len - 1], '\n');
    assert_non_null(strstr(text, "\"summary\":{\"bottleneck_ms\":1e-6}"));
    assert_non_null(strstr(text, "\"started_at\":null"));
    assert_non_null(strstr(text, "\"created_at\":\"2023-11-14T22:13:20.000Z\""));
    assert_null(strstr(text, "\"error\""));
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(doc, "links"), "result")),
                        "/v1/jobs/0123456789abcdef0123456789abcdef/result");
    json_decref(doc);
    free(text);

    r.status = PARTD_JOB_FAILED;
    r.error = strdup("{\"status\":422}\n");
    text = partd_job_to_text(&r, NULL);
    assert_non_null(strstr(text, "\"error\":{\"status\":422},\"links\""));
    assert_null(strstr(text, "\"summary\""));
    free(text);
    partd_job_row_clear(&r);
}

static void test_status_names_round_trip(void **state)
{
    (void)state;
    for (int s = 0; s < PARTD_JOB_N_STATUS; s++)
        assert_int_equal(partd_job_status_parse(partd_job_status_name((partd_job_status)s)), s);
    assert_string_equal(partd_job_status_name(PARTD_JOB_CANCELLED), "cancelled");
    assert_string_equal(partd_job_status_name(PARTD_JOB_N_STATUS), "unknown");
    assert_int_equal(partd_job_status_parse("done"), -1);
    assert_int_equal(partd_job_status_parse(""), -1);
    assert_false(partd_job_finished(PARTD_JOB_RUNNING));
    assert_true(partd_job_finished(PARTD_JOB_FAILED));
}

static void test_row_clear_is_idempotent(void **state)
{
    (void)state;
    partd_job_row r;
    memset(&r, 0, sizeof r);
    r.summary = strdup("{}");
    r.error = strdup("{}");
    partd_job_row_clear(&r);
    assert_null(r.summary);
    assert_null(r.error);
    partd_job_row_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_document_embeds_summary_and_error_verbatim),
        cmocka_unit_test(test_status_names_round_trip),
        cmocka_unit_test(test_row_clear_is_idempotent),
    };
    return cmocka_run_group_tests_name("job", tests, NULL, NULL);
}
