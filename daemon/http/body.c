/*
 * body.c - request bodies: admission from the headers (type, coding,
 * declared length), then each piece handed to the request's intake
 * (jobs/intake.h: decompressed, decoded and packed as it arrives) under
 * --max-body-bytes and the in-flight budget (--max-inflight-bytes), which
 * charges the packed body. See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/text.h"
#include "http_internal.h"
#include "partd/clock.h"
#include "partd/partd.h"

/* Past --max-body-bytes a body is read and dropped up to this much (or the
 * limit, when larger) so that a client still sending gets its 413. */
#define DISCARD_MAX ((uint64_t)16 << 20)

int partd__http_is_json_type(const char *ct)
{
    if (!ct)
        return 0;
    while (*ct == ' ')
        ct++;
    size_t n = strlen("application/json");
    if (strncasecmp(ct, "application/json", n) != 0)
        return 0;
    ct += n;
    while (*ct == ' ')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* Counts `bytes` more of body memory against --max-inflight-bytes; 0 when
 * that would go over. */
static int charge(partd_http *h, partd__http_req *rq, uint64_t bytes)
{
    uint64_t max = h->ctx->settings.max_inflight_bytes;
    uint_fast64_t cur = atomic_load(&h->inflight);
    do {
        if (cur + bytes > max)
            return 0;
    } while (!atomic_compare_exchange_weak(&h->inflight, &cur, cur + bytes));
    rq->charged += bytes;
    return 1;
}

/* A body's memory grows against --max-inflight-bytes (intake.h); a declared
 * length was charged whole at admission. */
static int charge_growth(void *ctx, size_t new_cap)
{
    partd__http_req *rq = ctx;
    if (new_cap <= rq->charged)
        return 1;
    if (charge(rq->http, rq, new_cap - rq->charged))
        return 1;
    rq->over_budget = 1;
    return 0;
}

enum MHD_Result partd__http_send_busy(struct MHD_Connection *c, partd__http_req *rq)
{
    return partd__http_send_problem(c, rq, 503, "busy", "Busy",
                                    "too many request bodies are being received at once; retry",
                                    NULL, MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

int partd__http_body_admit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h,
                           enum MHD_Result *result)
{
    const partd_http_settings *set = &h->ctx->settings;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!partd__http_is_json_type(ct)) {
        *result = partd__http_send_problem(c, rq, 415, "unsupported-media-type",
                                           "Unsupported media type",
                                           "the body must be application/json", NULL,
                                           MHD_HTTP_HEADER_ACCEPT, PARTD_HTTP_CT_JSON);
        return 1;
    }
    rq->body_coding = partd_encoding_parse(
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING));
    if (rq->body_coding == PARTD_CODING_NONE) {
        /* RFC 9110 section 15.5.16: 415, saying which codings would do. */
        *result = partd__http_send_problem(c, rq, 415, "unsupported-content-encoding",
                                           "Unsupported content coding",
                                           "the body's Content-Encoding must be zstd, gzip or "
                                           "identity (one coding)",
                                           NULL, MHD_HTTP_HEADER_ACCEPT_ENCODING, "zstd, gzip");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl && partd_text_parse_u64(cl, UINT64_MAX, &declared) == PARTD_OK &&
        declared > set->max_body_bytes) {
        /* The caller answers 413 before a byte of the body is read. */
        rq->too_big = 1;
        return 0;
    }
    if (declared > 0 && !charge(h, rq, declared + 1)) {
        *result = partd__http_send_busy(c, rq);
        return 1;
    }
    /* Only a request with an Idempotency-Key needs its body's digest. */
    int digest = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key") != NULL;
    /* The body's decoding has --request-timeout-s, as its arrival has
     * (partd_http_cut_slow): a body that arrived in time but expands to
     * more than can be decoded in time is stopped, not decoded to its end
     * by a thread nobody waits for. */
    partd_cancel_init(&rq->cancel, (int64_t)set->request_timeout_s * 1000);
    rq->decode_limits = h->ctx->limits;
    rq->decode_limits.cancel = &rq->cancel;
    partd_intake_limits lim = {set->max_body_bytes, &rq->decode_limits, charge_growth, rq, digest};
    rq->http = h;
    rq->intake = partd_intake_new(rq->body_coding, &lim);
    if (!rq->intake) {
        *result = partd__http_send_store_error(c, rq, PARTD_ENOMEM);
        return 1;
    }
    rq->takes_body = 1; /* and watched (server.c): a cut or SIGTERM stops it */
    return 0;
}

int partd__http_body_stopped(partd_http *h, partd__http_req *rq, int rc)
{
    /* A cut raises the flag (ECANCELLED) only once the deadline has passed:
     * a timeout either way. */
    int why = rc == PARTD_ETIMEOUT || atomic_load(&rq->stop_why) == PARTD_HTTP_STOP_TIMEOUT
                  ? PARTD_HTTP_STOP_TIMEOUT
                  : PARTD_HTTP_STOP_SHUTDOWN;
    if (!rq->stop_counted) {
        rq->stop_counted = 1;
        atomic_fetch_add(&h->ctx->metrics->decodes_stopped[why == PARTD_HTTP_STOP_TIMEOUT
                                                               ? PARTD_METRICS_STOP_TIMEOUT
                                                               : PARTD_METRICS_STOP_SHUTDOWN],
                         1);
        partd_log_field f[] = {
            PARTD_LF_S("reason", why == PARTD_HTTP_STOP_TIMEOUT ? "timeout" : "shutdown"),
            PARTD_LF_S("path", rq->path),
            PARTD_LF_N("body_bytes", rq->intake ? partd_intake_bytes(rq->intake) : 0),
            PARTD_LF_N("duration_ms", (double)(partd_clock_ns() - rq->start_ns) / 1e6),
            PARTD_LF_END};
        partd_log("warn", "decode-stopped", f);
    }
    return why;
}

enum MHD_Result partd__http_send_stopped(struct MHD_Connection *c, partd__http_req *rq,
                                         partd_http *h, int rc)
{
    if (partd__http_body_stopped(h, rq, rc) == PARTD_HTTP_STOP_TIMEOUT) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "the request was not received and decoded within %llu s (--request-timeout-s)",
                 (unsigned long long)h->ctx->settings.request_timeout_s);
        /* RFC 9110 section 15.5.9: the server closes the connection. */
        return partd__http_send_problem(c, rq, 408, "request-timeout", "Request timeout", detail,
                                        NULL, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    return partd__http_send_problem(c, rq, 503, "request-cancelled", "Request cancelled",
                                    "the server is shutting down; decoding the request was "
                                    "stopped",
                                    NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
}

int partd__http_body_take(partd_http *h, partd__http_req *rq, const char *data, size_t n)
{
    uint64_t max = h->ctx->settings.max_body_bytes;
    if (!rq->too_big && rq->intake) {
        int rc = partd_intake_take(rq->intake, data, n);
        if (rc == PARTD_OK)
            return 1;
        if (rc == PARTD_ECANCELLED || rc == PARTD_ETIMEOUT)
            partd__http_body_stopped(h, rq, rc);
    }
    /* Refused (too large, undecodable, no memory): the rest is read and
     * dropped, up to a bound, so that the client, still sending, gets its
     * answer; a chunked body that never ends is cut off rather than read
     * forever. */
    rq->discarded += n;
    return rq->discarded <= (max > DISCARD_MAX ? max : DISCARD_MAX);
}
