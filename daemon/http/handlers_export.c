/*
 * handlers_export.c - GET /v1/jobs/{id}/export/{format}: a succeeded job's
 * plan as the input of a runtime, the very bytes `partd export --format
 * {format}` makes of its result document (partd/export.h), made from the
 * stored result (cache, else store).
 *
 * An export is a function of the result and the format alone, so its
 * entity tag is the result's hash with "-<format>" appended, and a client
 * that holds it gets 304 without the export being made again. `?strict=1`
 * is `partd export --strict`: what the format says only approximately is
 * refused instead (422). A strict answer is tagged "-<format>-strict": the
 * bytes it serves are the same, but a tag held from a lenient answer must
 * not turn a strict request whose export is refused into a 304.
 *
 * Answers: 200 with the format's Content-Type; 304; 404 for an unknown
 * format (checked first), an unknown job or an expired result; 400 for a
 * `strict` other than 1, true, bare, 0 or false; 409 while the job has no
 * plan (partd__http_answer_from_result); 422 with the export's problem when
 * the format cannot express the plan; 500 when the stored result is not one
 * the export reads (partd wrote it: a bug, never the client's). The format
 * is read from the path as received (rq->path): a percent-encoded name is
 * no format's name. See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_internal.h"
#include "partd/export.h"
#include "partd/partd.h"

typedef struct export_req {
    partd_export_format format;
    unsigned flags;
} export_req;

static enum MHD_Result send_export(struct MHD_Connection *c, partd__http_req *rq,
                                   partd_cache_entry *e, const char *quoted, void *arg)
{
    const export_req *x = arg;
    const partd_blob *doc = &e->forms[PARTD_CODING_IDENTITY];
    partd_problem pb;
    partd_problem_init(&pb);
    char *out = NULL;
    size_t len = 0;
    int rc = partd_export((const char *)doc->data, doc->len, x->format, x->flags, &out, &len, &pb);
    partd_cache_entry_release(e);
    enum MHD_Result r;
    if (rc == PARTD_OK) {
        struct MHD_Response *resp =
            partd__http_response(out, len, partd_export_content_type(x->format));
        if (resp)
            partd__http_result_headers(resp, quoted);
        r = partd__http_queue(c, rq, 200, resp);
    } else if (rc == PARTD_EINVALID && pb.type &&
               strcmp(pb.type, "urn:partd:problem:export-not-expressible") == 0) {
        r = partd__http_send_problem_doc(c, rq, &pb, NULL, NULL);
    } else if (rc == PARTD_ENOMEM) {
        r = partd__http_send_store_error(c, rq, PARTD_ENOMEM);
    } else {
        char detail[256];
        snprintf(detail, sizeof detail, "the stored result cannot be exported: %s",
                 pb.detail ? pb.detail : partd_strerror(rc));
        r = partd__http_send_problem(c, rq, 500, "export-failed", "Cannot export the plan",
                                     detail, NULL, NULL, NULL);
    }
    partd_problem_free(&pb);
    return r;
}

/* The `strict` query parameter: absent, 0 or false lenient; 1, true or
 * bare (`?strict`) strict; -1 for anything else. */
static int strict_of(struct MHD_Connection *c)
{
    const char *v = NULL;
    size_t n = 0;
    if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "strict", 6, &v, &n) != MHD_YES)
        return 0;
    if (!v || n == 0 || strcmp(v, "1") == 0 || strcmp(v, "true") == 0)
        return 1;
    if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
        return 0;
    return -1;
}

enum MHD_Result partd__http_get_export(struct MHD_Connection *c, partd__http_req *rq,
                                       partd_http *h)
{
    const char *name = strrchr(rq->path, '/') + 1; /* the route's last segment */
    export_req x = {PARTD_EXPORT_FORMAT_COUNT, 0};
    if (partd_export_format_parse(name, &x.format) != PARTD_OK) {
        char detail[160];
        snprintf(detail, sizeof detail,
                 "no export format '%.40s'; the formats are torchtitan, pytorch, pytorch-split, "
                 "megatron, deepspeed, fairscale and fx",
                 name);
        return partd__http_send_problem(c, rq, 404, "not-found", "Not found", detail, NULL, NULL,
                                        NULL);
    }
    int strict = strict_of(c);
    if (strict < 0)
        return partd__http_send_problem(c, rq, 400, "bad-query", "Bad query parameter",
                                        "strict: must be 1 or true (or bare), 0 or false", NULL,
                                        NULL, NULL);
    x.flags = strict ? PARTD_EXPORT_STRICT : 0;
    char tag[48];
    snprintf(tag, sizeof tag, "%s%s", partd_export_format_name(x.format),
             strict ? "-strict" : "");
    return partd__http_answer_from_result(c, rq, h, tag, send_export, &x);
}
