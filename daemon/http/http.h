/*
 * http.h - the HTTP API on libmicrohttpd.
 *
 * An internal thread pool with epoll (--http-threads) answers every route of
 * the contract's HTTP API. Limits: --conn-timeout-s, --max-connections,
 * --max-connections-per-ip, --conn-memory-bytes, --max-body-bytes (413 from
 * Content-Length before the body is read, and by counting for chunked
 * bodies). TLS through libmicrohttpd's GnuTLS support when --tls-cert and
 * --tls-key are set. One log line and one metrics sample per request.
 * Routes are the table in routes.c; http_internal.h lists the files of
 * daemon/http/ and what each owns.
 *
 * Errors: the daemon's convention is PARTD_OK or a negative PARTD_E* code
 * (lib/partd.h), with an error buffer filled where the caller needs the
 * reason. partd_http_start, which returns the server, returns NULL instead,
 * with a sentence in err and an exit code (listen failure 71, unreadable
 * TLS files 66, TLS unsupported 70). The other functions cannot fail.
 */
#ifndef PARTD_DAEMON_HTTP_H
#define PARTD_DAEMON_HTTP_H

#include <stddef.h>

#include "service.h"

typedef struct partd_http partd_http;

partd_http *partd_http_start(partd_service *svc, char *err, size_t errcap, int *exit_code);

/* The address actually bound, e.g. "127.0.0.1:43127" or "[::1]:8080". */
const char *partd_http_address(const partd_http *h);

/* Cuts off connections that are too slow delivering a request: its line and
 * headers within --header-timeout-s, its body within --request-timeout-s
 * (libmicrohttpd's own timeout only catches idle connections, not ones that
 * trickle a byte at a time). Called periodically from the loop thread. */
void partd_http_cut_slow(partd_http *h);

/* Closes the listening socket and joins the HTTP threads. */
void partd_http_stop(partd_http *h);

#endif
