/*
 * listener.c - the listening socket: --listen parsed as ADDRESS:PORT or
 * [IPv6]:PORT, bound (IPv6 sockets v6-only), listening and non-blocking,
 * and the address actually bound (port 0 picks a free one). See
 * http_internal.h.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/text.h"
#include "http_internal.h"
#include "partd/partd.h"

int partd__http_listen(const char *listen_addr, char *bound, size_t bound_cap, int *is_v6,
                       char *err, size_t cap)
{
    char host[256];
    const char *port;
    if (listen_addr[0] == '[') {
        const char *close = strchr(listen_addr, ']');
        if (!close || close[1] != ':' || (size_t)(close - listen_addr - 1) >= sizeof host) {
            snprintf(err, cap, "--listen '%s': expected [IPv6]:PORT", listen_addr);
            return -1;
        }
        memcpy(host, listen_addr + 1, (size_t)(close - listen_addr - 1));
        host[close - listen_addr - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(listen_addr, ':');
        if (!colon || (size_t)(colon - listen_addr) >= sizeof host) {
            snprintf(err, cap, "--listen '%s': expected ADDRESS:PORT", listen_addr);
            return -1;
        }
        memcpy(host, listen_addr, (size_t)(colon - listen_addr));
        host[colon - listen_addr] = '\0';
        port = colon + 1;
    }
    uint64_t port_num;
    if (partd_text_parse_u64(port, 65535, &port_num) != PARTD_OK) {
        snprintf(err, cap, "--listen '%s': bad port", listen_addr);
        return -1;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
    if (gai != 0) {
        snprintf(err, cap, "--listen '%s': %s", listen_addr, gai_strerror(gai));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
        snprintf(err, cap, "cannot listen on %s: %s", listen_addr, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    *is_v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char numeric[INET6_ADDRSTRLEN] = "?";
    int actual_port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &s6->sin6_addr, numeric, sizeof numeric);
            actual_port = ntohs(s6->sin6_port);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &s4->sin_addr, numeric, sizeof numeric);
            actual_port = ntohs(s4->sin_port);
        }
    }
    snprintf(bound, bound_cap, *is_v6 ? "[%s]:%d" : "%s:%d", numeric, actual_port);
    return fd;
}
