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
 * The server answers from a partd_http_context that its owner (serve.c)
 * fills before partd_http_start: the settings it reads, the store, cache,
 * job engine and metrics it works with, and the lifecycle phase. The
 * context is borrowed until partd_http_stop returns; only `phase` changes
 * while the server runs.
 *
 * Errors: the daemon's convention is PARTD_OK or a negative PARTD_E* code
 * (partd/partd.h), with an error buffer filled where the caller needs the
 * reason. partd_http_start, which returns the server, returns NULL instead,
 * with a sentence in err and an exit code (listen failure 71, unreadable
 * TLS files 66, TLS unsupported 70). The other functions cannot fail.
 */
#ifndef PARTD_DAEMON_HTTP_H
#define PARTD_DAEMON_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/metrics.h"
#include "partd/decode.h"

struct partd_store;
struct partd_cache;
struct partd_jobs;

typedef struct partd_http partd_http;

/* The daemon's lifecycle as the API answers it. */
typedef enum partd_http_phase {
    PARTD_HTTP_STARTING = 0, /* recovering: /readyz 503, no new jobs */
    PARTD_HTTP_READY,
    PARTD_HTTP_DRAINING      /* SIGTERM seen: /readyz 503, no new jobs */
} partd_http_phase;

/* The settings the server reads, as `partd serve` takes them (config.h
 * fills them from its own: partd_config_http). */
typedef struct partd_http_settings {
    const char *listen;          /* ADDR:PORT, [v6]:PORT */
    const char *data_dir;        /* whose free space /readyz checks */
    const char *tls_cert;        /* PEM files; NULL = plain HTTP */
    const char *tls_key;
    uint64_t http_threads;       /* libmicrohttpd thread pool size */
    uint64_t conn_timeout_s;     /* idle connection cut-off */
    uint64_t header_timeout_s;   /* request line + headers must arrive within */
    uint64_t request_timeout_s;  /* headers + body must arrive within */
    uint64_t max_connections;
    uint64_t max_connections_per_ip;
    uint64_t conn_memory_bytes;  /* libmicrohttpd per-connection pool */
    uint64_t max_body_bytes;
    uint64_t max_inflight_bytes; /* all request bodies being received */
    uint64_t queue_max;          /* jobs waiting before 429 (named in it) */
} partd_http_settings;

/* What the server answers from; see above. */
typedef struct partd_http_context {
    partd_http_settings settings;
    struct partd_store *store;
    struct partd_cache *cache;
    struct partd_jobs *jobs;
    partd_metrics *metrics;
    partd_decode_limits limits;  /* a request's model */
    const char *token;           /* bearer token, NULL when auth is off */
    size_t token_len;
    atomic_int phase;            /* partd_http_phase */
} partd_http_context;

partd_http *partd_http_start(partd_http_context *ctx, char *err, size_t errcap,
                             int *exit_code);

/* The address actually bound, e.g. "127.0.0.1:43127" or "[::1]:8080". */
const char *partd_http_address(const partd_http *h);

/* Cuts off connections that are too slow delivering a request: its line and
 * headers within --header-timeout-s, its body within --request-timeout-s
 * (libmicrohttpd's own timeout only catches idle connections, not ones that
 * trickle a byte at a time). Called periodically from the loop thread. */
void partd_http_cut_slow(partd_http *h);

/* SIGTERM: every request body being decoded stops decoding (answered 503
 * request-cancelled when its connection is still there), so that no HTTP
 * thread holds the shutdown up. Any thread; NULL is a no-op. */
void partd_http_stop_decoding(partd_http *h);

/* Closes the listening socket and joins the HTTP threads. */
void partd_http_stop(partd_http *h);

#endif
