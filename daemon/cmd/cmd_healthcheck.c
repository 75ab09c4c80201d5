/*
 * cmd_healthcheck.c - `partd healthcheck [--url URL] [--timeout-ms N]`:
 * exit 0 when GET URL answers 200 (for Docker's HEALTHCHECK); see
 * cmd_healthcheck.h. A base URL (http://HOST:PORT or one whose path ends
 * in '/') checks its /livez. A plain socket, no HTTP library: the check
 * must work in a minimal image. Only http:// URLs.
 * The default URL comes from PARTD_LISTEN (as `partd serve` would use it),
 * else http://127.0.0.1:8080/livez.
 */
#include "cmd_healthcheck.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/text.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/partd.h"

#define HC_OK 0
#define HC_DOWN 1
#define HC_USAGE 2

typedef struct url_parts {
    char host[256];
    char port[8];
    char path[1024];
} url_parts;

static int parse_url(const char *url, url_parts *u)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *p = url + 7, *end;
    const char *path = strchr(p, '/');
    if (!path)
        path = p + strlen(p);
    if (*p == '[') {
        end = memchr(p, ']', (size_t)(path - p));
        if (!end || (size_t)(end - p - 1) >= sizeof u->host)
            return -1;
        memcpy(u->host, p + 1, (size_t)(end - p - 1));
        u->host[end - p - 1] = '\0';
        end++;
    } else {
        end = p;
        while (end < path && *end != ':')
            end++;
        if ((size_t)(end - p) >= sizeof u->host || end == p)
            return -1;
        memcpy(u->host, p, (size_t)(end - p));
        u->host[end - p] = '\0';
    }
    if (*end == ':') {
        size_t n = (size_t)(path - end - 1);
        if (n == 0 || n >= sizeof u->port)
            return -1;
        memcpy(u->port, end + 1, n);
        u->port[n] = '\0';
        uint64_t port = 0;
        if (partd_text_parse_u64(u->port, 65535, &port) != PARTD_OK || port == 0)
            return -1;
    } else if (end == path) {
        snprintf(u->port, sizeof u->port, "80");
    } else {
        return -1;
    }
    /* A base URL (no path, or one ending in '/') means its /livez. */
    size_t plen = strlen(path);
    const char *livez = plen == 0 || path[plen - 1] == '/' ? "livez" : "";
    if (plen + strlen(livez) + 1 >= sizeof u->path)
        return -1;
    snprintf(u->path, sizeof u->path, "%s%s%s", plen ? "" : "/", path, livez);
    return 0;
}

static int64_t remaining_ms(int64_t deadline_ns)
{
    int64_t left = (deadline_ns - partd_clock_ns()) / 1000000;
    return left > 0 ? left : 0;
}

static int wait_fd(int fd, short events, int64_t deadline_ns)
{
    struct pollfd pfd = {fd, events, 0};
    for (;;) {
        int n = poll(&pfd, 1, (int)remaining_ms(deadline_ns));
        if (n > 0)
            return 0;
        if (n == 0 || errno != EINTR)
            return -1;
    }
}

static int connect_to(const url_parts *u, int64_t deadline_ns)
{
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(u->host, u->port, &hints, &ai) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            int soerr = 0;
            socklen_t len = sizeof soerr;
            if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, deadline_ns) != 0 ||
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
                close(fd);
                fd = -1;
            }
        }
    }
    freeaddrinfo(ai);
    return fd;
}

/* The status code of GET url, or -1. */
static int http_status(const url_parts *u, int64_t deadline_ns)
{
    int fd = connect_to(u, deadline_ns);
    if (fd < 0)
        return -1;
    char req[1536];
    int n = snprintf(req, sizeof req,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: partd-healthcheck\r\n"
                     "Connection: close\r\n\r\n", u->path, u->host);
    size_t sent = 0;
    while (sent < (size_t)n) {
        if (wait_fd(fd, POLLOUT, deadline_ns) != 0)
            break;
        ssize_t w = send(fd, req + sent, (size_t)n - sent, MSG_NOSIGNAL);
        if (w <= 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (w > 0)
            sent += (size_t)w;
    }
    char resp[64];
    size_t got = 0;
    while (sent == (size_t)n && got < sizeof resp - 1 && !memchr(resp, '\n', got)) {
        if (wait_fd(fd, POLLIN, deadline_ns) != 0)
            break;
        ssize_t r = recv(fd, resp + got, sizeof resp - 1 - got, 0);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    resp[got] = '\0';
    int major, minor, status;
    if (sscanf(resp, "HTTP/%d.%d %d", &major, &minor, &status) != 3)
        return -1;
    return status;
}

int partd_cmd_healthcheck(int argc, char **argv)
{
    char fallback[512];
    const char *listen = getenv("PARTD_LISTEN");
    snprintf(fallback, sizeof fallback, "http://%s/livez", listen ? listen : "127.0.0.1:8080");
    const char *url = fallback;
    uint64_t timeout_ms = 5000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--url") == 0 && i + 1 < argc) {
            url = argv[++i];
        } else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc &&
                   partd_text_parse_u64(argv[i + 1], 3600000, &timeout_ms) == PARTD_OK &&
                   timeout_ms > 0) {
            i++;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: partd healthcheck [--url URL] [--timeout-ms N]\n"
                   "  exit 0 when GET URL answers 200, else 1.\n"
                   "  URL default: http://$PARTD_LISTEN/livez or http://127.0.0.1:8080/livez;\n"
                   "  A base URL (http://HOST:PORT, or a path ending in /) checks its /livez.\n"
                   "  http:// only. --timeout-ms default 5000.\n");
            return HC_OK;
        } else {
            fprintf(stderr, "partd healthcheck: bad argument '%s' (see --help)\n", argv[i]);
            return HC_USAGE;
        }
    }
    url_parts u;
    if (parse_url(url, &u) != 0) {
        fprintf(stderr, "partd healthcheck: '%s' is not an http://HOST[:PORT]/PATH URL\n", url);
        return HC_USAGE;
    }
    int64_t deadline = partd_clock_ns() + (int64_t)timeout_ms * 1000000;
    int status = http_status(&u, deadline);
    if (status == 200)
        return HC_OK;
    if (status < 0)
        fprintf(stderr, "partd healthcheck: no HTTP answer from %s\n", url);
    else
        fprintf(stderr, "partd healthcheck: %s answered %d\n", url, status);
    return HC_DOWN;
}
