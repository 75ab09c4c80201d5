/*
 * handlers_jobs.c - reading and cancelling jobs: GET /v1/jobs (the list,
 * paged), GET and DELETE /v1/jobs/{id}, GET /v1/jobs/{id}/result (content
 * coding negotiation, entity tags, 304). Unfinished jobs come from the job
 * table, finished ones from the store; results from the cache, else the
 * store. See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/text.h"
#include "core/time.h"
#include "http_internal.h"
#include "jobs/jobs.h"
#include "partd/partd.h"

int partd__http_find_job(partd_http_context *ctx, const char *id, partd_job_row *row)
{
    if (partd_jobs_lookup(ctx->jobs, id, row) == PARTD_OK)
        return PARTD_OK;
    return partd_store_get_job(ctx->store, id, row);
}

enum MHD_Result partd__http_get_job(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    partd_job_row row;
    int err = partd__http_find_job(ctx, rq->id, &row);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_no_job(c, rq);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    enum MHD_Result r = partd__http_send_job(c, rq, 200, &row);
    partd_job_row_clear(&row);
    return r;
}

static void release_entry(void *cls)
{
    partd_cache_entry_release(cls);
}

int partd__http_etag_matches(const char *header, const char *quoted)
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
        snprintf(out, cap, "\"%s-%s\"", hash, partd_encoding_name(coding));
}

int partd__http_load_result(partd_http_context *ctx, const char *key, partd_cache_entry **out)
{
    *out = partd_cache_get(ctx->cache, key);
    if (*out)
        return PARTD_OK;
    partd_blob forms[PARTD_CODINGS];
    char *summary = NULL, etag[72];
    int err = partd_store_load_result(ctx->store, key, forms, etag, &summary);
    if (err != PARTD_OK)
        return err;
    partd_cache_put(ctx->cache, key, etag, forms, summary, out);
    return *out ? PARTD_OK : PARTD_ENOMEM;
}

static enum MHD_Result send_result(struct MHD_Connection *c, partd__http_req *rq,
                                   partd_http_context *ctx, const partd_job_row *row)
{
    partd_cache_entry *e;
    int err = partd__http_load_result(ctx, row->cache_key, &e);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_problem(c, rq, 404, "result-expired", "Result expired",
                                        "the job's result is no longer stored (retention)", NULL,
                                        NULL, NULL);
    if (err == PARTD_STORE_DAMAGED)
        return partd__http_send_problem(c, rq, 500, "result-damaged", "Stored result damaged",
                                        "the stored result no longer matches its hash and is not "
                                        "served; submit the request again to plan it anew",
                                        NULL, NULL, NULL);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    const char *accept =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    partd_coding coding = partd_encoding_negotiate(accept, partd_cache_entry_codings(e));
    if (coding == PARTD_CODING_NONE) {
        partd_cache_entry_release(e);
        return partd__http_send_problem(c, rq, 406, "not-acceptable",
                                        "No acceptable content coding",
                                        "the result is available as identity, zstd or gzip, and "
                                        "Accept-Encoding refuses them all",
                                        NULL, NULL, NULL);
    }
    char quoted[96];
    representation_etag(e->etag, coding, quoted, sizeof quoted);
    const char *inm =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    struct MHD_Response *resp;
    int status;
    if (partd__http_etag_matches(inm, quoted)) {
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
            return partd__http_queue(c, rq, 503, NULL); /* the out-of-memory problem */
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, PARTD_HTTP_CT_JSON);
        if (coding != PARTD_CODING_IDENTITY)
            MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
                                    partd_encoding_name(coding));
        status = 200;
    }
    if (!resp)
        return partd__http_queue(c, rq, 503, NULL);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, quoted);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "private, max-age=0");
    return partd__http_queue(c, rq, status, resp);
}

enum MHD_Result partd__http_get_result(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    partd_job_row row;
    int err = partd__http_find_job(ctx, rq->id, &row);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_no_job(c, rq);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    enum MHD_Result r;
    char detail[128];
    switch (row.status) {
    case PARTD_JOB_SUCCEEDED:
        r = send_result(c, rq, ctx, &row);
        break;
    case PARTD_JOB_FAILED:
        if (row.error) {
            size_t len = strlen(row.error);
            struct MHD_Response *resp = partd__http_response(row.error, len, PARTD_HTTP_CT_PROBLEM);
            row.error = NULL; /* owned by the response now */
            r = partd__http_queue(c, rq, row.error_status >= 400 ? row.error_status : 500, resp);
        } else {
            r = partd__http_send_problem(c, rq, 500, "internal-error", "Job failed",
                                         "the job failed and its problem document is lost", NULL,
                                         NULL, NULL);
        }
        break;
    case PARTD_JOB_CANCELLED:
        r = partd__http_send_problem(c, rq, 409, "job-cancelled", "Job cancelled",
                                     "the job was cancelled and has no result", NULL, NULL, NULL);
        break;
    default:
        snprintf(detail, sizeof detail, "the job is %s; poll /v1/jobs/%s until it finishes",
                 partd_job_status_name(row.status), row.id);
        r = partd__http_send_problem(c, rq, 409, "job-not-finished", "Job not finished", detail,
                                     NULL, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        break;
    }
    partd_job_row_clear(&row);
    return r;
}

enum MHD_Result partd__http_delete_job(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    partd_job_row row;
    int err = partd_jobs_cancel(ctx->jobs, rq->id, &row);
    if (err == PARTD_STORE_MISSING) {
        /* Not the engine's: finished, or left queued in the store (accepted
         * while shutting down, or not queued after a failure). Cancelled
         * there it never runs after a restart. */
        err = partd_store_cancel_job(ctx->store, rq->id, partd_time_now_ms(), &row);
        if (err == PARTD_OK) {
            atomic_fetch_add(&ctx->metrics->jobs_finished[PARTD_JOB_CANCELLED], 1);
            partd_log_field f[] = {PARTD_LF_S("id", row.id), PARTD_LF_S("status", "cancelled"),
                                   PARTD_LF_S("cache_key", row.cache_key), PARTD_LF_END};
            partd_log("info", "job", f);
        }
    }
    if (err == PARTD_OK) {
        enum MHD_Result r = partd__http_send_job(c, rq, 200, &row);
        partd_job_row_clear(&row);
        return r;
    }
    if (err == PARTD_EIO)
        return partd__http_send_problem(c, rq, 503, "store-unavailable", "Cancel not recorded",
                                        "the store could not record the cancel (disk full or "
                                        "read-only data directory?); the job goes on unchanged",
                                        NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
    if (err == PARTD_STORE_CONFLICT && partd_jobs_lookup(ctx->jobs, rq->id, &row) == PARTD_OK)
        err = PARTD_OK;
    else if (err == PARTD_STORE_CONFLICT)
        err = partd_store_get_job(ctx->store, rq->id, &row);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_no_job(c, rq);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    char detail[96];
    snprintf(detail, sizeof detail, "the job already finished (%s)",
             partd_job_status_name(row.status));
    partd_job_row_clear(&row);
    return partd__http_send_problem(c, rq, 409, "job-finished", "Job already finished", detail,
                                    NULL, NULL, NULL);
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

static enum MHD_Result bad_query(struct MHD_Connection *c, partd__http_req *rq, const char *param,
                                 const char *detail)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, 400, "bad-query", "Bad query parameter", "%s: %s", param, detail);
    enum MHD_Result r = partd__http_send_problem_doc(c, rq, &p, NULL, NULL);
    partd_problem_free(&p);
    return r;
}

int partd__http_list_query_parse(const char *status, const char *limit, const char *page_token,
                                 partd__http_list_query *q, const char **param, const char **detail)
{
    q->status = -1;
    q->limit = PARTD_HTTP_LIST_DEFAULT_LIMIT;
    q->before = 0;
    if (status && *status && (q->status = partd_job_status_parse(status)) < 0) {
        *param = "status";
        *detail = "must be queued, running, succeeded, failed or cancelled";
        return PARTD_EINVALID;
    }
    if (limit && (partd_text_parse_u64(limit, PARTD_HTTP_LIST_MAX_LIMIT, &q->limit) != PARTD_OK ||
                  q->limit == 0)) {
        *param = "limit";
        *detail = "must be an integer from 1 to 1000";
        return PARTD_EINVALID;
    }
    if (page_token &&
        (partd_text_parse_u64(page_token, INT64_MAX, &q->before) != PARTD_OK || q->before == 0)) {
        *param = "page_token";
        *detail = "is not a token this server gave out";
        return PARTD_EINVALID;
    }
    return PARTD_OK;
}

enum MHD_Result partd__http_list_jobs(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    partd__http_list_query q;
    const char *param = NULL, *detail = NULL;
    if (partd__http_list_query_parse(
            MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "status"),
            MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"),
            MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "page_token"), &q, &param,
            &detail) != PARTD_OK)
        return bad_query(c, rq, param, detail);
    list_ctx lc = {strdup("{\"jobs\":["), 0, (unsigned)q.limit, 0, 0, 0};
    if (!lc.text)
        return partd__http_send_store_error(c, rq, PARTD_ENOMEM);
    lc.len = strlen(lc.text);
    int err = partd_store_list(ctx->store, q.status, (int64_t)q.before, (unsigned)q.limit + 1,
                               list_row, &lc);
    char tail[64];
    if (lc.count > lc.limit)
        snprintf(tail, sizeof tail, "],\"next_page_token\":\"%lld\"}\n", (long long)lc.last_seq);
    else
        snprintf(tail, sizeof tail, "],\"next_page_token\":null}\n");
    size_t tlen = strlen(tail);
    char *text = err == PARTD_OK && !lc.failed ? realloc(lc.text, lc.len + tlen + 1) : NULL;
    if (!text) {
        free(lc.text);
        return partd__http_send_store_error(c, rq, err != PARTD_OK ? err : PARTD_ENOMEM);
    }
    memcpy(text + lc.len, tail, tlen + 1);
    struct MHD_Response *resp = partd__http_response(text, lc.len + tlen, PARTD_HTTP_CT_JSON);
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return partd__http_queue(c, rq, 200, resp);
}
