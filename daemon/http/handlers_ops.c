/*
 * handlers_ops.c - the operational endpoints: GET /livez, /readyz,
 * /metrics and /version. /livez and /version are static answers made once
 * at start; readiness looks at the lifecycle phase, the store (its health
 * and its room under --store-max-bytes) and the data directory's free
 * space, both against what a job needs, never at the queue: a full queue
 * is a 429 on
 * POST, and a replica taken out of service for it would also stop answering
 * the polls of the jobs it holds. See http_internal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "http_internal.h"
#include "partd/partd.h"

#ifndef PARTD_BUILD
#define PARTD_BUILD "unknown"
#endif

static const char LIVEZ_BODY[] = "{\"status\":\"ok\"}\n";
static const char OUT_OF_MEMORY_BODY[] =
    "{\"type\":\"urn:partd:problem:out-of-memory\",\"title\":\"Out of memory\","
    "\"status\":503,\"detail\":\"the server ran out of memory answering this request\","
    "\"errors\":[]}\n";
static const char VERSION_BODY[] =
    "{\"name\":\"partd\",\"version\":\"" PARTD_VERSION "\",\"planner_version\":\""
    PARTD_PLANNER_VERSION "\",\"build\":\"" PARTD_BUILD "\"}\n";

void partd__http_ops_prepare(partd_http *h)
{
    h->livez = partd__http_static_json(LIVEZ_BODY);
    h->version = partd__http_static_json(VERSION_BODY);
    h->out_of_memory = MHD_create_response_from_buffer(
        strlen(OUT_OF_MEMORY_BODY), (void *)OUT_OF_MEMORY_BODY, MHD_RESPMEM_PERSISTENT);
    if (h->out_of_memory) {
        MHD_add_response_header(h->out_of_memory, MHD_HTTP_HEADER_CONTENT_TYPE,
                                PARTD_HTTP_CT_PROBLEM);
        MHD_add_response_header(h->out_of_memory, MHD_HTTP_HEADER_RETRY_AFTER, "5");
        MHD_add_response_header(h->out_of_memory, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    }
}

void partd__http_ops_release(partd_http *h)
{
    if (h->livez)
        MHD_destroy_response(h->livez);
    if (h->version)
        MHD_destroy_response(h->version);
    if (h->out_of_memory)
        MHD_destroy_response(h->out_of_memory);
    h->livez = h->version = h->out_of_memory = NULL;
}

enum MHD_Result partd__http_livez(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    return partd__http_send_static(c, rq, h->livez);
}

enum MHD_Result partd__http_version(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    return partd__http_send_static(c, rq, h->version);
}

/* Why the store cannot take the next job now, or NULL: the data directory
 * is read-only or has less free space than a job needs, or the store is
 * within a job of its --store-max-bytes (where POST would answer 503).
 * What a job needs follows what jobs have written (store.h), so a small
 * file system serves small jobs. Checked on every probe, so readiness
 * returns by itself once space does. */
static const char *store_space_problem(partd_http_context *ctx, char *buf, size_t cap)
{
    uint64_t need = partd_store_job_bytes(ctx->store);
    uint64_t room = 0;
    if (partd_store_room(ctx->store, &room) == PARTD_OK && room < need) {
        snprintf(buf, cap, "the store is at its size cap (--store-max-bytes): %llu bytes "
                 "left, a job needs about %llu", (unsigned long long)room,
                 (unsigned long long)need);
        return buf;
    }
    uint64_t avail = 0;
    int read_only = 0;
    if (partd_fs_space(ctx->settings.data_dir, &avail, &read_only) != PARTD_OK)
        return NULL; /* cannot tell: the store's own health decides */
    if (read_only)
        return "the data directory is on a read-only file system";
    if (avail < need) {
        snprintf(buf, cap, "the data directory has %llu bytes free (a job needs about %llu)",
                 (unsigned long long)avail, (unsigned long long)need);
        return buf;
    }
    return NULL;
}

static int is_ready(partd_http_context *ctx)
{
    char buf[160];
    return atomic_load(&ctx->phase) == PARTD_HTTP_READY && partd_store_healthy(ctx->store) &&
           !store_space_problem(ctx, buf, sizeof buf);
}

enum MHD_Result partd__http_readyz(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    int phase = atomic_load(&ctx->phase);
    const char *why = NULL;
    char space[160];
    /* After a failed write the store stays unhealthy until a write works:
     * with space back, try one now so that readiness returns by itself. */
    if (phase == PARTD_HTTP_READY && !partd_store_healthy(ctx->store) &&
        !store_space_problem(ctx, space, sizeof space))
        partd_store_probe(ctx->store);
    if (phase == PARTD_HTTP_STARTING)
        why = "starting: recovering queued jobs";
    else if (phase == PARTD_HTTP_DRAINING)
        why = "draining: shutting down";
    else if (!partd_store_healthy(ctx->store))
        why = "the store cannot be written";
    if (!why)
        why = store_space_problem(ctx, space, sizeof space);
    if (why)
        return partd__http_send_problem(c, rq, 503, "not-ready", "Not ready", why, NULL,
                                        MHD_HTTP_HEADER_RETRY_AFTER, "1");
    char *text = strdup("{\"status\":\"ready\"}\n");
    if (!text)
        return partd__http_queue(c, rq, 503, NULL); /* the out-of-memory problem */
    return partd__http_queue(c, rq, 200,
                             partd__http_response(text, strlen(text), PARTD_HTTP_CT_JSON));
}

enum MHD_Result partd__http_metrics(struct MHD_Connection *c, partd__http_req *rq, partd_http *h)
{
    partd_http_context *ctx = h->ctx;
    partd_cache_stats cs;
    partd_cache_stats_get(ctx->cache, &cs);
    partd_metrics_gauges g = {cs.bytes, cs.entries, is_ready(ctx), 0, -1, 0};
    struct partd_store *shared = atomic_load(&ctx->metrics->shared_store);
    if (shared) {
        g.shared = 1;
        g.shared_queued = partd_store_count_queued(shared);
        g.store_round_trips = partd_store_round_trips(shared);
    }
    size_t len = 0;
    char *text = partd_metrics_render(ctx->metrics, &g, &len);
    if (!text)
        return partd__http_send_store_error(c, rq, PARTD_ENOMEM);
    return partd__http_queue(c, rq, 200,
                             partd__http_response(text, len,
                                                  "text/plain; version=0.0.4; charset=utf-8"));
}
