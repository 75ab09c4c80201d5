/* test_http.c - the HTTP layer (daemon/http/): the route table (matching,
 * ids, unknown paths, 405 and the Allow header), bearer tokens, the pure
 * helpers of the handlers (If-None-Match, Idempotency-Key, the list query,
 * Content-Type), the listener, and the server core end to end on a loopback
 * port with libcurl (answers that need neither store nor job engine). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "core/job.h"
#include "http/http_internal.h"
#include "partd/partd.h"
#include "serve/config.h"

#define ID "0123456789abcdef0123456789abcdef"

/* ---- the route table ---------------------------------------------------- */

static void match(const char *path, const char *method, partd__http_match *m)
{
    partd__http_route_match(path, method, m);
}

static void assert_routed(const char *path, const char *method, partd__http_handler handler,
                          partd_route metric, const char *id)
{
    partd__http_match m;
    match(path, method, &m);
    assert_non_null(m.entry);
    assert_non_null(m.pattern);
    assert_ptr_equal(m.entry->handler, handler);
    assert_int_equal(m.metric, metric);
    assert_string_equal(m.id, id);
}

static void test_every_route_matches(void **state)
{
    (void)state;
    assert_routed("/v1/jobs", "GET", partd__http_list_jobs, PARTD_ROUTE_JOBS, "");
    assert_routed("/v1/jobs", "HEAD", partd__http_list_jobs, PARTD_ROUTE_JOBS, "");
    assert_routed("/v1/jobs", "POST", partd__http_submit, PARTD_ROUTE_JOBS, "");
    assert_routed("/v1/jobs/" ID, "GET", partd__http_get_job, PARTD_ROUTE_JOB, ID);
    assert_routed("/v1/jobs/" ID, "HEAD", partd__http_get_job, PARTD_ROUTE_JOB, ID);
    assert_routed("/v1/jobs/" ID, "DELETE", partd__http_delete_job, PARTD_ROUTE_JOB, ID);
    assert_routed("/v1/jobs/" ID "/result", "GET", partd__http_get_result,
                  PARTD_ROUTE_JOB_RESULT, ID);
    assert_routed("/v1/jobs/" ID "/plan.svg", "GET", partd__http_get_plan_svg,
                  PARTD_ROUTE_JOB_PLAN_SVG, ID);
    assert_routed("/v1/jobs/" ID "/export/pytorch", "GET", partd__http_get_export,
                  PARTD_ROUTE_JOB_EXPORT, ID);
    /* any short segment: the handler answers 404 for an unknown format */
    assert_routed("/v1/jobs/" ID "/export/no-such-format", "HEAD", partd__http_get_export,
                  PARTD_ROUTE_JOB_EXPORT, ID);
    assert_routed("/", "GET", partd__http_console, PARTD_ROUTE_CONSOLE, "");
    assert_routed("/", "HEAD", partd__http_console, PARTD_ROUTE_CONSOLE, "");
    assert_routed("/livez", "GET", partd__http_livez, PARTD_ROUTE_LIVEZ, "");
    assert_routed("/readyz", "HEAD", partd__http_readyz, PARTD_ROUTE_READYZ, "");
    assert_routed("/metrics", "GET", partd__http_metrics, PARTD_ROUTE_METRICS, "");
    assert_routed("/version", "GET", partd__http_version, PARTD_ROUTE_VERSION, "");

    /* Only submission decides anything from the headers alone. */
    partd__http_match m;
    match("/v1/jobs", "POST", &m);
    assert_ptr_equal(m.entry->admit, partd__http_submit_admit);
    match("/v1/jobs", "GET", &m);
    assert_null(m.entry->admit);
}

/* Walks the whole table, so that a new line is checked without a new test:
 * its sample path reaches it, its label is its pattern, Allow names it. */
static void test_table_is_consistent(void **state)
{
    (void)state;
    size_t n = 0;
    const partd__http_route *routes = partd__http_routes(&n);
    assert_true(n >= 9);
    for (size_t i = 0; i < n; i++) {
        char path[256], allow[64];
        const char *brace = strstr(routes[i].pattern, "{id}");
        if (brace)
            snprintf(path, sizeof path, "%.*s%s%s", (int)(brace - routes[i].pattern),
                     routes[i].pattern, ID, brace + 4);
        else
            snprintf(path, sizeof path, "%s", routes[i].pattern);
        char *word = strchr(path, '{'); /* another named segment: a word */
        if (word)
            memcpy(word, "fx", 3);
        partd__http_match m;
        match(path, routes[i].method, &m);
        assert_ptr_equal(m.entry, &routes[i]);
        assert_string_equal(m.pattern, routes[i].pattern);
        assert_string_equal(partd_metrics_route_label(routes[i].metric), routes[i].pattern);
        assert_non_null(routes[i].handler);
        assert_int_equal(partd__http_allow(routes[i].pattern, allow, sizeof allow), PARTD_OK);
        assert_non_null(strstr(allow, routes[i].method));
    }
}

static void assert_not_found(const char *path)
{
    partd__http_match m;
    match(path, "GET", &m);
    assert_null(m.entry);
    assert_null(m.pattern);
    assert_int_equal(m.metric, PARTD_ROUTE_OTHER);
}

static void test_unknown_paths_are_not_found(void **state)
{
    (void)state;
    const char *paths[] = {
        "", "//", "/index.html", "/v1", "/v1/", "/v1/jobs/", "/v1/jobsx", "/V1/JOBS", "/v1/jobs?x",
        "/v1/jobs/" ID "/", "/v1/jobs/" ID "/result/", "/v1/jobs/" ID "/results",
        "/v1/jobs/" ID "/plan.svg/", "/v1/jobs/" ID "/plan", "/v1/jobs/" ID "/plan.svgz",
        "/v1/jobs/" ID "0", "/v1/jobs/0123456789abcdef0123456789abcde",
        "/v1/jobs/0123456789ABCDEF0123456789abcdef", "/v1/jobs/{id}", "/v1/jobs//result",
        "/v1/jobs/" ID "//result", "/v1/jobs/" ID "/export", "/v1/jobs/" ID "/export/",
        "/v1/jobs/" ID "/export/fx/", "/v1/jobs/" ID "/export/fx/x", "/v1/jobs/" ID "/exports/fx",
        "/v1/jobs/" ID "/export/0123456789abcdef0123456789abcdefX", "/livez/", "/livezz", "//livez", "/metrics/x", "/version/",
    };
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        assert_not_found(paths[i]);
}

/* The request log names the id of a path that looked like a job's even when
 * nothing matched; an id of another length is not recorded. */
static void test_id_of_unmatched_path_is_kept_for_the_log(void **state)
{
    (void)state;
    partd__http_match m;
    match("/v1/jobs/" ID "/plan", "GET", &m);
    assert_null(m.pattern);
    assert_string_equal(m.id, ID);
    match("/v1/jobs/abc/result", "GET", &m);
    assert_null(m.pattern);
    assert_string_equal(m.id, "");
    match("/livez", "GET", &m);
    assert_string_equal(m.id, "");
}

static void assert_not_allowed(const char *path, const char *method, partd_route metric,
                               const char *allow)
{
    partd__http_match m;
    char got[64];
    match(path, method, &m);
    assert_null(m.entry);
    assert_non_null(m.pattern);
    assert_int_equal(m.metric, metric);
    assert_int_equal(partd__http_allow(m.pattern, got, sizeof got), PARTD_OK);
    assert_string_equal(got, allow);
}

static void test_other_methods_are_not_allowed(void **state)
{
    (void)state;
    assert_not_allowed("/v1/jobs", "PUT", PARTD_ROUTE_JOBS, "GET, HEAD, POST");
    assert_not_allowed("/v1/jobs", "DELETE", PARTD_ROUTE_JOBS, "GET, HEAD, POST");
    assert_not_allowed("/v1/jobs", "get", PARTD_ROUTE_JOBS, "GET, HEAD, POST");
    assert_not_allowed("/v1/jobs/" ID, "POST", PARTD_ROUTE_JOB, "GET, HEAD, DELETE");
    assert_not_allowed("/v1/jobs/" ID "/result", "DELETE", PARTD_ROUTE_JOB_RESULT, "GET, HEAD");
    assert_not_allowed("/livez", "POST", PARTD_ROUTE_LIVEZ, "GET, HEAD");
    assert_not_allowed("/readyz", "OPTIONS", PARTD_ROUTE_READYZ, "GET, HEAD");
    assert_not_allowed("/metrics", "", PARTD_ROUTE_METRICS, "GET, HEAD");
    assert_not_allowed("/version", "HEADX", PARTD_ROUTE_VERSION, "GET, HEAD");
}

static void test_allow_errors(void **state)
{
    (void)state;
    char out[16] = "junk";
    assert_int_equal(partd__http_allow("/nowhere", out, sizeof out), PARTD_OK);
    assert_string_equal(out, "");
    /* "GET, HEAD, POST" needs 16 bytes. */
    assert_int_equal(partd__http_allow("/v1/jobs", out, 15), PARTD_ETOOBIG);
    assert_string_equal(out, "");
    assert_int_equal(partd__http_allow("/v1/jobs", out, 16), PARTD_OK);
    assert_string_equal(out, "GET, HEAD, POST");
    assert_int_equal(partd__http_allow("/livez", out, 4), PARTD_ETOOBIG);
    assert_string_equal(out, "");
}

/* ---- authorization ------------------------------------------------------ */

static void test_bearer_token(void **state)
{
    (void)state;
    partd_http_context open_ctx = {0};
    assert_true(partd__http_bearer_ok(&open_ctx, NULL));
    assert_true(partd__http_bearer_ok(&open_ctx, "Basic x"));

    char token[] = "s3cret";
    partd_http_context ctx = {0};
    ctx.token = token;
    ctx.token_len = strlen(token);
    assert_true(partd__http_bearer_ok(&ctx, "Bearer s3cret"));
    assert_true(partd__http_bearer_ok(&ctx, "bearer    s3cret"));
    assert_false(partd__http_bearer_ok(&ctx, NULL));
    assert_false(partd__http_bearer_ok(&ctx, ""));
    assert_false(partd__http_bearer_ok(&ctx, "s3cret"));
    assert_false(partd__http_bearer_ok(&ctx, "Basic s3cret"));
    assert_false(partd__http_bearer_ok(&ctx, "Bearer s3cre"));
    assert_false(partd__http_bearer_ok(&ctx, "Bearer s3cret "));
    assert_false(partd__http_bearer_ok(&ctx, "Bearer S3CRET"));
    assert_false(partd__http_bearer_ok(&ctx, "Bearer"));
}

/* ---- pure helpers ------------------------------------------------------- */

static void test_etag_matching(void **state)
{
    (void)state;
    const char *tag = "\"abc\"";
    assert_false(partd__http_etag_matches(NULL, tag));
    assert_false(partd__http_etag_matches("", tag));
    assert_true(partd__http_etag_matches("\"abc\"", tag));
    assert_true(partd__http_etag_matches("W/\"abc\"", tag));
    assert_true(partd__http_etag_matches("*", tag));
    assert_true(partd__http_etag_matches("\"x\", \"abc\"", tag));
    assert_true(partd__http_etag_matches("\"x\",\t W/\"abc\" ,", tag));
    assert_true(partd__http_etag_matches("\"x\", *", tag));
    assert_false(partd__http_etag_matches("\"abcd\"", tag));
    assert_false(partd__http_etag_matches("\"ab\"", tag));
    assert_false(partd__http_etag_matches("abc", tag));
    assert_false(partd__http_etag_matches("\"ABC\"", tag));
    /* An unterminated tag ends the list. */
    assert_false(partd__http_etag_matches("\"abc", tag));
    assert_false(partd__http_etag_matches("\"x, \"abc\"", tag));
    /* A comma inside a quoted tag does not split it. */
    assert_true(partd__http_etag_matches("\"a,b\"", "\"a,b\""));
}

static void test_idempotency_key(void **state)
{
    (void)state;
    char key[300];
    assert_true(partd__http_idem_key_valid("a"));
    assert_true(partd__http_idem_key_valid("!~order-42/retry"));
    assert_false(partd__http_idem_key_valid(""));
    assert_false(partd__http_idem_key_valid("with space"));
    assert_false(partd__http_idem_key_valid("tab\t"));
    assert_false(partd__http_idem_key_valid("del\x7f"));
    assert_false(partd__http_idem_key_valid("caf\xc3\xa9"));
    memset(key, 'k', 255);
    key[255] = '\0';
    assert_true(partd__http_idem_key_valid(key));
    key[255] = 'k';
    key[256] = '\0';
    assert_false(partd__http_idem_key_valid(key));
}

static void assert_bad_query(const char *status, const char *limit, const char *token,
                             const char *want_param)
{
    partd__http_list_query q;
    const char *param = NULL, *detail = NULL;
    assert_int_equal(partd__http_list_query_parse(status, limit, token, &q, &param, &detail),
                     PARTD_EINVALID);
    assert_string_equal(param, want_param);
    assert_non_null(detail);
    assert_true(strlen(detail) > 0);
}

static void test_list_query(void **state)
{
    (void)state;
    partd__http_list_query q;
    const char *param = NULL, *detail = NULL;
    assert_int_equal(partd__http_list_query_parse(NULL, NULL, NULL, &q, &param, &detail),
                     PARTD_OK);
    assert_int_equal(q.status, -1);
    assert_int_equal(q.limit, PARTD_HTTP_LIST_DEFAULT_LIMIT);
    assert_int_equal(q.before, 0);
    assert_null(param);

    assert_int_equal(partd__http_list_query_parse("", "1000", "17", &q, &param, &detail),
                     PARTD_OK);
    assert_int_equal(q.status, -1);
    assert_int_equal(q.limit, 1000);
    assert_int_equal(q.before, 17);

    assert_int_equal(partd__http_list_query_parse("failed", "1", NULL, &q, &param, &detail),
                     PARTD_OK);
    assert_int_equal(q.status, PARTD_JOB_FAILED);
    assert_int_equal(q.limit, 1);

    assert_bad_query("done", NULL, NULL, "status");
    assert_bad_query("QUEUED", NULL, NULL, "status");
    assert_bad_query(NULL, "0", NULL, "limit");
    assert_bad_query(NULL, "1001", NULL, "limit");
    assert_bad_query(NULL, "", NULL, "limit");
    assert_bad_query(NULL, "-1", NULL, "limit");
    assert_bad_query(NULL, "ten", NULL, "limit");
    assert_bad_query(NULL, NULL, "0", "page_token");
    assert_bad_query(NULL, NULL, "", "page_token");
    assert_bad_query(NULL, NULL, "9223372036854775808", "page_token");
    assert_bad_query(NULL, NULL, "abc", "page_token");
    /* The first bad parameter is the one named. */
    assert_bad_query("nope", "0", "0", "status");
    assert_bad_query("running", "0", "0", "limit");
}

static void test_json_content_type(void **state)
{
    (void)state;
    assert_true(partd__http_is_json_type("application/json"));
    assert_true(partd__http_is_json_type("Application/JSON"));
    assert_true(partd__http_is_json_type("  application/json ; charset=utf-8"));
    assert_true(partd__http_is_json_type("application/json;charset=utf-8"));
    assert_false(partd__http_is_json_type(NULL));
    assert_false(partd__http_is_json_type(""));
    assert_false(partd__http_is_json_type("application/jsonx"));
    assert_false(partd__http_is_json_type("application/json5"));
    assert_false(partd__http_is_json_type("application/problem+json"));
    assert_false(partd__http_is_json_type("text/json"));
    assert_false(partd__http_is_json_type("application/json, text/plain"));
}

static void assert_has(const char *text, const char *needle)
{
    if (!strstr(text, needle))
        fail_msg("'%s' not in:\n%s", needle, text);
}

/* ---- the listener ------------------------------------------------------- */

static void test_listener(void **state)
{
    (void)state;
    char bound[128], err[256];
    int v6 = -1;
    int fd = partd__http_listen("127.0.0.1:0", bound, sizeof bound, &v6, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(v6, 0);
    assert_int_equal(strncmp(bound, "127.0.0.1:", 10), 0);
    assert_true(atoi(bound + 10) > 0);

    /* The port is taken while fd listens. */
    char taken[128];
    snprintf(taken, sizeof taken, "%s", bound);
    assert_int_equal(partd__http_listen(taken, bound, sizeof bound, &v6, err, sizeof err), -1);
    assert_has(err, "cannot listen on 127.0.0.1:");
    close(fd);

    const struct {
        const char *listen, *needle;
    } bad[] = {
        {"127.0.0.1", "expected ADDRESS:PORT"},
        {"[::1", "expected [IPv6]:PORT"},
        {"[::1]8080", "expected [IPv6]:PORT"},
        {"127.0.0.1:65536", "bad port"},
        {"127.0.0.1:http", "bad port"},
        {"127.0.0.1:", "bad port"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(partd__http_listen(bad[i].listen, bound, sizeof bound, &v6, err,
                                            sizeof err),
                         -1);
        if (!strstr(err, bad[i].needle))
            fail_msg("--listen %s: '%s' lacks '%s'", bad[i].listen, err, bad[i].needle);
    }
}

/* ---- the server core, end to end ---------------------------------------- */

typedef struct answer {
    long status;
    char headers[2048];
    char body[2048];
    size_t hlen, blen;
} answer;

static size_t on_bytes(char *data, size_t size, size_t n, void *ctx, char *buf, size_t *len,
                       size_t cap)
{
    (void)ctx;
    size_t total = size * n, take = total;
    if (*len + take >= cap)
        take = cap - 1 - *len;
    memcpy(buf + *len, data, take);
    *len += take;
    buf[*len] = '\0';
    return total;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    return on_bytes(data, size, n, ctx, a->headers, &a->hlen, sizeof a->headers);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    answer *a = ctx;
    return on_bytes(data, size, n, ctx, a->body, &a->blen, sizeof a->body);
}

/* One request; auth and type are header lines or NULL. */
static void fetch2(const char *address, const char *method, const char *path, const char *auth,
                   const char *type, const char *body, answer *a)
{
    memset(a, 0, sizeof *a);
    char url[256];
    snprintf(url, sizeof url, "http://%s%s", address, path);
    CURL *curl = curl_easy_init();
    assert_non_null(curl);
    struct curl_slist *hdrs = NULL;
    if (auth)
        hdrs = curl_slist_append(hdrs, auth);
    if (type)
        hdrs = curl_slist_append(hdrs, type);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
    if (body)
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    CURLcode rc = curl_easy_perform(curl);
    if (rc != CURLE_OK)
        fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(curl);
}

static void fetch(const char *address, const char *method, const char *path, const char *auth,
                  const char *body, answer *a)
{
    fetch2(address, method, path, auth, NULL, body, a);
}


/* partd_http_start on 127.0.0.1 port 0 with a service that has no store or
 * job engine: every answer here is decided before either is needed. */
static void test_server_core_end_to_end(void **state)
{
    (void)state;
    partd_config cfg;
    char err[512];
    char *argv[] = {"serve", "--listen", "127.0.0.1:0", "--http-threads", "2",
                    "--max-body-bytes", "1000"};
    assert_int_equal(partd_config_parse(&cfg, 7, argv, err, sizeof err), PARTD_CONFIG_OK);
    char token[] = "tok";
    partd_http_context ctx;
    memset(&ctx, 0, sizeof ctx);
    partd_config_http(&cfg, &ctx.settings);
    ctx.token = token;
    ctx.token_len = strlen(token);
    partd_metrics metrics;
    partd_metrics_init(&metrics);
    ctx.metrics = &metrics;
    atomic_store(&ctx.phase, PARTD_HTTP_STARTING);
    int exit_code = 0;
    partd_http *h = partd_http_start(&ctx, err, sizeof err, &exit_code);
    if (!h)
        fail_msg("partd_http_start: %s (%d)", err, exit_code);
    const char *addr = partd_http_address(h);
    assert_int_equal(strncmp(addr, "127.0.0.1:", 10), 0);
    assert_true(atoi(addr + 10) > 0);

    answer a;
    fetch(addr, "GET", "/livez", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(a.body, "{\"status\":\"ok\"}\n");
    assert_has(a.headers, "Content-Type: application/json");
    assert_has(a.headers, "Cache-Control: no-store");

    fetch(addr, "HEAD", "/version", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_string_equal(a.body, "");

    fetch(addr, "GET", "/version", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_has(a.body, "\"name\":\"partd\",\"version\":\"" PARTD_VERSION "\"");

    /* The console needs no token (it holds no job data); its picture does. */
    fetch(addr, "GET", "/", NULL, NULL, &a);
    assert_int_equal(a.status, 200);
    assert_has(a.headers, "Content-Type: text/html; charset=utf-8");
    assert_has(a.headers, "Content-Security-Policy: default-src 'none'; script-src 'sha256-");
    assert_has(a.headers, "X-Content-Type-Options: nosniff");
    assert_has(a.headers, "Referrer-Policy: no-referrer");
    assert_has(a.body, "<!DOCTYPE html>");
    fetch(addr, "GET", "/v1/jobs/" ID "/plan.svg", NULL, NULL, &a);
    assert_int_equal(a.status, 401);

    fetch(addr, "GET", "/livez/", NULL, NULL, &a);
    assert_int_equal(a.status, 404);
    assert_has(a.headers, "Content-Type: application/problem+json");
    assert_has(a.body, "\"status\":404");

    fetch(addr, "PUT", "/livez", NULL, NULL, &a);
    assert_int_equal(a.status, 405);
    assert_has(a.headers, "Allow: GET, HEAD\r\n");
    assert_has(a.body, "PUT is not allowed here; allowed: GET, HEAD");

    /* /v1/ needs the token, even for an unknown path. */
    fetch(addr, "GET", "/v1/nothing", NULL, NULL, &a);
    assert_int_equal(a.status, 401);
    assert_has(a.headers, "WWW-Authenticate: Bearer realm=\"partd\"");
    fetch(addr, "GET", "/v1/nothing", "Authorization: Bearer tok", NULL, &a);
    assert_int_equal(a.status, 404);
    fetch(addr, "PATCH", "/v1/jobs/" ID, "Authorization: Bearer tok", NULL, &a);
    assert_int_equal(a.status, 405);
    assert_has(a.headers, "Allow: GET, HEAD, DELETE\r\n");

    /* Submission's admission: the phase first, then the body's headers. */
    fetch(addr, "POST", "/v1/jobs", "Authorization: Bearer tok", "{}", &a);
    assert_int_equal(a.status, 503);
    assert_has(a.body, "the server is starting");
    atomic_store(&ctx.phase, PARTD_HTTP_READY);
    fetch(addr, "POST", "/v1/jobs", "Authorization: Bearer tok", "{}", &a);
    assert_int_equal(a.status, 415);
    assert_has(a.headers, "Accept: application/json");
    char big[1100];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fetch2(addr, "POST", "/v1/jobs", "Authorization: Bearer tok",
           "Content-Type: application/json", big, &a);
    assert_int_equal(a.status, 413);
    assert_has(a.body, "larger than 1000 bytes (--max-body-bytes)");

    /* Every answer above was counted under its route's label (stopping
     * joins the threads, so every completion has been recorded). */
    partd_http_stop(h);
    size_t len = 0;
    partd_metrics_gauges g = {0};
    char *text = partd_metrics_render(&metrics, &g, &len);
    assert_non_null(text);
    assert_has(text, "route=\"/livez\",code=\"200\"} 1\n");
    assert_has(text, "method=\"other\",route=\"/livez\",code=\"405\"} 1\n");
    assert_has(text, "method=\"POST\",route=\"/v1/jobs\",code=\"413\"} 1\n");
    free(text);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_matches),
        cmocka_unit_test(test_table_is_consistent),
        cmocka_unit_test(test_unknown_paths_are_not_found),
        cmocka_unit_test(test_id_of_unmatched_path_is_kept_for_the_log),
        cmocka_unit_test(test_other_methods_are_not_allowed),
        cmocka_unit_test(test_allow_errors),
        cmocka_unit_test(test_bearer_token),
        cmocka_unit_test(test_etag_matching),
        cmocka_unit_test(test_idempotency_key),
        cmocka_unit_test(test_list_query),
        cmocka_unit_test(test_json_content_type),
        cmocka_unit_test(test_listener),
        cmocka_unit_test(test_server_core_end_to_end),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
