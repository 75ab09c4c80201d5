/*
 * http_internal.h - what the files of daemon/http/ share; not for use
 * outside this directory (the public interface is http.h). Its names are
 * partd__http_* (types, functions) and PARTD_HTTP_* (macros, constants).
 *
 * The files and what each owns:
 *   server.c           the libmicrohttpd daemon: start and stop, TLS files,
 *                      connection tracking and slow-sender cutting, a
 *                      request's context from URI to completion (log line,
 *                      metrics sample), the access handler
 *   listener.c         --listen parsing and the listening socket
 *   body.c             request bodies: admission from the headers, collection
 *                      under --max-body-bytes and --max-inflight-bytes,
 *                      Content-Encoding decoding
 *   respond.c          answers: problem documents, job documents, static
 *                      responses
 *   routes.c           the route table, path matching, the Allow header,
 *                      bearer-token authorization
 *   handlers_jobs.c    GET /v1/jobs, GET and DELETE /v1/jobs/{id},
 *                      GET /v1/jobs/{id}/result
 *   handlers_submit.c  POST /v1/jobs
 *   handlers_ops.c     /livez, /readyz, /metrics, /version
 *   handlers_console.c GET /: the console page and its security headers
 *   handlers_plan.c    GET /v1/jobs/{id}/plan.svg (show.h draws it), and
 *                      the steps of every answer made from a job's result
 *   handlers_export.c  GET /v1/jobs/{id}/export/{format} (partd/export.h)
 *   mhd.c              libmicrohttpd, loaded when the server starts
 *                      (partd/dynlib.h): the MHD_* names this folder uses
 *                      call through its table (below)
 *
 * Errors: functions return PARTD_OK or a negative PARTD_E* code
 * (partd/partd.h) and fill an error buffer or problem where the caller needs
 * the reason; predicates return 1 (yes) or 0 (no); functions that answer a
 * request queue the answer themselves and return libmicrohttpd's
 * MHD_Result (MHD_NO closes the connection), as the MHD callbacks do.
 */
#ifndef PARTD_DAEMON_HTTP_INTERNAL_H
#define PARTD_DAEMON_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/encoding.h"
#include "core/id.h"
#include "core/job.h"
#include "core/metrics.h"
#include "http.h"
#include "jobs/cache.h"
#include "jobs/intake.h"
#include "partd/cancel.h"
#include "partd/decode.h"
#include "partd/dynlib.h"
#include "partd/problem.h"
#include "store/store.h"

/* libmicrohttpd's functions, loaded by partd__http_mhd_load (mhd.c) when
 * the server starts; a function added here goes in both lists. */
#define PARTD__HTTP_MHD_FUNCTIONS(X, p)                          \
    X(p, MHD_add_response_header)                                \
    X(p, MHD_create_response_from_buffer)                        \
    X(p, MHD_create_response_from_buffer_with_free_callback_cls) \
    X(p, MHD_destroy_response)                                   \
    X(p, MHD_get_connection_info)                                \
    X(p, MHD_is_feature_supported)                               \
    X(p, MHD_lookup_connection_value)                            \
    X(p, MHD_lookup_connection_value_n)                          \
    X(p, MHD_queue_response)                                     \
    X(p, MHD_start_daemon)                                       \
    X(p, MHD_stop_daemon)

PARTD_DYNLIB_DECLARE(partd__http_mhd, PARTD__HTTP_MHD_FUNCTIONS)

#define MHD_add_response_header PARTD_DYNLIB_FN(partd__http_mhd, MHD_add_response_header)
#define MHD_create_response_from_buffer \
    PARTD_DYNLIB_FN(partd__http_mhd, MHD_create_response_from_buffer)
#define MHD_create_response_from_buffer_with_free_callback_cls                                 \
    PARTD_DYNLIB_FN(partd__http_mhd, MHD_create_response_from_buffer_with_free_callback_cls)
#define MHD_destroy_response PARTD_DYNLIB_FN(partd__http_mhd, MHD_destroy_response)
#define MHD_get_connection_info PARTD_DYNLIB_FN(partd__http_mhd, MHD_get_connection_info)
#define MHD_is_feature_supported PARTD_DYNLIB_FN(partd__http_mhd, MHD_is_feature_supported)
#define MHD_lookup_connection_value PARTD_DYNLIB_FN(partd__http_mhd, MHD_lookup_connection_value)
#define MHD_lookup_connection_value_n \
    PARTD_DYNLIB_FN(partd__http_mhd, MHD_lookup_connection_value_n)
#define MHD_queue_response PARTD_DYNLIB_FN(partd__http_mhd, MHD_queue_response)
#define MHD_start_daemon PARTD_DYNLIB_FN(partd__http_mhd, MHD_start_daemon)
#define MHD_stop_daemon PARTD_DYNLIB_FN(partd__http_mhd, MHD_stop_daemon)

#define PARTD_HTTP_CT_JSON "application/json"
#define PARTD_HTTP_CT_PROBLEM "application/problem+json"

/* One per TCP connection, for the slow-sender deadlines. */
typedef enum {
    PARTD_HTTP_CONN_HEADERS,
    PARTD_HTTP_CONN_BODY,
    PARTD_HTTP_CONN_ANSWERING
} partd__http_conn_phase;

typedef struct partd__http_conn {
    int fd;
    partd__http_conn_phase phase;
    int64_t phase_start_ns;
    int cut;
    /* The request whose body is being decoded on this connection (NULL
     * when none): the loop thread stops its decoding through it (a cut,
     * SIGTERM). Set and cleared by the connection's HTTP thread, read by
     * others, always under partd_http.conns_lock. */
    struct partd__http_req *decoding;
    struct partd__http_conn *prev, *next;
} partd__http_conn;

/* Why a request's decoding was stopped (partd__http_req.stop_why). */
#define PARTD_HTTP_STOP_NONE 0
#define PARTD_HTTP_STOP_TIMEOUT 1  /* --request-timeout-s passed */
#define PARTD_HTTP_STOP_SHUTDOWN 2 /* SIGTERM */

struct partd_http {
    partd_http_context *ctx;
    pthread_mutex_t conns_lock;
    partd__http_conn *conns;
    struct MHD_Daemon *daemon;
    int listen_fd;
    char address[128];
    char *tls_cert, *tls_key;
    struct MHD_Response *livez;
    struct MHD_Response *version;
    struct MHD_Response *console; /* GET /, made once at start */
    /* A 503 problem made at start, for when no answer can be allocated. */
    struct MHD_Response *out_of_memory;
    /* Bytes of request bodies held right now, against --max-inflight-bytes:
     * many large uploads at once cannot exhaust memory. */
    atomic_uint_fast64_t inflight;
};

struct partd__http_route;

/* One request, from the URI callback to the completion callback. */
typedef struct partd__http_req {
    int64_t start_ns;
    partd__http_conn *conn;
    char path[256];            /* without the query, truncated, for the log */
    int routed;
    const struct partd__http_route *entry; /* the table's entry, once allowed */
    partd_route route;         /* the metrics and log label */
    char id[PARTD_ID_LEN + 1];
    char method[8];            /* for the log; "other" when longer */
    int status;                /* the answer's status code, 0 = none yet */
    int takes_body;            /* the body is collected (else ignored) */
    struct partd_intake *intake; /* the body so far (intake.h) */
    struct partd_http *http;   /* for the intake's charges */
    uint64_t charged;          /* bytes counted in partd_http.inflight */
    int too_big;               /* Content-Length over --max-body-bytes */
    int over_budget;           /* --max-inflight-bytes refused the body */
    uint64_t discarded;        /* bytes read and dropped after a refusal */
    partd_coding body_coding;  /* the body's Content-Encoding */
    /* The body's decoding stops when this is raised (a cut, SIGTERM) or its
     * deadline (--request-timeout-s from admission) passes; the intake's
     * decode limits point at it. */
    partd_cancel cancel;
    partd_decode_limits decode_limits;
    atomic_int stop_why;       /* PARTD_HTTP_STOP_*, the first reason given */
    int stop_counted;          /* the stop was logged and counted */
    struct MHD_Response *out_of_memory; /* partd_http's, borrowed */
} partd__http_req;

/* ---- the route table (routes.c) ----------------------------------------- */

/* Answers the request once its body (if any) is in. */
typedef enum MHD_Result (*partd__http_handler)(struct MHD_Connection *c, partd__http_req *rq,
                                               partd_http *h);

/* Decides what the headers alone decide, on the request's first call.
 * Returns 1 when it queued an answer (in *result), 0 to go on. */
typedef int (*partd__http_admit)(struct MHD_Connection *c, partd__http_req *rq, partd_http *h,
                                 enum MHD_Result *result);

typedef struct partd__http_route {
    const char *method;        /* "GET" answers HEAD as well */
    const char *pattern;       /* literal segments, "{id}" (a job id) and
                                * "{name}" (any other word: one segment of
                                * 1 to 32 bytes, read by its handler) */
    partd_route metric;        /* the label in metrics and the log */
    partd__http_admit admit;   /* NULL when the headers decide nothing */
    partd__http_handler handler;
} partd__http_route;

typedef struct partd__http_match {
    const partd__http_route *entry; /* for path and method; NULL when none */
    const char *pattern;       /* the path's pattern; NULL for an unknown path */
    partd_route metric;        /* PARTD_ROUTE_OTHER for an unknown path */
    /* The {id} segment. Also filled when a segment of an id's length was
     * seen but the path did not match, so that the request log names it. */
    char id[PARTD_ID_LEN + 1];
} partd__http_match;

/* Matches a path (without the query) and a method against the table: an
 * unknown path is a 404 (pattern NULL), a known path without an entry for
 * the method a 405 (entry NULL). Cannot fail. */
void partd__http_route_match(const char *path, const char *method, partd__http_match *m);

/* The table itself (n entries), for checks that walk every route. */
const partd__http_route *partd__http_routes(size_t *n);

/* The Allow header for a pattern, from the table ("GET, HEAD, POST").
 * PARTD_OK, or PARTD_ETOOBIG when cap is too small (out is then ""). */
int partd__http_allow(const char *pattern, char *out, size_t cap);

/* 1 when the Authorization header value carries the bearer token (or no
 * token is configured), else 0. */
int partd__http_bearer_ok(const partd_http_context *ctx, const char *authorization);

/* ---- answers (respond.c) ------------------------------------------------ */

/* Queues resp (NULL: MHD_NO) with the status, records the status for the
 * log, and drops the caller's reference. */
enum MHD_Result partd__http_queue(struct MHD_Connection *c, partd__http_req *rq, int status,
                                  struct MHD_Response *resp);

/* A response owning the malloc'd body (freed on failure too); NULL on ENOMEM. */
struct MHD_Response *partd__http_response(char *body, size_t len, const char *type);

/* A JSON response over static text, for answers that never change. */
struct MHD_Response *partd__http_static_json(const char *text);

/* Queues one of the shared static responses with 200 (it stays alive). */
enum MHD_Result partd__http_send_static(struct MHD_Connection *c, partd__http_req *rq,
                                        struct MHD_Response *resp);

/* A problem document, with one extra header when header is not NULL. */
enum MHD_Result partd__http_send_problem_doc(struct MHD_Connection *c, partd__http_req *rq,
                                             const partd_problem *p, const char *header,
                                             const char *value);

/* A problem with one error entry (pointer may be NULL for none). */
enum MHD_Result partd__http_send_problem(struct MHD_Connection *c, partd__http_req *rq, int status,
                                         const char *slug, const char *title,
                                         const char *detail, const char *pointer,
                                         const char *header, const char *value);

/* The job document; 202 adds Location and Retry-After. */
enum MHD_Result partd__http_send_job(struct MHD_Connection *c, partd__http_req *rq, int status,
                                     const partd_job_row *row);

/* 503 for a store failure or PARTD_ENOMEM. */
enum MHD_Result partd__http_send_store_error(struct MHD_Connection *c, partd__http_req *rq,
                                             int err);

/* 404 for a path no route has ("no such resource"; for /v1/jobs/X with X
 * no job id, says what ids look like). */
enum MHD_Result partd__http_send_not_found(struct MHD_Connection *c, partd__http_req *rq);
/* 404 for a job id (rq->id) that names no job: "no job with id ...". */
enum MHD_Result partd__http_send_no_job(struct MHD_Connection *c, partd__http_req *rq);

/* ---- bodies (body.c) ---------------------------------------------------- */

/* 1 when a Content-Type is application/json (parameters allowed), else 0. */
int partd__http_is_json_type(const char *content_type);

/* Admits a JSON body from the headers: 415 for another type or coding,
 * too_big set (nothing answered) when Content-Length is over
 * --max-body-bytes, 503 when the in-flight budget is spent. Returns 1 when
 * it queued an answer, 0 to go on (the body is then collected). */
int partd__http_body_admit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h,
                           enum MHD_Result *result);

/* Hands a piece of the body to the intake; once the body is refused it
 * only counts what it drops. 0 when the connection must close. */
int partd__http_body_take(partd_http *h, partd__http_req *rq, const char *data, size_t n);

/* The intake (rc, its take or end or finish) was stopped by the request's
 * cancel: logs and counts it once. Returns PARTD_HTTP_STOP_TIMEOUT or
 * PARTD_HTTP_STOP_SHUTDOWN. */
int partd__http_body_stopped(partd_http *h, partd__http_req *rq, int rc);

/* Answers a request whose decoding was stopped: 408 request-timeout (with
 * Connection: close) or 503 request-cancelled (shutting down). */
enum MHD_Result partd__http_send_stopped(struct MHD_Connection *c, partd__http_req *rq,
                                         partd_http *h, int rc);

/* 503: the in-flight budget is spent. */
enum MHD_Result partd__http_send_busy(struct MHD_Connection *c, partd__http_req *rq);

/* ---- the listener (listener.c) ------------------------------------------ */

/* "host:port" or "[v6]:port" -> a bound, listening, non-blocking socket;
 * the numeric address bound goes to `bound`. -1 with a sentence in err. */
int partd__http_listen(const char *listen_addr, char *bound, size_t bound_cap, int *is_v6,
                       char *err, size_t cap);

/* ---- handlers ----------------------------------------------------------- */

enum MHD_Result partd__http_list_jobs(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);
enum MHD_Result partd__http_get_job(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);
enum MHD_Result partd__http_delete_job(struct MHD_Connection *c, partd__http_req *rq,
                                       partd_http *h);
enum MHD_Result partd__http_get_result(struct MHD_Connection *c, partd__http_req *rq,
                                       partd_http *h);

int partd__http_submit_admit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h,
                             enum MHD_Result *result);
enum MHD_Result partd__http_submit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);

enum MHD_Result partd__http_livez(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);
enum MHD_Result partd__http_readyz(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);
enum MHD_Result partd__http_metrics(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);
enum MHD_Result partd__http_version(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);

/* The static answers of /livez and /version: h->livez and h->version, NULL
 * on ENOMEM (partd_http_start then fails). */
void partd__http_ops_prepare(partd_http *h);
void partd__http_ops_release(partd_http *h);

/* The console page (console_page.c, generated from
 * daemon/show/console.html by the build): its bytes, not NUL-terminated. */
extern const unsigned char partd_console_page[];
extern const size_t partd_console_page_len;

/* The console's Content-Security-Policy for a page: its inline <script> and
 * <style> blocks allowed by their SHA-256, nothing else from anywhere.
 * PARTD_OK, PARTD_ETOOBIG when cap is too small (out is then ""), or
 * PARTD_ENOMEM when hashing fails. */
int partd__http_console_csp(const unsigned char *page, size_t len, char *out, size_t cap);

/* The page's static answer: h->console, NULL on failure (partd_http_start
 * then fails). */
void partd__http_console_prepare(partd_http *h);
void partd__http_console_release(partd_http *h);
enum MHD_Result partd__http_console(struct MHD_Connection *c, partd__http_req *rq, partd_http *h);

enum MHD_Result partd__http_get_plan_svg(struct MHD_Connection *c, partd__http_req *rq,
                                         partd_http *h);
enum MHD_Result partd__http_get_export(struct MHD_Connection *c, partd__http_req *rq,
                                       partd_http *h);

/* An answer made from a succeeded job's result: called with a reference to
 * the result's cache entry, which it releases, and the answer's quoted
 * entity tag. */
typedef enum MHD_Result (*partd__http_from_result)(struct MHD_Connection *c,
                                                   partd__http_req *rq, partd_cache_entry *e,
                                                   const char *quoted_etag, void *arg);

/* GET of something made from job rq->id's result alone (plan.svg, an
 * export), whose entity tag is the result's hash + "-" + tag: 404 for an
 * unknown job or an expired result, 409 (problem) for a job with no plan
 * (queued or running with Retry-After, failed, cancelled), 304 when
 * If-None-Match holds the tag (answer not called), else answer(). */
enum MHD_Result partd__http_answer_from_result(struct MHD_Connection *c, partd__http_req *rq,
                                               partd_http *h, const char *tag,
                                               partd__http_from_result answer, void *arg);

/* The headers of every answer made from a result (200 and 304): ETag,
 * Cache-Control private with max-age 0, X-Content-Type-Options nosniff. */
void partd__http_result_headers(struct MHD_Response *resp, const char *quoted_etag);

/* The job from the job table (unfinished) or else the store: PARTD_OK,
 * PARTD_STORE_MISSING, or a store error. */
int partd__http_find_job(partd_http_context *ctx, const char *id, partd_job_row *row);

/* A reference to a result document (release it with
 * partd_cache_entry_release): the cache, else the store, checked against
 * its hash (partd_store_load_result), then cached. PARTD_OK,
 * PARTD_STORE_MISSING, PARTD_STORE_DAMAGED, or a store error. */
int partd__http_load_result(partd_http_context *ctx, const char *key, partd_cache_entry **out);

/* ---- pure helpers of the job handlers (unit-tested) --------------------- */

/* RFC 9110 If-None-Match: "*" or a list of (possibly weak) entity tags,
 * compared weakly with a quoted tag. 1 on a match, else 0. */
int partd__http_etag_matches(const char *header, const char *quoted);

/* Idempotency-Key: 1 to 255 visible ASCII characters. 1 when valid. */
int partd__http_idem_key_valid(const char *key);

#define PARTD_HTTP_LIST_DEFAULT_LIMIT 50
#define PARTD_HTTP_LIST_MAX_LIMIT 1000

typedef struct partd__http_list_query {
    int status;                /* partd_job_status, -1 for all */
    uint64_t limit;
    uint64_t before;           /* page_token: seq to continue below, 0 = first page */
} partd__http_list_query;

/* The query of GET /v1/jobs (each parameter NULL when absent). PARTD_OK, or
 * PARTD_EINVALID with *param naming the bad parameter and *detail saying
 * what it must be. */
int partd__http_list_query_parse(const char *status, const char *limit, const char *page_token,
                                 partd__http_list_query *q, const char **param,
                                 const char **detail);

#endif
