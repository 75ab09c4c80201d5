/* test_metrics.c - daemon/metrics.c: counters, histograms and the text
 * exposition, with unknown labels folded into "other". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "metrics.h"

static void test_metrics_text(void **state)
{
    (void)state;
    partd_metrics m;
    partd_metrics_init(&m);
    partd_metrics_http(&m, "GET", PARTD_ROUTE_LIVEZ, 200, 0.0002);
    partd_metrics_http(&m, "BREW", PARTD_ROUTE_OTHER, 418, 2.0);
    partd_histogram_observe(&m.job_duration, 0.3);
    partd_metrics_gauges g = {123, 1, 1};
    size_t len = 0;
    char *text = partd_metrics_render(&m, &g, &len);
    assert_non_null(text);
    assert_non_null(strstr(text,
        "partd_http_requests_total{method=\"GET\",route=\"/livez\",code=\"200\"} 1\n"));
    assert_non_null(strstr(text,
        "partd_http_requests_total{method=\"other\",route=\"other\",code=\"other\"} 1\n"));
    assert_non_null(strstr(text, "partd_http_request_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
    assert_non_null(strstr(text, "partd_http_request_duration_seconds_bucket{le=\"+Inf\"} 2\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"0.1\"} 0\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"0.5\"} 1\n"));
    assert_non_null(strstr(text, "partd_cache_bytes 123\n"));
    assert_non_null(strstr(text, "partd_build_info{"));
    assert_non_null(strstr(text, "process_resident_memory_bytes "));
    free(text);
}

static void test_route_labels(void **state)
{
    (void)state;
    assert_string_equal(partd_route_label(PARTD_ROUTE_LIVEZ), "/livez");
    assert_string_equal(partd_route_label(PARTD_ROUTE_OTHER), "other");
}

static void test_histogram_counts_cumulative_and_overflow(void **state)
{
    (void)state;
    partd_metrics m;
    partd_metrics_init(&m);
    partd_histogram_observe(&m.job_duration, 1e9); /* past every bound: +Inf only */
    partd_metrics_gauges g = {0, 0, 0};
    size_t len = 0;
    char *text = partd_metrics_render(&m, &g, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"0.5\"} 0\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_count 1\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_text),
        cmocka_unit_test(test_route_labels),
        cmocka_unit_test(test_histogram_counts_cumulative_and_overflow),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
