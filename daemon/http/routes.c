/*
 * routes.c - the route table: which method on which path is answered by
 * which handler, and who may reach it. See http_internal.h.
 *
 * The table is the single source of routing: matching a path and method,
 * 404 for an unknown path, 405 with the Allow header for a known path and
 * another method. A new endpoint is one line here plus its handler (and,
 * for a new pattern, its PARTD_ROUTE_* label in metrics.h and metrics.c:
 * metric labels are a closed set, and each is its pattern's text). A "GET"
 * entry also answers HEAD (libmicrohttpd drops the body). A pattern is
 * literal segments, "{id}", a job id (PARTD_ID_LEN lowercase hex), and
 * other "{word}"s, one segment of 1 to PARTD_HTTP_NAME_MAX bytes that the
 * handler reads from the path (an export's format); a trailing slash or
 * any other extra text is another path. The entries of
 * one pattern carry the same metric, and their order in the table is the
 * order of the Allow header.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/text.h"
#include "http_internal.h"
#include "partd/partd.h"

#define PARTD_HTTP_NAME_MAX 32

static const partd__http_route ROUTES[] = {
    {"GET", "/v1/jobs", PARTD_ROUTE_JOBS, NULL, partd__http_list_jobs},
    {"POST", "/v1/jobs", PARTD_ROUTE_JOBS, partd__http_submit_admit, partd__http_submit},
    {"GET", "/v1/jobs/{id}", PARTD_ROUTE_JOB, NULL, partd__http_get_job},
    {"DELETE", "/v1/jobs/{id}", PARTD_ROUTE_JOB, NULL, partd__http_delete_job},
    {"GET", "/v1/jobs/{id}/result", PARTD_ROUTE_JOB_RESULT, NULL, partd__http_get_result},
    {"GET", "/v1/jobs/{id}/plan.svg", PARTD_ROUTE_JOB_PLAN_SVG, NULL, partd__http_get_plan_svg},
    {"GET", "/v1/jobs/{id}/export/{format}", PARTD_ROUTE_JOB_EXPORT, NULL, partd__http_get_export},
    {"GET", "/", PARTD_ROUTE_CONSOLE, NULL, partd__http_console},
    {"GET", "/livez", PARTD_ROUTE_LIVEZ, NULL, partd__http_livez},
    {"GET", "/readyz", PARTD_ROUTE_READYZ, NULL, partd__http_readyz},
    {"GET", "/metrics", PARTD_ROUTE_METRICS, NULL, partd__http_metrics},
    {"GET", "/version", PARTD_ROUTE_VERSION, NULL, partd__http_version},
};

#define N_ROUTES (sizeof ROUTES / sizeof ROUTES[0])

const partd__http_route *partd__http_routes(size_t *n)
{
    *n = N_ROUTES;
    return ROUTES;
}

/* 1 when the path is the pattern. An "{id}" segment of the right length is
 * copied to id before it is checked (see partd__http_match.id). */
static int path_matches(const char *pattern, const char *path, char id[PARTD_ID_LEN + 1])
{
    while (*pattern) {
        if (strncmp(pattern, "{id}", 4) == 0) {
            size_t n = strcspn(path, "/");
            if (n != PARTD_ID_LEN)
                return 0;
            memcpy(id, path, n);
            id[n] = '\0';
            if (!partd_id_valid(id))
                return 0;
            pattern += 4;
            path += n;
            continue;
        }
        if (*pattern == '{') { /* a named segment: its handler reads it */
            size_t n = strcspn(path, "/");
            if (n == 0 || n > PARTD_HTTP_NAME_MAX)
                return 0;
            pattern += strcspn(pattern, "}") + 1;
            path += n;
            continue;
        }
        if (*pattern != *path)
            return 0;
        pattern++;
        path++;
    }
    return *path == '\0';
}

static int method_matches(const char *entry_method, const char *method)
{
    if (strcmp(entry_method, method) == 0)
        return 1;
    return strcmp(entry_method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

void partd__http_route_match(const char *path, const char *method, partd__http_match *m)
{
    memset(m, 0, sizeof *m);
    m->metric = PARTD_ROUTE_OTHER;
    for (size_t i = 0; i < N_ROUTES; i++) {
        const partd__http_route *r = &ROUTES[i];
        /* After the path's pattern is found only its other methods count. */
        int same_path = m->pattern ? strcmp(r->pattern, m->pattern) == 0
                                   : path_matches(r->pattern, path, m->id);
        if (!same_path)
            continue;
        m->pattern = r->pattern;
        m->metric = r->metric;
        if (method_matches(r->method, method)) {
            m->entry = r;
            return;
        }
    }
}

int partd__http_allow(const char *pattern, char *out, size_t cap)
{
    size_t len = 0;
    if (cap)
        out[0] = '\0';
    for (size_t i = 0; i < N_ROUTES; i++) {
        if (strcmp(ROUTES[i].pattern, pattern) != 0)
            continue;
        int is_get = strcmp(ROUTES[i].method, "GET") == 0;
        int n = snprintf(out + len, cap - len, "%s%s%s", len ? ", " : "", ROUTES[i].method,
                         is_get ? ", HEAD" : "");
        if (n < 0 || (size_t)n >= cap - len) {
            if (cap)
                out[0] = '\0';
            return PARTD_ETOOBIG;
        }
        len += (size_t)n;
    }
    return PARTD_OK;
}

int partd__http_bearer_ok(const partd_http_context *ctx, const char *auth)
{
    if (!ctx->token)
        return 1;
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return 0;
    const char *token = auth + 7;
    while (*token == ' ')
        token++;
    return partd_text_secret_equal(token, strlen(token), ctx->token, ctx->token_len);
}
