/*
 * server.c - the HTTP server core: the libmicrohttpd daemon (start, stop,
 * TLS files), connection tracking and cutting off slow senders, and a
 * request's life. See http.h and http_internal.h.
 *
 * A request's life: the URI log callback allocates its context (start time,
 * path); the access handler routes it through the route table on its first
 * call and answers at once when headers already decide (401, 404, 405, and
 * the route's own admission: 413, 415, 503), otherwise it collects the body
 * and lets the route's handler answer on the last call; the completion
 * callback logs the line and records metrics.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "http_internal.h"
#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/partd.h"

/* After a body this large, hand freed memory back to the system. */
#define TRIM_AFTER_BODY_BYTES (1u << 20)

/* ---- slow senders --------------------------------------------------------- */

static void set_phase(partd_http *h, partd__http_conn *cr, partd__http_conn_phase phase)
{
    if (!cr)
        return;
    pthread_mutex_lock(&h->conns_lock);
    cr->phase = phase;
    cr->phase_start_ns = partd_clock_ns();
    pthread_mutex_unlock(&h->conns_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    partd_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        partd__http_conn *cr = ci ? calloc(1, sizeof *cr) : NULL;
        *socket_context = cr;
        if (!cr)
            return;
        cr->fd = ci->connect_fd;
        cr->phase = PARTD_HTTP_CONN_HEADERS;
        cr->phase_start_ns = partd_clock_ns();
        pthread_mutex_lock(&h->conns_lock);
        cr->next = h->conns;
        if (h->conns)
            h->conns->prev = cr;
        h->conns = cr;
        pthread_mutex_unlock(&h->conns_lock);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        partd__http_conn *cr = *socket_context;
        if (!cr)
            return;
        /* libmicrohttpd closes the socket only after this returns, so the
         * sweep never shuts down a reused descriptor. */
        pthread_mutex_lock(&h->conns_lock);
        if (cr->prev)
            cr->prev->next = cr->next;
        else
            h->conns = cr->next;
        if (cr->next)
            cr->next->prev = cr->prev;
        pthread_mutex_unlock(&h->conns_lock);
        free(cr);
        *socket_context = NULL;
    }
}

/* Stops rq's decoding (the caller holds conns_lock, so rq is alive): the
 * reason first, then the flag the decoder looks at. */
static void stop_decoding(partd__http_req *rq, int why)
{
    int none = PARTD_HTTP_STOP_NONE;
    atomic_compare_exchange_strong(&rq->stop_why, &none, why);
    atomic_store(&rq->cancel.cancelled, 1);
}

/* Registers rq (its body about to be decoded) with its connection, so
 * that a cut or SIGTERM stops its decoding; raised at once when the server
 * is already draining. The completion callback ends it. */
static void watch(partd_http *h, partd__http_req *rq)
{
    if (!rq->conn)
        return; /* untracked (no memory): its deadline alone stops it */
    pthread_mutex_lock(&h->conns_lock);
    rq->conn->decoding = rq;
    /* After the registration: a SIGTERM that walked the connections before
     * it has set the phase already. */
    if (atomic_load(&h->ctx->phase) == PARTD_HTTP_DRAINING)
        stop_decoding(rq, PARTD_HTTP_STOP_SHUTDOWN);
    pthread_mutex_unlock(&h->conns_lock);
}

void partd_http_stop_decoding(partd_http *h)
{
    if (!h)
        return;
    unsigned n = 0;
    pthread_mutex_lock(&h->conns_lock);
    for (partd__http_conn *cr = h->conns; cr; cr = cr->next)
        if (cr->decoding) {
            stop_decoding(cr->decoding, PARTD_HTTP_STOP_SHUTDOWN);
            n++;
        }
    pthread_mutex_unlock(&h->conns_lock);
    if (n)
        partd_log_msg("info", "http", "stopping the decoding of %u request body(ies)", n);
}

void partd_http_cut_slow(partd_http *h)
{
    int64_t now = partd_clock_ns();
    int64_t header_ns = (int64_t)h->ctx->settings.header_timeout_s * 1000000000;
    int64_t request_ns = (int64_t)h->ctx->settings.request_timeout_s * 1000000000;
    unsigned cut = 0;
    pthread_mutex_lock(&h->conns_lock);
    for (partd__http_conn *cr = h->conns; cr; cr = cr->next) {
        int64_t limit = cr->phase == PARTD_HTTP_CONN_HEADERS ? header_ns
                        : cr->phase == PARTD_HTTP_CONN_BODY  ? request_ns
                                                        : 0;
        if (!cr->cut && limit && now - cr->phase_start_ns > limit) {
            /* libmicrohttpd sees the connection fail and closes it. */
            shutdown(cr->fd, SHUT_RDWR);
            cr->cut = 1;
            /* Its thread may be busy decoding what it already received. */
            if (cr->decoding)
                stop_decoding(cr->decoding, PARTD_HTTP_STOP_TIMEOUT);
            cut++;
        }
    }
    pthread_mutex_unlock(&h->conns_lock);
    if (cut)
        partd_log_msg("warn", "http", "cut off %u connection(s) too slow sending a request", cut);
}

/* ---- the access handler ------------------------------------------------- */

/* First call for a request: everything the headers alone decide. Returns
 * 1 when an answer was queued (or the connection must close). */
static int first_call(struct MHD_Connection *c, partd__http_req *rq, partd_http *h, const char *url,
                      const char *method, const char *version, enum MHD_Result *result)
{
    rq->routed = 1;
    partd__http_match m;
    partd__http_route_match(url, method, &m);
    rq->route = m.metric;
    memcpy(rq->id, m.id, sizeof rq->id);
    snprintf(rq->method, sizeof rq->method, "%s",
             strlen(method) < sizeof rq->method ? method : "other");
    /* RFC 9112 section 3.2: an HTTP/1.1 request without Host is answered
     * 400 (HTTP/1.0 had no Host rule); libmicrohttpd lets it through. */
    if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 &&
        !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)) {
        *result = partd__http_send_problem(c, rq, 400, "missing-host", "Missing Host header",
                                           "an HTTP/1.1 request must carry a Host header", NULL,
                                           NULL, NULL);
        return 1;
    }
    if (strncmp(url, "/v1/", 4) == 0 &&
        !partd__http_bearer_ok(h->ctx, MHD_lookup_connection_value(
                                          c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
        *result = partd__http_send_problem(c, rq, 401, "unauthorized", "Unauthorized",
                                           "a valid bearer token is required", NULL,
                                           MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                           "Bearer realm=\"partd\"");
        return 1;
    }
    if (!m.pattern) {
        *result = partd__http_send_not_found(c, rq);
        return 1;
    }
    if (!m.entry) {
        char allow[64], detail[96];
        partd__http_allow(m.pattern, allow, sizeof allow);
        snprintf(detail, sizeof detail, "%s is not allowed here; allowed: %s", method, allow);
        *result = partd__http_send_problem(c, rq, 405, "method-not-allowed", "Method not allowed",
                                           detail, NULL, MHD_HTTP_HEADER_ALLOW, allow);
        return 1;
    }
    rq->entry = m.entry;
    return m.entry->admit ? m.entry->admit(c, rq, h, result) : 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    partd_http *h = cls;
    partd__http_req *rq = *con_cls;
    if (!rq) /* the URI callback failed to allocate */
        return h->out_of_memory ? MHD_queue_response(c, 503, h->out_of_memory) : MHD_NO;
    if (rq->status)
        return MHD_YES; /* answered already; libmicrohttpd drains or closes */
    if (!rq->routed) {
        enum MHD_Result result = MHD_YES;
        if (first_call(c, rq, h, url, method, version, &result)) {
            set_phase(h, rq->conn, PARTD_HTTP_CONN_ANSWERING);
            return result;
        }
        if (rq->takes_body)
            watch(h, rq);
        set_phase(h, rq->conn, PARTD_HTTP_CONN_BODY);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (!rq->takes_body)
            return MHD_YES; /* bodies of routes that take none are ignored */
        /* libmicrohttpd cannot answer before the body is read: past the
         * cap the rest is counted and dropped, and 413 goes out at the end. */
        if (!partd__http_body_take(h, rq, upload_data, n))
            return MHD_NO;
        return MHD_YES;
    }
    set_phase(h, rq->conn, PARTD_HTTP_CONN_ANSWERING);
    return rq->entry->handler(c, rq, h);
}

/* ---- a request's context ------------------------------------------------ */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    partd_http *h = cls;
    partd__http_req *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->out_of_memory = h->out_of_memory;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    rq->conn = ci ? ci->socket_context : NULL;
    rq->start_ns = partd_clock_ns();
    size_t n = strcspn(uri, "?");
    if (n >= sizeof rq->path)
        n = sizeof rq->path - 1;
    memcpy(rq->path, uri, n);
    rq->path[n] = '\0';
    return rq;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    partd_http *h = cls;
    partd__http_req *rq = *con_cls;
    if (!rq)
        return;
    *con_cls = NULL;
    /* A kept-alive connection's next request starts its clock now, and
     * nothing may reach rq through its connection once it is freed. */
    if (rq->conn) {
        pthread_mutex_lock(&h->conns_lock);
        if (rq->conn->decoding == rq)
            rq->conn->decoding = NULL;
        pthread_mutex_unlock(&h->conns_lock);
    }
    set_phase(h, rq->conn, PARTD_HTTP_CONN_HEADERS);
    double secs = (double)(partd_clock_ns() - rq->start_ns) / 1e9;
    (void)c;
    const char *method = rq->method[0] ? rq->method : "-";
    uint64_t body_bytes = rq->intake ? partd_intake_bytes(rq->intake) : rq->discarded;
    partd_metrics_http(h->ctx->metrics, method, rq->route, rq->status, secs);
    static const char *const ends[] = {"ok", "error", "timeout", "shutdown", "read_error",
                                       "client_abort"};
    partd_log_field f[] = {
        PARTD_LF_S("method", method),
        PARTD_LF_S("path", rq->path),
        PARTD_LF_S("route", partd_metrics_route_label(rq->route)),
        PARTD_LF_N("status", rq->status),
        PARTD_LF_N("duration_ms", secs * 1000.0),
        PARTD_LF_N("body_bytes", body_bytes),
        (unsigned)toe < 6 && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK
            ? PARTD_LF_S("end", ends[toe])
            : PARTD_LF_END,
        rq->id[0] ? PARTD_LF_S("id", rq->id) : PARTD_LF_END,
        PARTD_LF_END};
    /* Empty slots in the middle end the list early; move id forward. */
    if (f[6].key == NULL && f[7].key) {
        f[6] = f[7];
        f[7] = PARTD_LF_END;
    }
    partd_log("info", "request", f);
    atomic_fetch_sub(&h->inflight, rq->charged);
    partd_intake_free(rq->intake);
    /* Decoding a large body leaves many small blocks free but resident in
     * this thread's malloc arena; hand them back so that hostile bodies do
     * not ratchet the resident size up. */
    if (body_bytes >= TRIM_AFTER_BODY_BYTES)
        malloc_trim(0);
    free(rq);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    partd_log_msg("warn", "http", "%s", msg);
}

/* ---- start and stop ----------------------------------------------------- */

/* A PEM file for --tls-cert/--tls-key, NUL-terminated as libmicrohttpd
 * wants it. */
static char *read_pem(const char *path, char *err, size_t cap)
{
    char *buf;
    size_t len;
    if (partd_fs_read_file(path, (size_t)1 << 24, &buf, &len) != PARTD_OK) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    return buf;
}

partd_http *partd_http_start(partd_http_context *ctx, char *err, size_t cap, int *exit_code)
{
    const partd_http_settings *set = &ctx->settings;
    const char *why;
    if (partd__http_mhd_load(&why) != PARTD_OK) {
        snprintf(err, cap, "%s", why);
        *exit_code = 70;
        return NULL;
    }
    partd_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, cap, "out of memory");
        *exit_code = 70;
        return NULL;
    }
    h->ctx = ctx;
    h->listen_fd = -1;
    pthread_mutex_init(&h->conns_lock, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (set->tls_cert) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, cap, "this libmicrohttpd has no TLS support");
            *exit_code = 70;
            goto fail;
        }
        h->tls_cert = read_pem(set->tls_cert, err, cap);
        h->tls_key = h->tls_cert ? read_pem(set->tls_key, err, cap) : NULL;
        if (!h->tls_key) {
            *exit_code = 66;
            goto fail;
        }
        flags |= MHD_USE_TLS;
    }
    int is_v6 = 0;
    h->listen_fd =
        partd__http_listen(set->listen, h->address, sizeof h->address, &is_v6, err, cap);
    if (h->listen_fd < 0) {
        *exit_code = 71;
        goto fail;
    }
    if (is_v6)
        flags |= MHD_USE_IPv6;
    partd__http_ops_prepare(h);
    partd__http_console_prepare(h);
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, h, /* first, to catch every message */
        MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)set->http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)set->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)set->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)set->max_connections_per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)set->conn_memory_bytes,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_ARRAY, set->tls_cert ? tls : tls + 2,
        MHD_OPTION_END);
    if (!h->daemon || !h->livez || !h->version || !h->console) {
        snprintf(err, cap, "cannot start the HTTP server on %s%s", h->address,
                 set->tls_cert ? " (check the TLS certificate and key)" : "");
        *exit_code = set->tls_cert ? 66 : 71;
        goto fail;
    }
    return h;
fail:
    partd_http_stop(h);
    return NULL;
}

const char *partd_http_address(const partd_http *h)
{
    return h->address;
}

void partd_http_stop(partd_http *h)
{
    if (!h)
        return;
    if (h->daemon) {
        /* A thread inside a body's decoding would hold the stop up until
         * the body's end. */
        partd_http_stop_decoding(h);
        MHD_stop_daemon(h->daemon); /* closes the listening socket too */
        h->listen_fd = -1;
    }
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    partd__http_ops_release(h);
    partd__http_console_release(h);
    free(h->tls_cert);
    free(h->tls_key);
    pthread_mutex_destroy(&h->conns_lock);
    free(h);
}
