/*
 * handlers_submit.c - POST /v1/jobs: admission from the headers (the
 * lifecycle phase, then the body's type, coding and length through body.c),
 * Idempotency-Key replays, decoding and validation of the request, answers
 * from the result cache, and committing the job before it is queued. See
 * http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/time.h"
#include "http_internal.h"
#include "jobs/jobs.h"
#include "partd/decode.h"
#include "partd/hash.h"
#include "partd/partd.h"

#define IDEM_KEY_MAX 255

int partd__http_idem_key_valid(const char *k)
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
static enum MHD_Result replay(struct MHD_Connection *c, partd__http_req *rq,
                              partd_http_context *ctx, partd_job_row *stored,
                              const char *stored_digest, const char *digest)
{
    if (strcmp(stored_digest, digest) != 0) {
        partd_job_row_clear(stored);
        return partd__http_send_problem(
            c, rq, 422, "idempotency-key-reused", "Idempotency-Key reused",
            "this Idempotency-Key was used with a different request body", NULL, NULL, NULL);
    }
    /* The table is fresher than the store for unfinished jobs. */
    partd_job_row live;
    if (partd_jobs_lookup(ctx->jobs, stored->id, &live) == PARTD_OK) {
        partd_job_row_clear(stored);
        *stored = live;
    }
    enum MHD_Result r =
        partd__http_send_job(c, rq, partd_job_finished(stored->status) ? 200 : 202, stored);
    partd_job_row_clear(stored);
    return r;
}

static enum MHD_Result decode_failed(struct MHD_Connection *c, partd__http_req *rq, int err,
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
    return partd__http_send_problem_doc(c, rq, p, NULL, NULL);
}

/* A finished job answered from a stored result; 0 when there is none. */
static int cached_summary(partd_http_context *ctx, const char *key, char **summary)
{
    partd_cache_entry *e = partd_cache_get(ctx->cache, key);
    if (e) {
        /* The retention sweep may have just deleted the stored copy: the
         * touch says so, and then it is a miss. */
        int err = partd_store_touch_result(ctx->store, key, partd_time_now_ms());
        if (err == PARTD_STORE_MISSING)
            partd_cache_remove(ctx->cache, key);
        *summary = err == PARTD_OK ? strdup(e->summary) : NULL;
        partd_cache_entry_release(e);
        return *summary != NULL;
    }
    if (partd__http_load_result(ctx, key, &e) != PARTD_OK)
        return 0;
    partd_store_touch_result(ctx->store, key, partd_time_now_ms());
    *summary = strdup(e->summary);
    partd_cache_entry_release(e);
    return *summary != NULL;
}

/* The body itself was refused: too large, undecodable, or no memory. */
static enum MHD_Result body_refused(struct MHD_Connection *c, partd__http_req *rq, partd_problem *p)
{
    /* The connection's state after a dropped body is not worth keeping. */
    enum MHD_Result r = partd__http_send_problem_doc(
        c, rq, p, p->status == 413 ? MHD_HTTP_HEADER_CONNECTION : NULL,
        p->status == 413 ? "close" : NULL);
    partd_problem_free(p);
    return r;
}

static enum MHD_Result accept_job(struct MHD_Connection *c, partd__http_req *rq,
                                  partd_http_context *ctx, partd_request *req, const char *idem,
                                  const char *digest, const partd_blob *packed);

static enum MHD_Result submit(struct MHD_Connection *c, partd__http_req *rq,
                              partd_http_context *ctx)
{
    if (rq->too_big) {
        char detail[128];
        snprintf(detail, sizeof detail, "the body is larger than %llu bytes (--max-body-bytes)",
                 (unsigned long long)ctx->settings.max_body_bytes);
        /* The connection's state after an unread or dropped body is not
         * worth keeping. */
        return partd__http_send_problem(c, rq, 413, "body-too-large", "Body too large", detail,
                                        NULL, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    if (rq->over_budget)
        return partd__http_send_busy(c, rq);
    const char *idem = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
    if (idem && !partd__http_idem_key_valid(idem))
        return partd__http_send_problem(
            c, rq, 400, "bad-idempotency-key", "Bad Idempotency-Key",
            "Idempotency-Key must be 1 to 255 visible ASCII characters", NULL, NULL, NULL);
    partd_problem problem;
    partd_problem_init(&problem);
    char digest[72] = "";
    int err = partd_intake_end(rq->intake, digest, &problem);
    if (err == PARTD_ECANCELLED || err == PARTD_ETIMEOUT) {
        partd_problem_free(&problem);
        return partd__http_send_stopped(c, rq, rq->http, err);
    }
    if (err != PARTD_OK)
        return body_refused(c, rq, &problem);
    if (idem) {
        partd_job_row stored;
        char stored_digest[72];
        err = partd_store_get_job_by_idem(ctx->store, idem, &stored, stored_digest);
        if (err == PARTD_OK) {
            partd_problem_free(&problem);
            return replay(c, rq, ctx, &stored, stored_digest, digest);
        }
        if (err != PARTD_STORE_MISSING) {
            partd_problem_free(&problem);
            return partd__http_send_store_error(c, rq, err);
        }
    }

    partd_request *req = NULL;
    partd_blob packed;
    err = partd_intake_finish(rq->intake, &req, &packed, &problem);
    if (err == PARTD_ECANCELLED || err == PARTD_ETIMEOUT) {
        partd_problem_free(&problem);
        return partd__http_send_stopped(c, rq, rq->http, err);
    }
    if (err != PARTD_OK) {
        enum MHD_Result r = decode_failed(c, rq, err, &problem);
        partd_problem_free(&problem);
        return r;
    }
    partd_problem_free(&problem);
    enum MHD_Result r = accept_job(c, rq, ctx, req, idem, digest, &packed);
    free(packed.data);
    return r;
}

/* Answers a decoded request: from the cache, or by committing a new job. */
static enum MHD_Result accept_job(struct MHD_Connection *c, partd__http_req *rq,
                                  partd_http_context *ctx, partd_request *req, const char *idem,
                                  const char *digest, const partd_blob *packed)
{
    int err;
    partd_job_row row;
    memset(&row, 0, sizeof row);
    if (partd_id_new(row.id) != PARTD_OK) {
        partd_request_free(req);
        return partd__http_send_problem(c, rq, 503, "no-entropy", "No entropy",
                                        "the kernel gave no random bytes for a job id", NULL, NULL,
                                        NULL);
    }
    row.created_ms = partd_time_now_ms();
    snprintf(row.graph_hash, sizeof row.graph_hash, "%s", req->graph_hash);
    snprintf(row.cache_key, sizeof row.cache_key, "%s", req->cache_key);
    partd_job_about(req, row.about); /* out of memory: the job says less, and works */

    char *summary = NULL;
    int reserved = 0;
    if (cached_summary(ctx, row.cache_key, &summary)) {
        partd_request_free(req);
        req = NULL;
        row.status = PARTD_JOB_SUCCEEDED;
        row.started_ms = row.finished_ms = row.created_ms;
        row.cached = 1;
        row.summary = summary;
    } else {
        if (!partd_jobs_reserve(ctx->jobs)) {
            partd_request_free(req);
            char detail[128];
            snprintf(detail, sizeof detail, "%llu jobs are waiting (--queue-max); retry later",
                     (unsigned long long)ctx->settings.queue_max);
            return partd__http_send_problem(c, rq, 429, "queue-full", "Queue full", detail, NULL,
                                            MHD_HTTP_HEADER_RETRY_AFTER, "5");
        }
        reserved = 1;
        row.status = PARTD_JOB_QUEUED;
    }

    /* Committed before the answer goes out: a 202 survives a crash. */
    err = partd_store_insert_job(ctx->store, &row, idem, idem ? digest : NULL, packed->data,
                                 packed->len);
    if (err != PARTD_OK) {
        if (reserved)
            partd_jobs_unreserve(ctx->jobs);
        partd_request_free(req);
        partd_job_row_clear(&row);
        if (err == PARTD_STORE_CONFLICT) {
            /* A concurrent request with the same key won the race. */
            partd_job_row stored;
            char stored_digest[72];
            err = partd_store_get_job_by_idem(ctx->store, idem, &stored, stored_digest);
            if (err == PARTD_OK)
                return replay(c, rq, ctx, &stored, stored_digest, digest);
        }
        return partd__http_send_store_error(c, rq, err);
    }
    atomic_fetch_add(&ctx->metrics->jobs_submitted, 1);
    enum MHD_Result r;
    if (row.status == PARTD_JOB_SUCCEEDED) {
        atomic_fetch_add(&ctx->metrics->cache_hits, 1);
        atomic_fetch_add(&ctx->metrics->jobs_finished[PARTD_JOB_SUCCEEDED], 1);
        partd_log_field f[] = {PARTD_LF_S("id", row.id), PARTD_LF_S("status", "succeeded"),
                               PARTD_LF_S("cache_key", row.cache_key), PARTD_LF_N("cached", 1),
                               PARTD_LF_END};
        partd_log("info", "job", f);
        r = partd__http_send_job(c, rq, 200, &row);
    } else {
        atomic_fetch_add(&ctx->metrics->cache_misses, 1);
        /* If the engine no longer takes jobs (shutting down) the job stays
         * queued in the store and runs after the restart. Without memory to
         * hand it over it would wait for a restart unseen: withdrawn (no
         * one has its id yet) and answered 503. */
        if (partd_jobs_submit(ctx->jobs, &row, req) == PARTD_ENOMEM &&
            partd_store_cancel_job(ctx->store, row.id, partd_time_now_ms(), NULL) == PARTD_OK) {
            partd_job_row_clear(&row);
            return partd__http_send_store_error(c, rq, PARTD_ENOMEM);
        }
        r = partd__http_send_job(c, rq, 202, &row);
    }
    partd_job_row_clear(&row);
    return r;
}

int partd__http_submit_admit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h,
                             enum MHD_Result *result)
{
    partd_http_context *ctx = h->ctx;
    if (atomic_load(&ctx->phase) != PARTD_HTTP_READY) {
        *result = partd__http_send_problem(c, rq, 503, "not-accepting", "Not accepting jobs",
                                           atomic_load(&ctx->phase) == PARTD_HTTP_DRAINING
                                              ? "the server is shutting down"
                                              : "the server is starting",
                                          NULL, MHD_HTTP_HEADER_RETRY_AFTER, "5");
        return 1;
    }
    if (partd__http_body_admit(c, rq, h, result))
        return 1;
    if (rq->too_big) {
        /* Answered before reading a byte of the body. */
        *result = submit(c, rq, ctx);
        return 1;
    }
    return 0;
}

enum MHD_Result partd__http_submit(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    return submit(c, rq, h->ctx);
}
