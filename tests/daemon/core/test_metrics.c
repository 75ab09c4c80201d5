/* test_metrics.c - daemon/core/metrics.c: counters, histograms and the
 * text exposition, with unknown labels folded into "other"; finished jobs
 * by status under the job's own status names; a shared store's figures
 * from the gauges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/job.h"
#include "core/metrics.h"

static void test_metrics_text(void **state)
{
    (void)state;
    partd_metrics m;
    partd_metrics_init(&m);
    partd_metrics_http(&m, "GET", PARTD_ROUTE_LIVEZ, 200, 0.0002);
    partd_metrics_http(&m, "BREW", PARTD_ROUTE_OTHER, 418, 2.0);
    partd_metrics_histogram_observe(&m.job_duration, 0.3);
    partd_metrics_gauges g = {.cache_bytes = 123, .cache_entries = 1, .ready = 1};
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
    assert_string_equal(partd_metrics_route_label(PARTD_ROUTE_LIVEZ), "/livez");
    assert_string_equal(partd_metrics_route_label(PARTD_ROUTE_OTHER), "other");
}

static void test_histogram_counts_cumulative_and_overflow(void **state)
{
    (void)state;
    partd_metrics m;
    partd_metrics_init(&m);
    partd_metrics_histogram_observe(&m.job_duration, 1e9); /* past every bound: +Inf only */
    partd_metrics_gauges g = {0};
    size_t len = 0;
    char *text = partd_metrics_render(&m, &g, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"0.5\"} 0\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_bucket{le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(text, "partd_job_duration_seconds_count 1\n"));
    free(text);
}

/* jobs_finished is indexed by partd_job_status and labelled with its names,
 * although metrics.c does not include job.h. */
static void test_finished_jobs_follow_the_job_statuses(void **state)
{
    (void)state;
    assert_int_equal(PARTD_METRICS_JOB_STATUSES, PARTD_JOB_N_STATUS);
    assert_int_equal(PARTD_METRICS_FIRST_FINAL_STATUS, PARTD_JOB_SUCCEEDED);
    partd_metrics m;
    partd_metrics_init(&m);
    for (int s = 0; s < PARTD_JOB_N_STATUS; s++)
        atomic_store(&m.jobs_finished[s], (uint64_t)(10 + s));
    partd_metrics_gauges g = {0};
    size_t len = 0;
    char *text = partd_metrics_render(&m, &g, &len);
    assert_non_null(text);
    for (int s = 0; s < PARTD_JOB_N_STATUS; s++) {
        char line[128];
        snprintf(line, sizeof line, "partd_jobs_finished_total{status=\"%s\"} %d\n",
                 partd_job_status_name((partd_job_status)s), 10 + s);
        if (partd_job_finished((partd_job_status)s))
            assert_non_null(strstr(text, line));
        else
            assert_null(strstr(text, line));
    }
    free(text);
}

/* On a shared store the queue gauge is the store's count, and the store's
 * round trips are shown; a count that failed shows the replica's own. */
static void test_shared_store_figures_come_from_the_gauges(void **state)
{
    (void)state;
    partd_metrics m;
    partd_metrics_init(&m);
    atomic_store(&m.jobs_queued, 3);
    partd_metrics_gauges g = {0};
    size_t len = 0;
    char *text = partd_metrics_render(&m, &g, &len);
    assert_non_null(strstr(text, "# HELP partd_jobs_queued Jobs waiting to run.\n"));
    assert_non_null(strstr(text, "\npartd_jobs_queued 3\n"));
    assert_null(strstr(text, "partd_store_round_trips_total"));
    free(text);
    g.shared = 1;
    g.shared_queued = 7;
    g.store_round_trips = 42;
    text = partd_metrics_render(&m, &g, &len);
    assert_non_null(strstr(text, "of every replica sharing the store.\n"));
    assert_non_null(strstr(text, "\npartd_jobs_queued 7\n"));
    assert_non_null(strstr(text, "\npartd_store_round_trips_total 42\n"));
    assert_non_null(strstr(text, "\npartd_store_ends_unwritten 0\n"));
    free(text);
    g.shared_queued = -1;
    text = partd_metrics_render(&m, &g, &len);
    assert_non_null(strstr(text, "\npartd_jobs_queued 3\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_text),
        cmocka_unit_test(test_route_labels),
        cmocka_unit_test(test_histogram_counts_cumulative_and_overflow),
        cmocka_unit_test(test_finished_jobs_follow_the_job_statuses),
        cmocka_unit_test(test_shared_store_figures_come_from_the_gauges),
    };
    return cmocka_run_group_tests_name("metrics", tests, NULL, NULL);
}
