/*
 * body.c - request bodies: admission from the headers (type, coding,
 * declared length), collection under --max-body-bytes and the in-flight
 * budget (--max-inflight-bytes), and Content-Encoding decoding within the
 * same limits. See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_internal.h"
#include "partd.h"

/* Past --max-body-bytes a body is read and dropped up to this much (or the
 * limit, when larger) so that a client still sending gets its 413. */
#define DISCARD_MAX ((uint64_t)16 << 20)

int partd_http_is_json_type(const char *ct)
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
static int charge(partd_http *h, partd_req *rq, uint64_t bytes)
{
    uint64_t max = h->svc->cfg->max_inflight_bytes;
    uint_fast64_t cur = atomic_load(&h->inflight);
    do {
        if (cur + bytes > max)
            return 0;
    } while (!atomic_compare_exchange_weak(&h->inflight, &cur, cur + bytes));
    rq->charged += bytes;
    return 1;
}

static enum MHD_Result send_busy(struct MHD_Connection *c, partd_req *rq)
{
    return partd_http_send_problem(c, rq, 503, "busy", "Busy",
                                   "too many request bodies are being received at once; retry",
                                   NULL, MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

int partd_http_body_admit(struct MHD_Connection *c, partd_req *rq, partd_http *h,
                          enum MHD_Result *result)
{
    const partd_config *cfg = h->svc->cfg;
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!partd_http_is_json_type(ct)) {
        *result = partd_http_send_problem(c, rq, 415, "unsupported-media-type",
                                          "Unsupported media type",
                                          "the body must be application/json", NULL,
                                          MHD_HTTP_HEADER_ACCEPT, PARTD_HTTP_CT_JSON);
        return 1;
    }
    rq->body_coding = partd_coding_parse(
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING));
    if (rq->body_coding == PARTD_CODING_NONE) {
        /* RFC 9110 section 15.5.16: 415, saying which codings would do. */
        *result = partd_http_send_problem(c, rq, 415, "unsupported-content-encoding",
                                          "Unsupported content coding",
                                          "the body's Content-Encoding must be zstd, gzip or "
                                          "identity (one coding)",
                                          NULL, MHD_HTTP_HEADER_ACCEPT_ENCODING, "zstd, gzip");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl && partd_parse_u64(cl, UINT64_MAX, &declared) == PARTD_OK &&
        declared > cfg->max_body_bytes) {
        /* The caller answers 413 before a byte of the body is read. */
        rq->too_big = 1;
        return 0;
    }
    if (declared > 0) {
        if (!charge(h, rq, declared + 1)) {
            *result = send_busy(c, rq);
            return 1;
        }
        rq->body = malloc(declared + 1);
        if (!rq->body) {
            *result = partd_http_send_store_error(c, rq, PARTD_ENOMEM);
            return 1;
        }
        rq->cap = declared + 1;
    }
    rq->takes_body = 1;
    return 0;
}

int partd_http_body_take(partd_http *h, partd_req *rq, const char *data, size_t n)
{
    uint64_t max = h->svc->cfg->max_body_bytes;
    if (rq->body_lost) {
        rq->discarded += n;
        return rq->discarded <= (max > DISCARD_MAX ? max : DISCARD_MAX);
    }
    if (rq->too_big || rq->len + n > max) {
        rq->too_big = 1;
        rq->discarded += n;
        /* Dropped bytes are read (up to a bound) so that the client, still
         * sending, gets its 413; a chunked body that never ends is cut off
         * rather than read forever. */
        return rq->discarded <= (max > DISCARD_MAX ? max : DISCARD_MAX);
    }
    if (rq->len + n + 1 > rq->cap) {
        size_t cap = rq->cap ? rq->cap : 65536;
        while (cap < rq->len + n + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        if (cap > rq->charged && !charge(h, rq, cap - rq->charged))
            return 0; /* over the in-flight budget: the connection is closed */
        char *p = realloc(rq->body, cap);
        if (!p) {
            /* Read to the end (up to a bound), then answered 503. */
            rq->body_lost = 1;
            rq->discarded += n;
            return rq->discarded <= (max > DISCARD_MAX ? max : DISCARD_MAX);
        }
        rq->body = p;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
    rq->body[rq->len] = '\0';
    return 1;
}

/* The decoded body grows against --max-inflight-bytes like a plain one. */
typedef struct body_growth {
    partd_http *h;
    partd_req *rq;
    size_t charged;
} body_growth;

static int charge_growth(void *ctx, size_t new_cap)
{
    body_growth *g = ctx;
    if (new_cap <= g->charged)
        return 1;
    if (!charge(g->h, g->rq, new_cap - g->charged))
        return 0;
    g->charged = new_cap;
    return 1;
}

int partd_http_body_decode(struct MHD_Connection *c, partd_req *rq, partd_http *h,
                           enum MHD_Result *result)
{
    uint64_t max = h->svc->cfg->max_body_bytes;
    uint64_t compressed_charge = rq->charged;
    body_growth g = {h, rq, 0};
    partd_blob plain;
    int err = partd_decode(rq->body_coding, rq->body ? rq->body : "", rq->len, (size_t)max,
                           charge_growth, &g, &plain);
    char detail[160];
    const char *coding = partd_coding_name(rq->body_coding);
    switch (err) {
    case PARTD_OK:
        free(rq->body);
        rq->body = plain.data;
        rq->len = plain.len;
        rq->cap = plain.len + 1;
        atomic_fetch_sub(&h->inflight, compressed_charge);
        rq->charged -= compressed_charge;
        return 0;
    case PARTD_ETOOBIG:
        snprintf(detail, sizeof detail,
                 "decoded from %s, the body is larger than %llu bytes (--max-body-bytes)", coding,
                 (unsigned long long)max);
        *result = partd_http_send_problem(c, rq, 413, "body-too-large", "Body too large", detail,
                                          NULL, NULL, NULL);
        return 1;
    case PARTD_EMALFORMED:
        snprintf(detail, sizeof detail,
                 "the body is not a complete %s stream (Content-Encoding: %s)", coding, coding);
        *result = partd_http_send_problem(c, rq, 400, "undecodable-body", "Undecodable body",
                                          detail, NULL, NULL, NULL);
        return 1;
    default:
        *result = send_busy(c, rq);
        return 1;
    }
}
