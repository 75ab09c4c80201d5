/* test_config.c - daemon/serve/config.c: flags over environment over
 * defaults, the first bad value named in the error, and the HTTP server's
 * settings taken from them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "http/http.h"
#include "serve/config.h"

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

static void test_config_out_of_range_names_the_flag(void **state)
{
    (void)state;
    partd_config cfg;
    char err[512];
    char *huge[] = {"serve", "--queue-max", "99999999999999999999999"};
    assert_int_equal(parse(&cfg, err, 3, huge), PARTD_CONFIG_ERROR);
    assert_non_null(strstr(err, "--queue-max"));
    char *neg[] = {"serve", "--workers=-1"};
    assert_int_equal(parse(&cfg, err, 2, neg), PARTD_CONFIG_ERROR);
    assert_non_null(strstr(err, "--workers"));
}

static void test_config_help_text_lists_flags(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    partd_config_help(f);
    fclose(f);
    assert_non_null(strstr(text, "--queue-max"));
    assert_non_null(strstr(text, "--data-dir"));
    free(text);
}

/* Every setting the HTTP server reads is the one given for it. */
static void test_config_http_settings(void **state)
{
    (void)state;
    partd_config cfg;
    char err[512];
    char *argv[] = {"serve", "--listen", "[::1]:0", "--data-dir", "/tmp/d", "--tls-cert", "c.pem",
                    "--tls-key", "k.pem", "--http-threads", "3", "--conn-timeout-s", "4",
                    "--header-timeout-s", "5", "--request-timeout-s", "6",
                    "--max-connections", "7", "--max-connections-per-ip", "8",
                    "--conn-memory-bytes", "9000", "--max-body-bytes", "10",
                    "--max-inflight-bytes", "11", "--queue-max", "12"};
    assert_int_equal(parse(&cfg, err, (int)(sizeof argv / sizeof *argv), argv), PARTD_CONFIG_OK);
    partd_http_settings h;
    memset(&h, 0xff, sizeof h);
    partd_config_http(&cfg, &h);
    assert_string_equal(h.listen, "[::1]:0");
    assert_string_equal(h.data_dir, "/tmp/d");
    assert_string_equal(h.tls_cert, "c.pem");
    assert_string_equal(h.tls_key, "k.pem");
    assert_int_equal(h.http_threads, 3);
    assert_int_equal(h.conn_timeout_s, 4);
    assert_int_equal(h.header_timeout_s, 5);
    assert_int_equal(h.request_timeout_s, 6);
    assert_int_equal(h.max_connections, 7);
    assert_int_equal(h.max_connections_per_ip, 8);
    assert_int_equal(h.conn_memory_bytes, 9000);
    assert_int_equal(h.max_body_bytes, 10);
    assert_int_equal(h.max_inflight_bytes, 11);
    assert_int_equal(h.queue_max, 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_precedence_and_errors),
        cmocka_unit_test(test_config_out_of_range_names_the_flag),
        cmocka_unit_test(test_config_help_text_lists_flags),
        cmocka_unit_test(test_config_http_settings),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
