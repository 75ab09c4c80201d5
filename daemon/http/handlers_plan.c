/*
 * handlers_plan.c - GET /v1/jobs/{id}/plan.svg: the picture of a succeeded
 * job's plan, the very bytes `partd show` makes of its result document
 * (show.h), rendered from the stored result (cache, else store).
 *
 * The picture is a function of the result alone, so its entity tag is the
 * result's hash with "-svg" appended: a client that holds it gets 304
 * without the picture being drawn again. Unfinished, failed and cancelled
 * jobs have no picture (409 problem); an unknown id is 404. The steps that
 * every answer made from a job's result shares (the job, its status, the
 * result, the tag and 304) are partd__http_answer_from_result, which the
 * exports (handlers_export.c) answer through as well. See
 * http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "partd/partd.h"
#include "show/show.h"

#define CT_SVG "image/svg+xml"

/* The picture opened on its own is a document of this origin: it may
 * style itself and nothing more. */
#define SVG_CSP "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'; sandbox"

void partd__http_result_headers(struct MHD_Response *resp, const char *quoted_etag)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, quoted_etag);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "private, max-age=0");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

/* Draws the result's picture; 500 when the stored result cannot be drawn
 * (it is a result partd made, so that is a bug, never the client's). */
static enum MHD_Result send_svg(struct MHD_Connection *c, partd__http_req *rq, partd_cache_entry *e,
                                const char *quoted, void *arg)
{
    (void)arg;
    const partd_blob *doc = &e->forms[PARTD_CODING_IDENTITY];
    partd_buf svg;
    partd_buf_init(&svg);
    char err[256] = "";
    int rc = partd_show_svg((const char *)doc->data, doc->len, &svg, err, sizeof err);
    partd_cache_entry_release(e);
    size_t len = 0;
    char *text = rc == PARTD_OK ? partd_buf_take(&svg, &len) : NULL;
    partd_buf_free(&svg);
    if (rc == PARTD_ENOMEM || (rc == PARTD_OK && !text))
        return partd__http_send_store_error(c, rq, PARTD_ENOMEM);
    if (rc != PARTD_OK)
        return partd__http_send_problem(c, rq, 500, "render-failed", "Cannot draw the plan", err,
                                        NULL, NULL, NULL);
    struct MHD_Response *resp = partd__http_response(text, len, CT_SVG);
    if (resp) {
        partd__http_result_headers(resp, quoted);
        MHD_add_response_header(resp, "Content-Security-Policy", SVG_CSP);
    }
    return partd__http_queue(c, rq, 200, resp);
}

static enum MHD_Result send_from_result(struct MHD_Connection *c, partd__http_req *rq,
                                        partd_http_context *ctx, const partd_job_row *row,
                                        const char *tag, partd__http_from_result answer,
                                        void *arg)
{
    partd_cache_entry *e;
    int err = partd__http_load_result(ctx, row->cache_key, &e);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_problem(c, rq, 404, "result-expired", "Result expired",
                                        "the job's result is no longer stored (retention)", NULL,
                                        NULL, NULL);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    char quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s-%s\"", e->etag, tag);
    const char *inm =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (!partd__http_etag_matches(inm, quoted))
        return answer(c, rq, e, quoted, arg);
    partd_cache_entry_release(e);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    partd__http_result_headers(resp, quoted);
    return partd__http_queue(c, rq, 304, resp);
}

enum MHD_Result partd__http_answer_from_result(struct MHD_Connection *c, partd__http_req *rq,
                                               partd_http *h, const char *tag,
                                               partd__http_from_result answer, void *arg)
{
    partd_http_context *ctx = h->ctx;
    partd_job_row row;
    int err = partd__http_find_job(ctx, rq->id, &row);
    if (err == PARTD_STORE_MISSING)
        return partd__http_send_no_job(c, rq);
    if (err != PARTD_OK)
        return partd__http_send_store_error(c, rq, err);
    enum MHD_Result r;
    char detail[160];
    switch (row.status) {
    case PARTD_JOB_SUCCEEDED:
        r = send_from_result(c, rq, ctx, &row, tag, answer, arg);
        break;
    case PARTD_JOB_FAILED:
        snprintf(detail, sizeof detail,
                 "the job failed and has no plan; its problem document is at /v1/jobs/%s/result",
                 row.id);
        r = partd__http_send_problem(c, rq, 409, "job-failed", "Job failed", detail, NULL, NULL,
                                     NULL);
        break;
    case PARTD_JOB_CANCELLED:
        r = partd__http_send_problem(c, rq, 409, "job-cancelled", "Job cancelled",
                                     "the job was cancelled and has no plan", NULL, NULL, NULL);
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

enum MHD_Result partd__http_get_plan_svg(struct MHD_Connection *c, partd__http_req *rq,
                                         partd_http *h)
{
    return partd__http_answer_from_result(c, rq, h, "svg", send_svg, NULL);
}
