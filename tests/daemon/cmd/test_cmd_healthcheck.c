/* test_cmd_healthcheck.c - daemon/cmd/cmd_healthcheck.c: `partd
 * healthcheck` exits 0 when GET URL answers 200 (a daemon started for the
 * test on 127.0.0.1:0), 1 for another status or no answer (a closed port),
 * 2 on bad usage. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "testutil.h"

#include "cmd/cmd_healthcheck.h"
#include "serve_child.h"

static char dir[64];
static tu_server server;

static int start_server(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/partd-hc-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char *argv[] = {"serve", "--listen", "127.0.0.1:0", "--data-dir", dir};
    int code = 0;
    return tu_server_start(&server, 5, argv, &code);
}

static int stop_server(void **state)
{
    (void)state;
    int rc = tu_server_stop(&server, NULL, NULL);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return rc == 0 && system(cmd) == 0 ? 0 : -1;
}

/* Runs the check with its stdout and stderr silenced. */
static int check(int argc, char **argv)
{
    fflush(stdout);
    fflush(stderr);
    int out = dup(STDOUT_FILENO), err = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
    int rc = partd_cmd_healthcheck(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    close(out);
    close(err);
    return rc;
}

static int check_url(const char *url)
{
    char *argv[] = {"healthcheck", "--url", (char *)url, "--timeout-ms", "30000"};
    return check(5, argv);
}

static void test_live_daemon_is_healthy(void **state)
{
    (void)state;
    char url[256];
    snprintf(url, sizeof url, "http://%s/livez", server.address);
    assert_int_equal(check_url(url), 0);
    snprintf(url, sizeof url, "http://%s/readyz", server.address);
    assert_int_equal(check_url(url), 0);
}

static void test_default_url_comes_from_partd_listen(void **state)
{
    (void)state;
    setenv("PARTD_LISTEN", server.address, 1);
    char *argv[] = {"healthcheck"};
    assert_int_equal(check(1, argv), 0);
    unsetenv("PARTD_LISTEN");
}

static void test_other_status_is_down(void **state)
{
    (void)state;
    char url[256];
    snprintf(url, sizeof url, "http://%s/no-such-route", server.address);
    assert_int_equal(check_url(url), 1);
}

static void test_closed_port_is_down(void **state)
{
    (void)state;
    /* A port that was just free on loopback: bound, then closed unused. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/livez", ntohs(a.sin_port));
    assert_int_equal(check_url(url), 1);
}

static void test_bad_usage(void **state)
{
    (void)state;
    assert_int_equal(check_url("https://127.0.0.1:1/livez"), 2);
    assert_int_equal(check_url("http://:80/livez"), 2);
    assert_int_equal(check_url("http://[::1/livez"), 2);
    assert_int_equal(check_url("http://127.0.0.1:12345678/livez"), 2); /* port too long */
    assert_int_equal(check_url("http://127.0.0.1:/livez"), 2);
    assert_int_equal(check_url("http://127.0.0.1:123456/livez"), 2); /* over 65535 */
    assert_int_equal(check_url("http://127.0.0.1:65536/livez"), 2);
    assert_int_equal(check_url("http://127.0.0.1:0/livez"), 2);
    assert_int_equal(check_url("http://127.0.0.1:8x/livez"), 2);
    char *zero[] = {"healthcheck", "--timeout-ms", "0"};
    assert_int_equal(check(3, zero), 2);
    char *unknown[] = {"healthcheck", "--verbose"};
    assert_int_equal(check(2, unknown), 2);
    char *help[] = {"healthcheck", "--help"};
    assert_int_equal(check(2, help), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_daemon_is_healthy),
        cmocka_unit_test(test_default_url_comes_from_partd_listen),
        cmocka_unit_test(test_other_status_is_down),
        cmocka_unit_test(test_closed_port_is_down),
        cmocka_unit_test(test_bad_usage),
    };
    return cmocka_run_group_tests_name("healthcheck", tests, start_server, stop_server);
}
