/* test_daemon_util.c - the daemon's small units: ids, times, secret
 * comparison, number parsing, the hash map, settings (flags over
 * environment over defaults), the job document and the metrics text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "config.h"
#include "job.h"
#include "metrics.h"
#include "partd.h"
#include "util.h"

static void test_ids_are_random_hex(void **state)
{
    (void)state;
    char a[PARTD_ID_LEN + 1], b[PARTD_ID_LEN + 1];
    assert_int_equal(partd_id_new(a), PARTD_OK);
    assert_int_equal(partd_id_new(b), PARTD_OK);
    assert_true(partd_id_valid(a));
    assert_string_not_equal(a, b);
    assert_false(partd_id_valid("0123"));
    assert_false(partd_id_valid("0123456789ABCDEF0123456789abcdef"));
    assert_false(partd_id_valid("0123456789abcdef0123456789abcdef0"));
    assert_true(partd_id_valid("0123456789abcdef0123456789abcdef"));
}

static void test_rfc3339(void **state)
{
    (void)state;
    char buf[32];
    partd_rfc3339(0, buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    partd_rfc3339(1700000000123, buf);
    assert_string_equal(buf, "2023-11-14T22:13:20.123Z");
}

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(partd_secret_equal("abc", 3, "abc", 3));
    assert_false(partd_secret_equal("abc", 3, "abd", 3));
    assert_false(partd_secret_equal("abc", 3, "abcd", 4));
    assert_false(partd_secret_equal("", 0, "a", 1));
}

static void test_read_file(void **state)
{
    (void)state;
    char path[] = "/tmp/partd-read-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    for (int i = 0; i < 100000; i++)
        fputc('a' + i % 26, f);
    fclose(f);
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(partd_read_file(path, 100000, &buf, &len), PARTD_OK);
    assert_int_equal(len, 100000);
    assert_int_equal(buf[99999], 'a' + 99999 % 26);
    assert_int_equal(buf[len], '\0');
    free(buf);
    assert_int_equal(partd_read_file(path, 99999, &buf, &len), PARTD_ETOOBIG);
    assert_int_equal(errno, EFBIG);
    unlink(path);
    assert_int_equal(partd_read_file(path, 100000, &buf, &len), PARTD_EIO);
    assert_int_equal(errno, ENOENT);
}

static void test_parse_u64(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(partd_parse_u64("0", 10, &v), PARTD_OK);
    assert_int_equal(v, 0);
    assert_int_equal(partd_parse_u64("1000", 1000, &v), PARTD_OK);
    assert_int_equal(partd_parse_u64("1001", 1000, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("18446744073709551615", UINT64_MAX, &v), PARTD_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(partd_parse_u64("18446744073709551616", UINT64_MAX, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("-1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64(" 1", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("1x", 10, &v), PARTD_EINVALID);
    assert_int_equal(partd_parse_u64("", 10, &v), PARTD_EINVALID);
}

static void test_map(void **state)
{
    (void)state;
    partd_map m;
    partd_map_init(&m);
    static char keys[1000][16];
    for (int i = 0; i < 1000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        assert_int_equal(partd_map_put(&m, keys[i], &keys[i]), PARTD_OK);
    }
    assert_int_equal(m.count, 1000);
    for (int i = 0; i < 1000; i++)
        assert_ptr_equal(partd_map_get(&m, keys[i]), &keys[i]);
    assert_null(partd_map_get(&m, "nope"));
    for (int i = 0; i < 1000; i += 2)
        assert_ptr_equal(partd_map_remove(&m, keys[i]), &keys[i]);
    assert_int_equal(m.count, 500);
    assert_null(partd_map_get(&m, "k0"));
    assert_non_null(partd_map_get(&m, "k1"));
    assert_null(partd_map_remove(&m, "k0"));
    partd_map_free(&m);
}

static int parse(partd_config *cfg, char *err, int argc, char **argv)
{
    return partd_config_parse(cfg, argc, argv, err, 512);
}

static void test_config_precedence_and_errors(void **state)
{
    (void)state;
    partd_config cfg;
    char err[512];
    unsetenv("PARTD_QUEUE_MAX");
    unsetenv("PARTD_LISTEN");
    char *none[] = {"serve"};
    assert_int_equal(parse(&cfg, err, 1, none), PARTD_CONFIG_OK);
    assert_string_equal(cfg.listen, "127.0.0.1:8080");
    assert_int_equal(cfg.queue_max, 256);
    assert_int_equal(cfg.max_body_bytes, 268435456);
    assert_true(cfg.workers >= 1);
    assert_null(cfg.token_file);

    setenv("PARTD_QUEUE_MAX", "7", 1);
    setenv("PARTD_LISTEN", "[::1]:9000", 1);
    assert_int_equal(parse(&cfg, err, 1, none), PARTD_CONFIG_OK);
    assert_int_equal(cfg.queue_max, 7);
    assert_string_equal(cfg.listen, "[::1]:9000");
    char *flags[] = {"serve", "--queue-max", "9", "--log-format=json", "--workers", "3"};
    assert_int_equal(parse(&cfg, err, 6, flags), PARTD_CONFIG_OK);
    assert_int_equal(cfg.queue_max, 9); /* flag over environment */
    assert_int_equal(cfg.log_format, PARTD_LOG_JSON);
    assert_int_equal(cfg.workers, 3);

    setenv("PARTD_QUEUE_MAX", "lots", 1);
    assert_int_equal(parse(&cfg, err, 1, none), PARTD_CONFIG_ERROR);
    assert_non_null(strstr(err, "PARTD_QUEUE_MAX"));
    unsetenv("PARTD_QUEUE_MAX");
    unsetenv("PARTD_LISTEN");

    char *unknown[] = {"serve", "--nope", "1"};
    assert_int_equal(parse(&cfg, err, 3, unknown), PARTD_CONFIG_ERROR);
    assert_non_null(strstr(err, "--nope"));
    char *missing[] = {"serve", "--workers"};
    assert_int_equal(parse(&cfg, err, 2, missing), PARTD_CONFIG_ERROR);
    char *zero[] = {"serve", "--workers", "0"};
    assert_int_equal(parse(&cfg, err, 3, zero), PARTD_CONFIG_ERROR);
    char *fmt[] = {"serve", "--log-format", "xml"};
    assert_int_equal(parse(&cfg, err, 3, fmt), PARTD_CONFIG_ERROR);
    char *half_tls[] = {"serve", "--tls-cert", "c.pem"};
    assert_int_equal(parse(&cfg, err, 3, half_tls), PARTD_CONFIG_ERROR);
    char *help[] = {"serve", "--help"};
    assert_int_equal(parse(&cfg, err, 2, help), PARTD_CONFIG_HELP);
}

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_are_random_hex),
        cmocka_unit_test(test_rfc3339),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_config_precedence_and_errors),
        cmocka_unit_test(test_job_document_embeds_summary_and_error_verbatim),
        cmocka_unit_test(test_metrics_text),
    };
    return cmocka_run_group_tests_name("daemon_util", tests, NULL, NULL);
}
