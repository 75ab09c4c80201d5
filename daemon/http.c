/*
 * http.c - routes, limits and responses of the HTTP API. See http.h.
 *
 * A request's life: the URI log callback allocates its context (start time,
 * path); the access handler routes it on its first call and answers at once
 * when headers already decide (401, 404, 405, 413, 415, 503), otherwise it
 * collects the body and answers on the last call; the completion callback
 * logs the line and records metrics.
 */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cancel.h"
#include "decode.h"
#include "encoding.h"
#include "hash.h"
#include "jobs.h"
#include "log.h"
#include "partd.h"
#include "problem.h"
#include "util.h"

#ifndef PARTD_BUILD
#define PARTD_BUILD "unknown"
#endif

#define CT_JSON "application/json"
#define CT_PROBLEM "application/problem+json"
#define LIST_DEFAULT_LIMIT 50
#define LIST_MAX_LIMIT 1000
#define IDEM_KEY_MAX 255
#define DISCARD_MAX ((uint64_t)16 << 20)
#define TRIM_AFTER_BODY_BYTES (1u << 20)
/* Below this much free space in the data directory /readyz says 503. */
#define READY_MIN_FREE_BYTES ((uint64_t)16 << 20)

/* One per TCP connection, for the slow-sender deadlines. */
typedef enum { PHASE_HEADERS, PHASE_BODY, PHASE_ANSWERING } conn_phase;

typedef struct conn_rec {
    int fd;
    conn_phase phase;
    int64_t phase_start_ns;
    int cut;
    struct conn_rec *prev, *next;
} conn_rec;

struct partd_http {
    partd_service *svc;
    pthread_mutex_t conns_lock;
    conn_rec *conns;
    struct MHD_Daemon *daemon;
    int listen_fd;
    char address[128];
    char *tls_cert, *tls_key;
    struct MHD_Response *livez;
    struct MHD_Response *version;
    /* Bytes of request bodies held right now, against --max-inflight-bytes:
     * many large uploads at once cannot exhaust memory. */
    atomic_uint_fast64_t inflight;
};

typedef struct req_ctx {
    int64_t start_ns;
    conn_rec *conn;
    char path[256];            /* without the query, truncated, for the log */
    int routed;
    partd_route route;
    char id[PARTD_ID_LEN + 1];
    char method[8];            /* for the log; "other" when longer */
    int status;                /* the answer's status code, 0 = none yet */
    char *body;
    size_t len, cap;
    uint64_t charged;          /* bytes counted in partd_http.inflight */
    int too_big;
    uint64_t discarded;
    partd_coding body_coding;  /* the body's Content-Encoding */
} req_ctx;

/* ---- slow senders --------------------------------------------------------- */

static void set_phase(partd_http *h, conn_rec *cr, conn_phase phase)
{
    if (!cr)
        return;
    pthread_mutex_lock(&h->conns_lock);
    cr->phase = phase;
    cr->phase_start_ns = partd_monotonic_ns();
    pthread_mutex_unlock(&h->conns_lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    partd_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn_rec *cr = ci ? calloc(1, sizeof *cr) : NULL;
        *socket_context = cr;
        if (!cr)
            return;
        cr->fd = ci->connect_fd;
        cr->phase = PHASE_HEADERS;
        cr->phase_start_ns = partd_monotonic_ns();
        pthread_mutex_lock(&h->conns_lock);
        cr->next = h->conns;
        if (h->conns)
            h->conns->prev = cr;
        h->conns = cr;
        pthread_mutex_unlock(&h->conns_lock);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_rec *cr = *socket_context;
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

void partd_http_cut_slow(partd_http *h)
{
    int64_t now = partd_monotonic_ns();
    int64_t header_ns = (int64_t)h->svc->cfg->header_timeout_s * 1000000000;
    int64_t request_ns = (int64_t)h->svc->cfg->request_timeout_s * 1000000000;
    unsigned cut = 0;
    pthread_mutex_lock(&h->conns_lock);
    for (conn_rec *cr = h->conns; cr; cr = cr->next) {
        int64_t limit = cr->phase == PHASE_HEADERS ? header_ns
                        : cr->phase == PHASE_BODY  ? request_ns
                                                   : 0;
        if (!cr->cut && limit && now - cr->phase_start_ns > limit) {
            /* libmicrohttpd sees the connection fail and closes it. */
            shutdown(cr->fd, SHUT_RDWR);
            cr->cut = 1;
            cut++;
        }
    }
    pthread_mutex_unlock(&h->conns_lock);
    if (cut)
        partd_log_msg("warn", "http", "cut off %u connection(s) too slow sending a request", cut);
}

/* ---- responses ---------------------------------------------------------- */

static enum MHD_Result queue(struct MHD_Connection *c, req_ctx *rc, int status,
                             struct MHD_Response *resp)
{
    if (!resp)
        return MHD_NO;
    rc->status = status;
    enum MHD_Result r = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

/* Takes ownership of the malloc'd body. */
static struct MHD_Response *make_response(char *body, size_t len, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return resp;
}

static struct MHD_Response *problem_response(const partd_problem *p)
{
    size_t len = 0;
    char *text = partd_problem_to_json(p, &len);
    if (!text)
        return NULL;
    return make_response(text, len, CT_PROBLEM);
}

static enum MHD_Result send_problem_doc(struct MHD_Connection *c, req_ctx *rc,
                                        const partd_problem *p, const char *header,
                                        const char *value)
{
    struct MHD_Response *resp = problem_response(p);
    if (resp && header)
        MHD_add_response_header(resp, header, value);
    return queue(c, rc, p->status ? p->status : 500, resp);
}

/* A problem with one error entry (pointer may be NULL for none). */
static enum MHD_Result send_problem(struct MHD_Connection *c, req_ctx *rc, int status,
                                    const char *slug, const char *title, const char *detail,
                                    const char *pointer, const char *header, const char *value)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, status, slug, title, "%s", detail);
    if (pointer)
        partd_problem_add(&p, pointer, "%s", detail);
    enum MHD_Result r = send_problem_doc(c, rc, &p, header, value);
    partd_problem_free(&p);
    return r;
}

static enum MHD_Result send_job(struct MHD_Connection *c, req_ctx *rc, int status,
                                const partd_job_row *row)
{
    size_t len = 0;
    char *text = partd_job_to_text(row, &len);
    if (!text)
        return send_problem(c, rc, 503, "out-of-memory", "Out of memory",
                            "the job could not be rendered", NULL, NULL, NULL);
    struct MHD_Response *resp = make_response(text, len, CT_JSON);
    if (resp && status == 202) {
        char location[64];
        snprintf(location, sizeof location, "/v1/jobs/%s", row->id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return queue(c, rc, status, resp);
}

static enum MHD_Result send_store_error(struct MHD_Connection *c, req_ctx *rc, int err)
{
    if (err == PARTD_ENOMEM)
        return send_problem(c, rc, 503, "out-of-memory", "Out of memory",
                            "the server ran out of memory answering this request", NULL,
                            MHD_HTTP_HEADER_RETRY_AFTER, "5");
    return send_problem(c, rc, 503, "store-unavailable", "Store unavailable",
                        "the job store could not be read or written; try again later", NULL,
                        MHD_HTTP_HEADER_RETRY_AFTER, "5");
}

static enum MHD_Result send_not_found(struct MHD_Connection *c, req_ctx *rc)
{
    return send_problem(c, rc, 404, "not-found", "Not found", "no such resource", NULL, NULL,
                        NULL);
}

/* ---- routing ------------------------------------------------------------ */

static partd_route route_of(const char *url, char id[PARTD_ID_LEN + 1])
{
    static const struct { const char *path; partd_route route; } fixed[] = {
        {"/v1/jobs", PARTD_ROUTE_JOBS},     {"/livez", PARTD_ROUTE_LIVEZ},
        {"/readyz", PARTD_ROUTE_READYZ},    {"/metrics", PARTD_ROUTE_METRICS},
        {"/version", PARTD_ROUTE_VERSION},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(url, fixed[i].path) == 0)
            return fixed[i].route;
    if (strncmp(url, "/v1/jobs/", 9) != 0)
        return PARTD_ROUTE_OTHER;
    const char *rest = url + 9;
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (n != PARTD_ID_LEN)
        return PARTD_ROUTE_OTHER;
    memcpy(id, rest, n);
    id[n] = '\0';
    if (!partd_id_valid(id))
        return PARTD_ROUTE_OTHER;
    if (!slash)
        return PARTD_ROUTE_JOB;
    return strcmp(slash, "/result") == 0 ? PARTD_ROUTE_JOB_RESULT : PARTD_ROUTE_OTHER;
}

static const char *allowed_methods(partd_route r)
{
    switch (r) {
    case PARTD_ROUTE_JOBS:
        return "GET, HEAD, POST";
    case PARTD_ROUTE_JOB:
        return "GET, HEAD, DELETE";
    default:
        return "GET, HEAD";
    }
}

static int method_allowed(partd_route r, const char *method)
{
    if (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0)
        return 1;
    if (r == PARTD_ROUTE_JOBS)
        return strcmp(method, "POST") == 0;
    if (r == PARTD_ROUTE_JOB)
        return strcmp(method, "DELETE") == 0;
    return 0;
}

static int authorized(partd_service *svc, struct MHD_Connection *c)
{
    if (!svc->token)
        return 1;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                   MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return 0;
    const char *token = auth + 7;
    while (*token == ' ')
        token++;
    return partd_secret_equal(token, strlen(token), svc->token, svc->token_len);
}

/* application/json, optionally with parameters (charset=utf-8). */
static int is_json_type(const char *ct)
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

/* ---- health, version, metrics ------------------------------------------- */

/* Why the data directory cannot take results now, or NULL: read-only, or
 * less free space than a large result needs (checked on every probe, so
 * readiness returns by itself once space does). */
static const char *store_space_problem(partd_service *svc, char *buf, size_t cap)
{
    uint64_t avail = 0;
    int read_only = 0;
    if (partd_fs_space(svc->cfg->data_dir, &avail, &read_only) != PARTD_OK)
        return NULL; /* cannot tell: the store's own health decides */
    if (read_only)
        return "the data directory is on a read-only file system";
    if (avail < READY_MIN_FREE_BYTES) {
        snprintf(buf, cap, "the data directory has %llu bytes free (at least %llu needed)",
                 (unsigned long long)avail, (unsigned long long)READY_MIN_FREE_BYTES);
        return buf;
    }
    return NULL;
}

static int is_ready(partd_service *svc)
{
    char buf[128];
    return atomic_load(&svc->phase) == PARTD_PHASE_READY && partd_store_healthy(svc->store) &&
           !store_space_problem(svc, buf, sizeof buf) &&
           (uint64_t)partd_jobs_queued(svc->jobs) < svc->cfg->queue_max;
}

static enum MHD_Result handle_readyz(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    int phase = atomic_load(&svc->phase);
    const char *why = NULL;
    char space[128];
    /* After a failed write the store stays unhealthy until a write works:
     * with space back, try one now so that readiness returns by itself. */
    if (phase == PARTD_PHASE_READY && !partd_store_healthy(svc->store) &&
        !store_space_problem(svc, space, sizeof space))
        partd_store_probe(svc->store);
    if (phase == PARTD_PHASE_STARTING)
        why = "starting: recovering queued jobs";
    else if (phase == PARTD_PHASE_DRAINING)
        why = "draining: shutting down";
    else if (!partd_store_healthy(svc->store))
        why = "the store cannot be written";
    else if ((uint64_t)partd_jobs_queued(svc->jobs) >= svc->cfg->queue_max)
        why = "the job queue is full";
    if (!why)
        why = store_space_problem(svc, space, sizeof space);
    if (why)
        return send_problem(c, rc, 503, "not-ready", "Not ready", why, NULL,
                            MHD_HTTP_HEADER_RETRY_AFTER, "1");
    char *text = strdup("{\"status\":\"ready\"}\n");
    if (!text)
        return MHD_NO;
    return queue(c, rc, 200, make_response(text, strlen(text), CT_JSON));
}

static enum MHD_Result handle_metrics(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    partd_cache_stats cs;
    partd_cache_stats_get(svc->cache, &cs);
    partd_metrics_gauges g = {cs.bytes, cs.entries, is_ready(svc)};
    size_t len = 0;
    char *text = partd_metrics_render(&svc->metrics, &g, &len);
    if (!text)
        return send_store_error(c, rc, PARTD_ENOMEM);
    return queue(c, rc, 200, make_response(text, len, "text/plain; version=0.0.4; charset=utf-8"));
}

static enum MHD_Result send_static(struct MHD_Connection *c, req_ctx *rc,
                                   struct MHD_Response *resp)
{
    rc->status = 200;
    return MHD_queue_response(c, 200, resp);
}

/* ---- jobs --------------------------------------------------------------- */

/* The job from the table (unfinished) or else the store. */
static int find_job(partd_service *svc, const char *id, partd_job_row *row)
{
    if (partd_jobs_lookup(svc->jobs, id, row) == PARTD_OK)
        return PARTD_OK;
    return partd_store_get_job(svc->store, id, row);
}

static enum MHD_Result handle_get_job(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    partd_job_row row;
    int err = find_job(svc, rc->id, &row);
    if (err == PARTD_STORE_MISSING)
        return send_not_found(c, rc);
    if (err != PARTD_OK)
        return send_store_error(c, rc, err);
    enum MHD_Result r = send_job(c, rc, 200, &row);
    partd_job_row_clear(&row);
    return r;
}

static void release_entry(void *cls)
{
    partd_cache_entry_release(cls);
}

/* RFC 9110 If-None-Match: "*" or a list of (possibly weak) entity tags,
 * compared weakly. */
static int etag_matches(const char *header, const char *quoted)
{
    if (!header)
        return 0;
    size_t qlen = strlen(quoted);
    const char *p = header;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        const char *end = p;
        if (*end == '"') {
            end = strchr(end + 1, '"');
            if (!end)
                return 0;
            end++;
        } else {
            while (*end && *end != ',')
                end++;
        }
        if ((size_t)(end - p) == qlen && memcmp(p, quoted, qlen) == 0)
            return 1;
        p = end;
    }
    return 0;
}

/* The strong entity tag of one representation: the document's hash for the
 * document itself (the contract's ETag), the hash with the coding appended
 * for a coded form, whose bytes differ (RFC 9110 section 8.8.3). */
static void representation_etag(const char *hash, partd_coding coding, char *out, size_t cap)
{
    if (coding == PARTD_CODING_IDENTITY)
        snprintf(out, cap, "\"%s\"", hash);
    else
        snprintf(out, cap, "\"%s-%s\"", hash, partd_coding_name(coding));
}

/* A reference to the result document: the LRU, else the store (then cached). */
static int load_result(partd_service *svc, const char *key, partd_cache_entry **out)
{
    *out = partd_cache_get(svc->cache, key);
    if (*out)
        return PARTD_OK;
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    int err = partd_store_get_result(svc->store, key, forms, etag, &summary);
    if (err != PARTD_OK)
        return err;
    partd_cache_put(svc->cache, key, etag, forms, summary, out);
    return *out ? PARTD_OK : PARTD_ENOMEM;
}

static enum MHD_Result send_result(struct MHD_Connection *c, req_ctx *rc, partd_service *svc,
                                   const partd_job_row *row)
{
    partd_cache_entry *e;
    int err = load_result(svc, row->cache_key, &e);
    if (err == PARTD_STORE_MISSING)
        return send_problem(c, rc, 404, "result-expired", "Result expired",
                            "the job's result is no longer stored (retention)", NULL, NULL, NULL);
    if (err != PARTD_OK)
        return send_store_error(c, rc, err);
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_ACCEPT_ENCODING);
    partd_coding coding = partd_coding_negotiate(accept, partd_cache_entry_codings(e));
    if (coding == PARTD_CODING_NONE) {
        partd_cache_entry_release(e);
        return send_problem(c, rc, 406, "not-acceptable", "No acceptable content coding",
                            "the result is available as identity, zstd or gzip, and "
                            "Accept-Encoding refuses them all", NULL, NULL, NULL);
    }
    char quoted[96];
    representation_etag(e->etag, coding, quoted, sizeof quoted);
    const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                  MHD_HTTP_HEADER_IF_NONE_MATCH);
    struct MHD_Response *resp;
    int status;
    if (etag_matches(inm, quoted)) {
        partd_cache_entry_release(e);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        status = 304;
    } else {
        /* Served straight from the cache entry; the reference is dropped
         * when libmicrohttpd is done with the response. */
        const partd_blob *form = &e->forms[coding];
        resp = MHD_create_response_from_buffer_with_free_callback_cls(form->len, form->data,
                                                                       release_entry, e);
        if (!resp) {
            partd_cache_entry_release(e);
            return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CT_JSON);
        if (coding != PARTD_CODING_IDENTITY)
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
                                    partd_coding_name(coding));
        status = 200;
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, quoted);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "private, max-age=0");
    return queue(c, rc, status, resp);
}

static enum MHD_Result handle_get_result(struct MHD_Connection *c, req_ctx *rc,
                                         partd_service *svc)
{
    partd_job_row row;
    int err = find_job(svc, rc->id, &row);
    if (err == PARTD_STORE_MISSING)
        return send_not_found(c, rc);
    if (err != PARTD_OK)
        return send_store_error(c, rc, err);
    enum MHD_Result r;
    char detail[128];
    switch (row.status) {
    case PARTD_JOB_SUCCEEDED:
        r = send_result(c, rc, svc, &row);
        break;
    case PARTD_JOB_FAILED:
        if (row.error) {
            size_t len = strlen(row.error);
            struct MHD_Response *resp = make_response(row.error, len, CT_PROBLEM);
            row.error = NULL; /* owned by the response now */
            r = queue(c, rc, row.error_status >= 400 ? row.error_status : 500, resp);
        } else {
            r = send_problem(c, rc, 500, "internal-error", "Job failed",
                             "the job failed and its problem document is lost", NULL, NULL, NULL);
        }
        break;
    case PARTD_JOB_CANCELLED:
        r = send_problem(c, rc, 409, "job-cancelled", "Job cancelled",
                         "the job was cancelled and has no result", NULL, NULL, NULL);
        break;
    default:
        snprintf(detail, sizeof detail, "the job is %s; poll /v1/jobs/%s until it finishes",
                 partd_job_status_name(row.status), row.id);
        r = send_problem(c, rc, 409, "job-not-finished", "Job not finished", detail, NULL,
                         MHD_HTTP_HEADER_RETRY_AFTER, "1");
        break;
    }
    partd_job_row_clear(&row);
    return r;
}

static enum MHD_Result handle_delete(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    partd_job_row row;
    int err = partd_jobs_cancel(svc->jobs, rc->id, &row);
    if (err == PARTD_OK)
        return send_job(c, rc, 200, &row);
    if (err == PARTD_STORE_CONFLICT)
        err = partd_jobs_lookup(svc->jobs, rc->id, &row);
    else if (err == PARTD_STORE_MISSING)
        err = partd_store_get_job(svc->store, rc->id, &row);
    if (err == PARTD_STORE_MISSING)
        return send_not_found(c, rc);
    if (err != PARTD_OK)
        return send_store_error(c, rc, err);
    enum MHD_Result r;
    if (partd_job_finished(row.status)) {
        char detail[96];
        snprintf(detail, sizeof detail, "the job already finished (%s)",
                 partd_job_status_name(row.status));
        r = send_problem(c, rc, 409, "job-finished", "Job already finished", detail, NULL,
                         NULL, NULL);
    } else {
        /* Committed but not taken by the engine: only while shutting down. */
        r = send_problem(c, rc, 503, "shutting-down", "Shutting down",
                         "the job will run after the restart; cancel it then", NULL,
                         MHD_HTTP_HEADER_RETRY_AFTER, "5");
    }
    partd_job_row_clear(&row);
    return r;
}

typedef struct list_ctx {
    char *text;                /* '{"jobs":[' + jobs so far */
    size_t len;
    unsigned limit, count;
    int64_t last_seq;
    int failed;
} list_ctx;

static void list_row(const partd_job_row *row, void *ctx)
{
    list_ctx *lc = ctx;
    if (lc->failed || lc->count++ >= lc->limit)
        return; /* the extra row only says whether there is a next page */
    lc->last_seq = row->seq;
    size_t n = 0;
    char *job = partd_job_to_text(row, &n);
    char *p = job ? realloc(lc->text, lc->len + n + 2) : NULL;
    if (!p) {
        free(job);
        lc->failed = 1;
        return;
    }
    lc->text = p;
    if (lc->count > 1)
        p[lc->len++] = ',';
    memcpy(p + lc->len, job, n - 1); /* without the newline */
    lc->len += n - 1;
    p[lc->len] = '\0';
    free(job);
}

static enum MHD_Result bad_query(struct MHD_Connection *c, req_ctx *rc, const char *param,
                                 const char *detail)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 400, "bad-query", "Bad query parameter", "%s: %s", param, detail);
    enum MHD_Result r = send_problem_doc(c, rc, &p, NULL, NULL);
    partd_problem_free(&p);
    return r;
}

static enum MHD_Result handle_list(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    const char *status = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status");
    const char *limit = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
    const char *token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "page_token");
    int st = -1;
    if (status && *status && (st = partd_job_status_parse(status)) < 0)
        return bad_query(c, rc, "status",
                         "must be queued, running, succeeded, failed or cancelled");
    uint64_t lim = LIST_DEFAULT_LIMIT, before = 0;
    if (limit && (partd_parse_u64(limit, LIST_MAX_LIMIT, &lim) != PARTD_OK || lim == 0))
        return bad_query(c, rc, "limit", "must be an integer from 1 to 1000");
    if (token && (partd_parse_u64(token, INT64_MAX, &before) != PARTD_OK || before == 0))
        return bad_query(c, rc, "page_token", "is not a token this server gave out");
    list_ctx lc = {strdup("{\"jobs\":["), 0, (unsigned)lim, 0, 0, 0};
    if (!lc.text)
        return send_store_error(c, rc, PARTD_ENOMEM);
    lc.len = strlen(lc.text);
    int err = partd_store_list(svc->store, st, (int64_t)before, (unsigned)lim + 1, list_row, &lc);
    char tail[64];
    if (lc.count > lc.limit)
        snprintf(tail, sizeof tail, "],\"next_page_token\":\"%lld\"}\n", (long long)lc.last_seq);
    else
        snprintf(tail, sizeof tail, "],\"next_page_token\":null}\n");
    size_t tlen = strlen(tail);
    char *text = err == PARTD_OK && !lc.failed ? realloc(lc.text, lc.len + tlen + 1) : NULL;
    if (!text) {
        free(lc.text);
        return send_store_error(c, rc, err != PARTD_OK ? err : PARTD_ENOMEM);
    }
    memcpy(text + lc.len, tail, tlen + 1);
    struct MHD_Response *resp = make_response(text, lc.len + tlen, CT_JSON);
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return queue(c, rc, 200, resp);
}

/* ---- submit ------------------------------------------------------------- */

static int valid_idem_key(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > IDEM_KEY_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] > 0x7e)
            return 0;
    return 1;
}

/* Answers a retry of an earlier submission with the job it created. */
static enum MHD_Result replay(struct MHD_Connection *c, req_ctx *rc, partd_service *svc,
                              partd_job_row *stored, const char *stored_digest,
                              const char *digest)
{
    if (strcmp(stored_digest, digest) != 0) {
        partd_job_row_clear(stored);
        return send_problem(c, rc, 422, "idempotency-key-reused", "Idempotency-Key reused",
                            "this Idempotency-Key was used with a different request body",
                            NULL, NULL, NULL);
    }
    /* The table is fresher than the store for unfinished jobs. */
    partd_job_row live;
    if (partd_jobs_lookup(svc->jobs, stored->id, &live) == PARTD_OK) {
        partd_job_row_clear(stored);
        *stored = live;
    }
    enum MHD_Result r = send_job(c, rc, partd_job_finished(stored->status) ? 200 : 202, stored);
    partd_job_row_clear(stored);
    return r;
}

static enum MHD_Result decode_failed(struct MHD_Connection *c, req_ctx *rc, int err,
                                     partd_problem *p)
{
    if (p->status == 0) {
        if (err == PARTD_EMALFORMED)
            partd_problem_set(p, 400, "malformed-json", "Malformed JSON", "%s",
                              partd_strerror(err));
        else if (err == PARTD_ENOMEM)
            partd_problem_set(p, 503, "out-of-memory", "Out of memory",
                              "the request could not be decoded in the memory available");
        else
            partd_problem_set(p, 422, "invalid-request", "Invalid request", "%s",
                              partd_strerror(err));
    }
    return send_problem_doc(c, rc, p, NULL, NULL);
}

/* A finished job answered from a stored result; 0 when there is none. */
static int cached_summary(partd_service *svc, const char *key, char **summary)
{
    partd_cache_entry *e = partd_cache_get(svc->cache, key);
    if (e) {
        /* The retention sweep may have just deleted the stored copy: the
         * touch says so, and then it is a miss. */
        int err = partd_store_touch_result(svc->store, key, partd_now_ms());
        if (err == PARTD_STORE_MISSING)
            partd_cache_remove(svc->cache, key);
        *summary = err == PARTD_OK ? strdup(e->summary) : NULL;
        partd_cache_entry_release(e);
        return *summary != NULL;
    }
    if (load_result(svc, key, &e) != PARTD_OK)
        return 0;
    partd_store_touch_result(svc->store, key, partd_now_ms());
    *summary = strdup(e->summary);
    partd_cache_entry_release(e);
    return *summary != NULL;
}

static enum MHD_Result handle_submit(struct MHD_Connection *c, req_ctx *rc, partd_service *svc)
{
    if (rc->too_big) {
        char detail[128];
        snprintf(detail, sizeof detail, "the body is larger than %llu bytes (--max-body-bytes)",
                 (unsigned long long)svc->cfg->max_body_bytes);
        /* The connection's state after an unread or dropped body is not
         * worth keeping. */
        return send_problem(c, rc, 413, "body-too-large", "Body too large", detail, NULL,
                            MHD_HTTP_HEADER_CONNECTION, "close");
    }
    const char *idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    char digest[72] = "";
    if (idem) {
        if (!valid_idem_key(idem))
            return send_problem(c, rc, 400, "bad-idempotency-key", "Bad Idempotency-Key",
                                "Idempotency-Key must be 1 to 255 visible ASCII characters",
                                NULL, NULL, NULL);
        partd_sha256_hex(rc->body ? rc->body : "", rc->len, digest);
        partd_job_row stored;
        char stored_digest[72];
        int err = partd_store_get_job_by_idem(svc->store, idem, &stored, stored_digest);
        if (err == PARTD_OK)
            return replay(c, rc, svc, &stored, stored_digest, digest);
        if (err != PARTD_STORE_MISSING)
            return send_store_error(c, rc, err);
    }

    partd_request *req = NULL;
    partd_problem problem;
    partd_problem_init(&problem);
    int err = partd_request_decode(rc->body ? rc->body : "", rc->len, &svc->limits, &req, &problem);
    if (err != PARTD_OK) {
        enum MHD_Result r = decode_failed(c, rc, err, &problem);
        partd_problem_free(&problem);
        return r;
    }
    partd_problem_free(&problem);

    partd_job_row row;
    memset(&row, 0, sizeof row);
    if (partd_id_new(row.id) != PARTD_OK) {
        partd_request_free(req);
        return send_problem(c, rc, 503, "no-entropy", "No entropy",
                            "the kernel gave no random bytes for a job id", NULL, NULL, NULL);
    }
    row.created_ms = partd_now_ms();
    snprintf(row.graph_hash, sizeof row.graph_hash, "%s", req->graph_hash);
    snprintf(row.cache_key, sizeof row.cache_key, "%s", req->cache_key);

    char *summary = NULL;
    int reserved = 0;
    if (cached_summary(svc, row.cache_key, &summary)) {
        partd_request_free(req);
        req = NULL;
        row.status = PARTD_JOB_SUCCEEDED;
        row.started_ms = row.finished_ms = row.created_ms;
        row.cached = 1;
        row.summary = summary;
    } else {
        if (!partd_jobs_reserve(svc->jobs)) {
            partd_request_free(req);
            char detail[128];
            snprintf(detail, sizeof detail, "%llu jobs are waiting (--queue-max); retry later",
                     (unsigned long long)svc->cfg->queue_max);
            return send_problem(c, rc, 429, "queue-full", "Queue full", detail, NULL,
                                MHD_HTTP_HEADER_RETRY_AFTER, "5");
        }
        reserved = 1;
        row.status = PARTD_JOB_QUEUED;
    }

    /* Committed before the answer goes out: a 202 survives a crash. */
    err = partd_store_insert_job(svc->store, &row, idem, idem ? digest : NULL, rc->body, rc->len);
    if (err != PARTD_OK) {
        if (reserved)
            partd_jobs_unreserve(svc->jobs);
        partd_request_free(req);
        partd_job_row_clear(&row);
        if (err == PARTD_STORE_CONFLICT) {
            /* A concurrent request with the same key won the race. */
            partd_job_row stored;
            char stored_digest[72];
            err = partd_store_get_job_by_idem(svc->store, idem, &stored, stored_digest);
            if (err == PARTD_OK)
                return replay(c, rc, svc, &stored, stored_digest, digest);
        }
        return send_store_error(c, rc, err);
    }
    atomic_fetch_add(&svc->metrics.jobs_submitted, 1);
    enum MHD_Result r;
    if (row.status == PARTD_JOB_SUCCEEDED) {
        atomic_fetch_add(&svc->metrics.cache_hits, 1);
        atomic_fetch_add(&svc->metrics.jobs_finished[PARTD_JOB_SUCCEEDED], 1);
        partd_log_field f[] = {PARTD_LF_S("id", row.id), PARTD_LF_S("status", "succeeded"),
                               PARTD_LF_S("cache_key", row.cache_key), PARTD_LF_N("cached", 1),
                               PARTD_LF_END};
        partd_log("info", "job", f);
        r = send_job(c, rc, 200, &row);
    } else {
        atomic_fetch_add(&svc->metrics.cache_misses, 1);
        /* If the engine no longer takes jobs (shutting down) the job stays
         * queued in the store and runs after the restart. */
        partd_jobs_submit(svc->jobs, &row, req);
        r = send_job(c, rc, 202, &row);
    }
    partd_job_row_clear(&row);
    return r;
}

/* Counts `bytes` more of body memory against --max-inflight-bytes; 0 when
 * that would go over. */
static int charge(partd_http *h, req_ctx *rc, uint64_t bytes)
{
    uint64_t max = h->svc->cfg->max_inflight_bytes;
    uint_fast64_t cur = atomic_load(&h->inflight);
    do {
        if (cur + bytes > max)
            return 0;
    } while (!atomic_compare_exchange_weak(&h->inflight, &cur, cur + bytes));
    rc->charged += bytes;
    return 1;
}

static enum MHD_Result send_busy(struct MHD_Connection *c, req_ctx *rc)
{
    return send_problem(c, rc, 503, "busy", "Busy",
                        "too many request bodies are being received at once; retry", NULL,
                        MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

/* ---- the access handler ------------------------------------------------- */

/* First call for a request: everything the headers alone decide. Returns
 * 1 when an answer was queued (or the connection must close). */
static int first_call(struct MHD_Connection *c, req_ctx *rc, partd_http *h, const char *url,
                      const char *method, enum MHD_Result *result)
{
    partd_service *svc = h->svc;
    rc->routed = 1;
    rc->route = route_of(url, rc->id);
    snprintf(rc->method, sizeof rc->method, "%s", strlen(method) < sizeof rc->method ? method : "other");
    if (strncmp(url, "/v1/", 4) == 0 && !authorized(svc, c)) {
        *result = send_problem(c, rc, 401, "unauthorized", "Unauthorized",
                               "a valid bearer token is required", NULL,
                               MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"partd\"");
        return 1;
    }
    if (rc->route == PARTD_ROUTE_OTHER) {
        *result = send_not_found(c, rc);
        return 1;
    }
    if (!method_allowed(rc->route, method)) {
        char detail[96];
        snprintf(detail, sizeof detail, "%s is not allowed here; allowed: %s", method,
                 allowed_methods(rc->route));
        *result = send_problem(c, rc, 405, "method-not-allowed", "Method not allowed", detail,
                               NULL, MHD_HTTP_HEADER_ALLOW, allowed_methods(rc->route));
        return 1;
    }
    if (rc->route != PARTD_ROUTE_JOBS || strcmp(method, "POST") != 0)
        return 0;
    if (atomic_load(&svc->phase) != PARTD_PHASE_READY) {
        *result = send_problem(c, rc, 503, "not-accepting", "Not accepting jobs",
                               atomic_load(&svc->phase) == PARTD_PHASE_DRAINING
                                   ? "the server is shutting down"
                                   : "the server is starting",
                               NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
        return 1;
    }
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!is_json_type(ct)) {
        *result = send_problem(c, rc, 415, "unsupported-media-type", "Unsupported media type",
                               "the body must be application/json", NULL,
                               MHD_HTTP_HEADER_ACCEPT, CT_JSON);
        return 1;
    }
    rc->body_coding = partd_coding_parse(
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING));
    if (rc->body_coding == PARTD_CODING_NONE) {
        /* RFC 9110 section 15.5.16: 415, saying which codings would do. */
        *result = send_problem(c, rc, 415, "unsupported-content-encoding",
                               "Unsupported content coding",
                               "the body's Content-Encoding must be zstd, gzip or identity "
                               "(one coding)",
                               NULL, MHD_HTTP_HEADER_ACCEPT_ENCODING, "zstd, gzip");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl && partd_parse_u64(cl, UINT64_MAX, &declared) == PARTD_OK &&
        declared > svc->cfg->max_body_bytes) {
        /* Answered before reading a byte of the body. */
        rc->too_big = 1;
        *result = handle_submit(c, rc, svc);
        return 1;
    }
    if (declared > 0) {
        if (!charge(h, rc, declared + 1)) {
            *result = send_busy(c, rc);
            return 1;
        }
        rc->body = malloc(declared + 1);
        if (!rc->body) {
            *result = send_store_error(c, rc, PARTD_ENOMEM);
            return 1;
        }
        rc->cap = declared + 1;
    }
    return 0;
}

/* Appends a piece of the body; past the cap it only counts what it drops. */
static int take_body(partd_http *h, req_ctx *rc, const char *data, size_t n)
{
    uint64_t max = h->svc->cfg->max_body_bytes;
    if (rc->too_big || rc->len + n > max) {
        rc->too_big = 1;
        rc->discarded += n;
        /* Dropped bytes are read (up to a bound) so that the client, still
         * sending, gets its 413; a chunked body that never ends is cut off
         * rather than read forever. */
        return rc->discarded <= (max > DISCARD_MAX ? max : DISCARD_MAX);
    }
    if (rc->len + n + 1 > rc->cap) {
        size_t cap = rc->cap ? rc->cap : 65536;
        while (cap < rc->len + n + 1)
            cap *= 2;
        if (cap > max + 1)
            cap = max + 1;
        if (cap > rc->charged && !charge(h, rc, cap - rc->charged))
            return 0; /* over the in-flight budget: the connection is closed */
        char *p = realloc(rc->body, cap);
        if (!p)
            return 0;
        rc->body = p;
        rc->cap = cap;
    }
    memcpy(rc->body + rc->len, data, n);
    rc->len += n;
    rc->body[rc->len] = '\0';
    return 1;
}

/* The decoded body grows against --max-inflight-bytes like a plain one. */
typedef struct body_growth {
    partd_http *h;
    req_ctx *rc;
    size_t charged;
} body_growth;

static int charge_growth(void *ctx, size_t new_cap)
{
    body_growth *g = ctx;
    if (new_cap <= g->charged)
        return 1;
    if (!charge(g->h, g->rc, new_cap - g->charged))
        return 0;
    g->charged = new_cap;
    return 1;
}

/* Replaces a compressed body by its decoding, limited like a plain body by
 * --max-body-bytes (a decompression bomb stops there). Returns 1 when an
 * error answer was queued instead. */
static int decode_body(struct MHD_Connection *c, req_ctx *rc, partd_http *h,
                       enum MHD_Result *result)
{
    uint64_t max = h->svc->cfg->max_body_bytes;
    uint64_t compressed_charge = rc->charged;
    body_growth g = {h, rc, 0};
    partd_blob plain;
    int err = partd_decode(rc->body_coding, rc->body ? rc->body : "", rc->len, (size_t)max,
                           charge_growth, &g, &plain);
    char detail[160];
    const char *coding = partd_coding_name(rc->body_coding);
    switch (err) {
    case PARTD_OK:
        free(rc->body);
        rc->body = plain.data;
        rc->len = plain.len;
        rc->cap = plain.len + 1;
        atomic_fetch_sub(&h->inflight, compressed_charge);
        rc->charged -= compressed_charge;
        return 0;
    case PARTD_ETOOBIG:
        snprintf(detail, sizeof detail,
                 "decoded from %s, the body is larger than %llu bytes (--max-body-bytes)", coding,
                 (unsigned long long)max);
        *result = send_problem(c, rc, 413, "body-too-large", "Body too large", detail, NULL,
                               NULL, NULL);
        return 1;
    case PARTD_EMALFORMED:
        snprintf(detail, sizeof detail,
                 "the body is not a complete %s stream (Content-Encoding: %s)", coding, coding);
        *result = send_problem(c, rc, 400, "undecodable-body", "Undecodable body", detail, NULL,
                               NULL, NULL);
        return 1;
    default:
        *result = send_busy(c, rc);
        return 1;
    }
}

static enum MHD_Result dispatch(struct MHD_Connection *c, req_ctx *rc, partd_http *h,
                                const char *method)
{
    partd_service *svc = h->svc;
    int is_delete = strcmp(method, "DELETE") == 0;
    switch (rc->route) {
    case PARTD_ROUTE_LIVEZ:
        return send_static(c, rc, h->livez);
    case PARTD_ROUTE_VERSION:
        return send_static(c, rc, h->version);
    case PARTD_ROUTE_READYZ:
        return handle_readyz(c, rc, svc);
    case PARTD_ROUTE_METRICS:
        return handle_metrics(c, rc, svc);
    case PARTD_ROUTE_JOBS:
        if (strcmp(method, "POST") != 0)
            return handle_list(c, rc, svc);
        if (rc->body_coding != PARTD_CODING_IDENTITY && !rc->too_big) {
            enum MHD_Result r;
            if (decode_body(c, rc, h, &r))
                return r;
        }
        return handle_submit(c, rc, svc);
    case PARTD_ROUTE_JOB:
        return is_delete ? handle_delete(c, rc, svc) : handle_get_job(c, rc, svc);
    case PARTD_ROUTE_JOB_RESULT:
        return handle_get_result(c, rc, svc);
    default:
        return send_not_found(c, rc);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    partd_http *h = cls;
    req_ctx *rc = *con_cls;
    if (!rc)
        return MHD_NO; /* the URI callback failed to allocate */
    if (rc->status)
        return MHD_YES; /* answered already; libmicrohttpd drains or closes */
    if (!rc->routed) {
        enum MHD_Result result = MHD_YES;
        if (first_call(c, rc, h, url, method, &result)) {
            set_phase(h, rc->conn, PHASE_ANSWERING);
            return result;
        }
        set_phase(h, rc->conn, PHASE_BODY);
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (strcmp(method, "POST") != 0)
            return MHD_YES; /* bodies of other methods are ignored */
        /* libmicrohttpd cannot answer before the body is read: past the
         * cap the rest is counted and dropped, and 413 goes out at the end. */
        if (!take_body(h, rc, upload_data, n))
            return MHD_NO;
        return MHD_YES;
    }
    set_phase(h, rc->conn, PHASE_ANSWERING);
    return dispatch(c, rc, h, method);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    req_ctx *rc = calloc(1, sizeof *rc);
    if (!rc)
        return NULL;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    rc->conn = ci ? ci->socket_context : NULL;
    rc->start_ns = partd_monotonic_ns();
    size_t n = strcspn(uri, "?");
    if (n >= sizeof rc->path)
        n = sizeof rc->path - 1;
    memcpy(rc->path, uri, n);
    rc->path[n] = '\0';
    return rc;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    partd_http *h = cls;
    req_ctx *rc = *con_cls;
    if (!rc)
        return;
    *con_cls = NULL;
    /* A kept-alive connection's next request starts its clock now. */
    set_phase(h, rc->conn, PHASE_HEADERS);
    double secs = (double)(partd_monotonic_ns() - rc->start_ns) / 1e9;
    (void)c;
    const char *method = rc->method[0] ? rc->method : "-";
    partd_metrics_http(&h->svc->metrics, method, rc->route, rc->status, secs);
    static const char *const ends[] = {"ok", "error", "timeout", "shutdown", "read_error",
                                       "client_abort"};
    partd_log_field f[] = {
        PARTD_LF_S("method", method),
        PARTD_LF_S("path", rc->path),
        PARTD_LF_S("route", partd_route_label(rc->route)),
        PARTD_LF_N("status", rc->status),
        PARTD_LF_N("duration_ms", secs * 1000.0),
        PARTD_LF_N("body_bytes", rc->len + rc->discarded),
        (unsigned)toe < 6 && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK
            ? PARTD_LF_S("end", ends[toe])
            : PARTD_LF_END,
        rc->id[0] ? PARTD_LF_S("id", rc->id) : PARTD_LF_END,
        PARTD_LF_END};
    /* Empty slots in the middle end the list early; move id forward. */
    if (f[6].key == NULL && f[7].key) {
        f[6] = f[7];
        f[7] = PARTD_LF_END;
    }
    partd_log("info", "request", f);
    atomic_fetch_sub(&h->inflight, rc->charged);
    free(rc->body);
    /* Decoding a large body leaves the JSON tree's many small blocks free
     * but resident in this thread's malloc arena; hand them back so that
     * hostile bodies do not ratchet the resident size up. */
    if (rc->len + rc->discarded >= TRIM_AFTER_BODY_BYTES)
        malloc_trim(0);
    free(rc);
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

/* "host:port", "[v6]:port" -> a bound, listening, non-blocking socket. */
static int open_listener(const char *listen_addr, char *bound, size_t bound_cap, int *is_v6,
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
    if (partd_parse_u64(port, 65535, &port_num) != PARTD_OK) {
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

/* A PEM file for --tls-cert/--tls-key, NUL-terminated as libmicrohttpd
 * wants it. */
static char *read_pem(const char *path, char *err, size_t cap)
{
    char *buf;
    size_t len;
    if (partd_read_file(path, (size_t)1 << 24, &buf, &len) != PARTD_OK) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    return buf;
}

static struct MHD_Response *static_json(const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CT_JSON);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    }
    return r;
}

static const char LIVEZ_BODY[] = "{\"status\":\"ok\"}\n";
static const char VERSION_BODY[] =
    "{\"name\":\"partd\",\"version\":\"" PARTD_VERSION "\",\"planner_version\":\""
    PARTD_PLANNER_VERSION "\",\"build\":\"" PARTD_BUILD "\"}\n";

partd_http *partd_http_start(partd_service *svc, char *err, size_t cap, int *exit_code)
{
    const partd_config *cfg = svc->cfg;
    partd_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, cap, "out of memory");
        *exit_code = 70;
        return NULL;
    }
    h->svc = svc;
    h->listen_fd = -1;
    pthread_mutex_init(&h->conns_lock, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (cfg->tls_cert) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, cap, "this libmicrohttpd has no TLS support");
            *exit_code = 70;
            goto fail;
        }
        h->tls_cert = read_pem(cfg->tls_cert, err, cap);
        h->tls_key = h->tls_cert ? read_pem(cfg->tls_key, err, cap) : NULL;
        if (!h->tls_key) {
            *exit_code = 66;
            goto fail;
        }
        flags |= MHD_USE_TLS;
    }
    int is_v6 = 0;
    h->listen_fd = open_listener(cfg->listen, h->address, sizeof h->address, &is_v6, err, cap);
    if (h->listen_fd < 0) {
        *exit_code = 71;
        goto fail;
    }
    if (is_v6)
        flags |= MHD_USE_IPv6;
    h->livez = static_json(LIVEZ_BODY);
    h->version = static_json(VERSION_BODY);
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, h, /* first, to catch every message */
        MHD_OPTION_LISTEN_SOCKET, h->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg->http_threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_connections_per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->conn_memory_bytes,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_ARRAY, cfg->tls_cert ? tls : tls + 2,
        MHD_OPTION_END);
    if (!h->daemon || !h->livez || !h->version) {
        snprintf(err, cap, "cannot start the HTTP server on %s%s", h->address,
                 cfg->tls_cert ? " (check the TLS certificate and key)" : "");
        *exit_code = cfg->tls_cert ? 66 : 71;
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
        MHD_stop_daemon(h->daemon); /* closes the listening socket too */
        h->listen_fd = -1;
    }
    if (h->listen_fd >= 0)
        close(h->listen_fd);
    if (h->livez)
        MHD_destroy_response(h->livez);
    if (h->version)
        MHD_destroy_response(h->version);
    free(h->tls_cert);
    free(h->tls_key);
    pthread_mutex_destroy(&h->conns_lock);
    free(h);
}
