/*
 * respond.c - how answers are built and queued: problem documents, job
 * documents, store failures, static JSON responses. Every answer goes
 * through partd__http_queue, which records the status for the request log.
 * See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "partd/partd.h"

enum MHD_Result partd__http_queue(struct MHD_Connection *c, partd__http_req *rq, int status,
                                  struct MHD_Response *resp)
{
    if (!resp) {
        /* The answer could not be allocated: the 503 problem made at start
         * (shared, so not destroyed), rather than a dropped connection. */
        if (!rq->out_of_memory)
            return MHD_NO;
        rq->status = 503;
        return MHD_queue_response(c, 503, rq->out_of_memory);
    }
    rq->status = status;
    enum MHD_Result r = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return r;
}

struct MHD_Response *partd__http_response(char *body, size_t len, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return resp;
}

struct MHD_Response *partd__http_static_json(const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, PARTD_HTTP_CT_JSON);
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    }
    return r;
}

enum MHD_Result partd__http_send_static(struct MHD_Connection *c, partd__http_req *rq,
                                        struct MHD_Response *resp)
{
    rq->status = 200;
    return MHD_queue_response(c, 200, resp);
}

static struct MHD_Response *problem_response(const partd_problem *p)
{
    size_t len = 0;
    char *text = partd_problem_to_json(p, &len);
    if (!text)
        return NULL;
    return partd__http_response(text, len, PARTD_HTTP_CT_PROBLEM);
}

enum MHD_Result partd__http_send_problem_doc(struct MHD_Connection *c, partd__http_req *rq,
                                             const partd_problem *p, const char *header,
                                             const char *value)
{
    struct MHD_Response *resp = problem_response(p);
    if (resp && header)
        MHD_add_response_header(resp, header, value);
    return partd__http_queue(c, rq, p->status ? p->status : 500, resp);
}

enum MHD_Result partd__http_send_problem(struct MHD_Connection *c, partd__http_req *rq, int status,
                                         const char *slug, const char *title,
                                         const char *detail, const char *pointer,
                                         const char *header, const char *value)
{
    partd_problem p;
    partd_problem_init(&p);
    partd_problem_set(&p, status, slug, title, "%s", detail);
    if (pointer)
        partd_problem_add(&p, pointer, "%s", detail);
    enum MHD_Result r = partd__http_send_problem_doc(c, rq, &p, header, value);
    partd_problem_free(&p);
    return r;
}

enum MHD_Result partd__http_send_job(struct MHD_Connection *c, partd__http_req *rq, int status,
                                     const partd_job_row *row)
{
    size_t len = 0;
    char *text = partd_job_to_text(row, &len);
    if (!text)
        return partd__http_send_problem(c, rq, 503, "out-of-memory", "Out of memory",
                                        "the job could not be rendered", NULL, NULL, NULL);
    struct MHD_Response *resp = partd__http_response(text, len, PARTD_HTTP_CT_JSON);
    if (resp && status == 202) {
        char location[64];
        snprintf(location, sizeof location, "/v1/jobs/%s", row->id);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return partd__http_queue(c, rq, status, resp);
}

enum MHD_Result partd__http_send_store_error(struct MHD_Connection *c, partd__http_req *rq, int err)
{
    if (err == PARTD_ENOMEM)
        return partd__http_send_problem(c, rq, 503, "out-of-memory", "Out of memory",
                                        "the server ran out of memory answering this request",
                                        NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
    return partd__http_send_problem(c, rq, 503, "store-unavailable", "Store unavailable",
                                    "the job store could not be read or written; try again later",
                                    NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
}

enum MHD_Result partd__http_send_not_found(struct MHD_Connection *c, partd__http_req *rq)
{
    /* /v1/jobs/<not an id>: most likely an id cut short (the console shows
     * a prefix) */
    const char *seg = strncmp(rq->path, "/v1/jobs/", 9) == 0 ? rq->path + 9 : NULL;
    char detail[160];
    if (seg && *seg && !strchr(seg, '/'))
        snprintf(detail, sizeof detail, "no job with id %.64s: job ids are %d lowercase hex digits",
                 seg, PARTD_ID_LEN);
    else
        snprintf(detail, sizeof detail, "no such resource");
    return partd__http_send_problem(c, rq, 404, "not-found", "Not found", detail, NULL, NULL,
                                    NULL);
}

enum MHD_Result partd__http_send_no_job(struct MHD_Connection *c, partd__http_req *rq)
{
    char detail[PARTD_ID_LEN + 32];
    snprintf(detail, sizeof detail, "no job with id %s", rq->id);
    return partd__http_send_problem(c, rq, 404, "not-found", "Not found", detail, NULL, NULL,
                                    NULL);
}
