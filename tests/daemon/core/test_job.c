/* test_job.c - daemon/job.c: status names and the job document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/job.h"
#include "partd/decode.h"
#include "partd/partd.h"

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

/* What a job says of its request: the graph's name, the mode and the
 * devices, so that a person can tell jobs apart without their hashes. */
static void test_job_says_what_was_asked(void **state)
{
    (void)state;
    partd_request *req = tu_decode_ok(
        "{\"graph\":{\"name\":\"GPT2 \\\"small\\\"\",\"nodes\":[{\"name\":\"a\",\"op\":"
        "\"call_function\"}]},\"devices\":[{\"name\":\"fast0\",\"memory_bytes\":1000},"
        "{\"name\":\"slow0\",\"memory_bytes\":1000}],\"options\":{\"mode\":\"training\"}}");
    partd_job_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "0123456789abcdef0123456789abcdef");
    assert_int_equal(partd_job_about(req, r.about), PARTD_OK);
    assert_string_equal(r.about, "\"graph_name\":\"GPT2 \\\"small\\\"\",\"mode\":\"training\","
                                 "\"n_devices\":2,\"devices\":[\"fast0\",\"slow0\"]");
    partd_request_free(req);
    char *text = partd_job_to_text(&r, NULL);
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "graph_name")), "GPT2 \"small\"");
    assert_string_equal(json_string_value(json_object_get(doc, "mode")), "training");
    assert_int_equal(json_array_size(json_object_get(doc, "devices")), 2);
    json_decref(doc);
    free(text);

    /* no name: null; 40 devices of 100-byte names: the first that fit */
    char json[8192] = "{\"graph\":{\"nodes\":[{\"name\":\"a\",\"op\":\"call_function\"}]},"
                      "\"devices\":[";
    for (int d = 0; d < 40; d++)
        snprintf(json + strlen(json), sizeof json - strlen(json),
                 "%s{\"name\":\"%096d\",\"memory_bytes\":1000}", d ? "," : "", d);
    strcat(json, "]}");
    req = tu_decode_ok(json);
    assert_int_equal(partd_job_about(req, r.about), PARTD_OK);
    partd_request_free(req);
    assert_non_null(strstr(r.about, "\"graph_name\":null,\"mode\":\"pipeline\",\"n_devices\":40,"));
    assert_true(strlen(r.about) < PARTD_JOB_ABOUT_CAP);
    text = partd_job_to_text(&r, NULL);
    doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    size_t listed = json_array_size(json_object_get(doc, "devices"));
    assert_true(listed >= 8 && listed < PARTD_JOB_ABOUT_DEVICES);
    json_decref(doc);
    free(text);
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
        cmocka_unit_test(test_job_says_what_was_asked),
        cmocka_unit_test(test_row_clear_is_idempotent),
    };
    return cmocka_run_group_tests_name("job", tests, NULL, NULL);
}
