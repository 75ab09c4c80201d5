/*
 * http_harness.c - the real daemon on a thread, driven over loopback; see
 * http_harness.h.
 *
 * State is per process (one daemon), kept in the file-static `H`: the
 * harness is test code, never part of partd.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "http_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "serve/serve.h"

#define IO_TIMEOUT_MS 30000      /* a request unanswered this long is a hang */
#define START_TIMEOUT_MS 30000
#define MAX_HEAD_BYTES 16384
#define MAX_HEADERS 64
#define MAX_ANSWER_KEPT (8u << 20)
#define TOKEN "fuzz-token-0123456789abcdef"

/* A small valid request: the job behind "{id}" and "{etag}". */
static const char SEED_JOB[] =
    "{\"graph\":{\"name\":\"seed\",\"nodes\":["
    "{\"name\":\"x\",\"op\":\"placeholder\",\"output_bytes\":100},"
    "{\"name\":\"a\",\"op\":\"call_module\",\"inputs\":[\"x\"],\"output_bytes\":200,"
    "\"param_bytes\":1000,\"latency_ms\":1.5},"
    "{\"name\":\"b\",\"op\":\"call_function\",\"inputs\":[\"a\"],\"output_bytes\":200,"
    "\"latency_ms\":0.5},"
    "{\"name\":\"out\",\"op\":\"output\",\"inputs\":[\"b\"]}]},"
    "\"devices\":[{\"name\":\"d0\",\"memory_bytes\":100000},"
    "{\"name\":\"d1\",\"memory_bytes\":100000}],"
    "\"options\":{\"mode\":\"pipeline\"}}";

static struct {
    int started;
    int port;
    pthread_t thread;
    int exit_code;
    int done;                  /* the serve thread returned */
    char base[256];            /* temp dir: token file + data dir */
    int remove_base;
    char id[64];
    char etag[96];
    int connect_errno;         /* of the last failed connect */
    char why[160];             /* the sentence returned for it */
} H;

typedef struct buf {
    char *p;
    size_t len, cap;
    int failed;
} buf;

static void buf_add(buf *b, const void *data, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_str(buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- one exchange over loopback ------------------------------------------ */

static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int left = (int)(deadline - now_ms());
        if (left <= 0)
            return 0;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, left);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

typedef enum { EX_OK = 0, EX_CONNECT, EX_TIMEOUT } ex_status;

/* connect(2) that survives signals: libFuzzer's SIGALRM (its -timeout
 * watchdog) interrupts it, and the connection then completes on its own. */
static int connect_loopback(int fd, const struct sockaddr_in *sa, int64_t deadline)
{
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
        return 0;
    if (errno != EINTR && errno != EINPROGRESS)
        return -1;
    if (wait_fd(fd, POLLOUT, deadline) <= 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        return -1;
    errno = err;
    return err == 0 ? 0 : -1;
}

/* Sends `req` on a new connection and reads the answer to EOF. The answer is
 * kept up to MAX_ANSWER_KEPT bytes (the rest is read and dropped). */
static ex_status exchange(const char *req, size_t len, buf *answer)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return EX_CONNECT;
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)H.port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int64_t deadline = now_ms() + IO_TIMEOUT_MS;
    if (connect_loopback(fd, &sa, deadline) != 0) {
        H.connect_errno = errno;
        close(fd);
        return EX_CONNECT;
    }
    size_t sent = 0;
    ex_status st = EX_OK;
    while (sent < len) {
        int w = wait_fd(fd, POLLOUT, deadline);
        if (w == 0) {
            st = EX_TIMEOUT;
            break;
        }
        ssize_t n = w > 0 ? send(fd, req + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break; /* the daemon answered early and closed: read what it said */
        sent += (size_t)n;
    }
    char chunk[65536];
    while (st == EX_OK) {
        int w = wait_fd(fd, POLLIN, deadline);
        if (w == 0) {
            st = EX_TIMEOUT;
            break;
        }
        ssize_t n = w > 0 ? recv(fd, chunk, sizeof chunk, MSG_DONTWAIT) : -1;
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            break;
        if (answer->len < MAX_ANSWER_KEPT)
            buf_add(answer, chunk, (size_t)n);
    }
    /* The daemon closed first (Connection: close), so the TIME_WAIT is on
     * its side, and it has let go of the connection: a harness faster than
     * its cleanup cannot run into the connection limits. */
    close(fd);
    return st;
}

typedef struct answer {
    int status;                /* 0 when no status line came back */
    char content_type[128];
    char content_encoding[32];
    const char *body;
    size_t body_len;
} answer;

/* Copies the value of header line `line` (after "Name:") into out. */
static void header_value(const char *v, char *out, size_t cap)
{
    while (*v == ' ')
        v++;
    size_t n = strcspn(v, "\r");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
}

static void parse_answer(const buf *raw, answer *a)
{
    memset(a, 0, sizeof *a);
    if (!raw->p || raw->len < 12 || strncmp(raw->p, "HTTP/1.", 7) != 0)
        return;
    a->status = atoi(raw->p + 9);
    const char *end = strstr(raw->p, "\r\n\r\n");
    if (!end)
        return;
    a->body = end + 4;
    a->body_len = raw->len - (size_t)(a->body - raw->p);
    for (const char *line = strstr(raw->p, "\r\n"); line && line < end;
         line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Type:", 13) == 0)
            header_value(line + 15, a->content_type, sizeof a->content_type);
        else if (strncasecmp(line + 2, "Content-Encoding:", 17) == 0)
            header_value(line + 19, a->content_encoding, sizeof a->content_encoding);
    }
}

/* ---- building a request from an input ------------------------------------ */

static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Appends s (n bytes) with "{id}", "{etag}" and "{token}" replaced. */
static void add_substituted(buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (n - i >= 4 && memcmp(s + i, "{id}", 4) == 0) {
            buf_str(b, H.id);
            i += 4;
        } else if (n - i >= 6 && memcmp(s + i, "{etag}", 6) == 0) {
            buf_str(b, H.etag);
            i += 6;
        } else if (n - i >= 7 && memcmp(s + i, "{token}", 7) == 0) {
            buf_str(b, TOKEN);
            i += 7;
        } else {
            buf_add(b, s + i, 1);
            i++;
        }
    }
}

/* Keeps the bytes of [s, s+n) that may appear in a request target or header
 * value; in a target no space or tab either. */
static size_t clean(const char *s, size_t n, char *out, size_t cap, int is_target)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0x7f || (c < 0x20 && c != '\t') || (is_target && (c == ' ' || c == '\t')))
            continue;
        out[k++] = (char)c;
    }
    out[k] = '\0';
    return k;
}

static int header_we_own(const char *name, size_t n)
{
    static const char *const own[] = {"content-length", "transfer-encoding", "connection",
                                      "host", "keep-alive", "te", "trailer", "expect",
                                      "upgrade", NULL};
    for (int i = 0; own[i]; i++)
        if (strlen(own[i]) == n && strncasecmp(name, own[i], n) == 0)
            return 1;
    return 0;
}

static void add_request_line(buf *out, const char *line, size_t n, int *chunked, char *method,
                             size_t method_cap)
{
    size_t i = 0, m = 0;
    while (i < n && is_tchar((unsigned char)line[i]) && m + 1 < method_cap)
        method[m++] = line[i++];
    method[m] = '\0';
    if (m == 0)
        snprintf(method, method_cap, "GET");
    while (i < n && line[i] != ' ')
        i++; /* the rest of an over-long method */
    while (i < n && line[i] == ' ')
        i++;
    size_t t0 = i;
    while (i < n && line[i] != ' ')
        i++;
    char target[4096];
    size_t tn = clean(line + t0, i - t0, target, sizeof target, 1);
    while (i < n && line[i] == ' ')
        i++;
    *chunked = n - i >= 7 && strncmp(line + i, "chunked", 7) == 0;
    buf_str(out, method);
    buf_str(out, " ");
    if (tn == 0 || target[0] != '/')
        buf_str(out, "/");
    add_substituted(out, target, tn);
    buf_str(out, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
}

static void add_header_line(buf *out, const char *line, size_t n)
{
    size_t k = 0;
    while (k < n && is_tchar((unsigned char)line[k]))
        k++;
    if (k == 0 || k >= n || line[k] != ':' || header_we_own(line, k))
        return;
    buf_add(out, line, k + 1);
    char value[MAX_HEAD_BYTES];
    size_t vn = clean(line + k + 1, n - k - 1, value, sizeof value, 0);
    add_substituted(out, value, vn);
    buf_str(out, "\r\n");
}

/* Chunk sizes cycle through these, so one body arrives in several calls. */
static const size_t CHUNK_SIZES[] = {1, 13, 256, 4096};

static void add_body(buf *out, const char *body, size_t n, int chunked, const char *method)
{
    char line[64];
    if (chunked) {
        buf_str(out, "Transfer-Encoding: chunked\r\n\r\n");
        for (size_t off = 0, k = 0; off < n; k++) {
            size_t c = CHUNK_SIZES[k % 4];
            if (c > n - off)
                c = n - off;
            snprintf(line, sizeof line, "%zx\r\n", c);
            buf_str(out, line);
            buf_add(out, body + off, c);
            buf_str(out, "\r\n");
            off += c;
        }
        buf_str(out, "0\r\n\r\n");
        return;
    }
    if (n > 0 || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        snprintf(line, sizeof line, "Content-Length: %zu\r\n", n);
        buf_str(out, line);
    }
    buf_str(out, "\r\n");
    buf_add(out, body, n);
}

/* Turns an input into a well-framed request; *method gets its method. */
static void build_request(const uint8_t *data, size_t size, buf *out, char *method,
                          size_t method_cap)
{
    const char *s = (const char *)data;
    const char *end = s + size;
    const char *nl = memchr(s, '\n', size);
    const char *line_end = nl ? nl : end;
    int chunked = 0;
    size_t ln = (size_t)(line_end - s);
    if (ln && s[ln - 1] == '\r')
        ln--;
    add_request_line(out, s, ln, &chunked, method, method_cap);
    const char *p = nl ? nl + 1 : end;
    int headers = 0;
    size_t head_bytes = 0;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        line_end = nl ? nl : end;
        ln = (size_t)(line_end - p);
        if (ln && p[ln - 1] == '\r')
            ln--;
        const char *line = p;
        p = nl ? nl + 1 : end;
        if (ln == 0)
            break; /* the blank line: the body follows */
        if (headers++ < MAX_HEADERS && (head_bytes += ln) < MAX_HEAD_BYTES)
            add_header_line(out, line, ln);
    }
    add_body(out, p, (size_t)(end - p), chunked, method);
}

/* ---- checks on the answer ------------------------------------------------ */

static int status_allowed(int status)
{
    /* The contract's codes, plus what libmicrohttpd itself answers to a
     * request it will not pass on (414 URI too long, 431 header fields too
     * large). Anything else, and 500 in particular, is a finding. */
    static const int ok[] = {200, 202, 304, 400, 401, 404, 405, 406, 409, 413,
                             414, 415, 422, 429, 431, 503};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (ok[i] == status)
            return 1;
    return 0;
}

/* The decoded body of a gzip or zstd answer (malloc'd, *len set), or NULL
 * when it does not decode to at most MAX_ANSWER_KEPT bytes. */
static char *decode_body(const answer *a, size_t *len)
{
    char *out = malloc(MAX_ANSWER_KEPT);
    if (!out)
        return NULL;
    if (strcmp(a->content_encoding, "zstd") == 0) {
        size_t n = ZSTD_decompress(out, MAX_ANSWER_KEPT, a->body, a->body_len);
        if (ZSTD_isError(n)) {
            free(out);
            return NULL;
        }
        *len = n;
        return out;
    }
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(out);
        return NULL;
    }
    zs.next_in = (Bytef *)a->body;
    zs.avail_in = (uInt)a->body_len;
    zs.next_out = (Bytef *)out;
    zs.avail_out = MAX_ANSWER_KEPT;
    int rc = inflate(&zs, Z_FINISH);
    *len = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

static const char *check_json(const answer *a, const char *body, size_t len, int is_problem)
{
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *bad = NULL;
    if (!json_is_object(doc))
        bad = "a JSON answer does not parse as a JSON object";
    else if (is_problem && json_integer_value(json_object_get(doc, "status")) != a->status)
        bad = "a problem document's status is not the HTTP status";
    else if (a->status >= 400 && !is_problem)
        bad = "an error answer is not a problem document";
    json_decref(doc);
    return bad;
}

static const char *check_answer(const answer *a, const char *method)
{
    if (a->status == 0)
        return "the daemon closed the connection without an answer";
    if (!status_allowed(a->status))
        return "the daemon answered with a status outside the contract";
    int is_problem = strncmp(a->content_type, "application/problem+json", 24) == 0;
    int is_json = strncmp(a->content_type, "application/json", 16) == 0;
    int coded = a->content_encoding[0] != '\0';
    if (coded && strcmp(a->content_encoding, "gzip") != 0 &&
        strcmp(a->content_encoding, "zstd") != 0)
        return "an answer has a content coding partd does not make";
    if (coded && (a->status != 200 || !is_json))
        return "an answer other than a result document is compressed";
    if ((!is_problem && !is_json) || a->status == 304 || strcmp(method, "HEAD") == 0 ||
        a->body_len >= MAX_ANSWER_KEPT)
        return NULL;
    if (!coded)
        return check_json(a, a->body, a->body_len, is_problem);
    size_t len = 0;
    char *body = decode_body(a, &len);
    if (!body)
        return "a compressed answer does not decode";
    const char *bad = check_json(a, body, len, is_problem);
    free(body);
    return bad;
}

const char *partd_fuzz_http_one(const uint8_t *data, size_t size)
{
    if (!H.started)
        return "the daemon is not running";
    buf req = {0}, raw = {0};
    char method[32];
    build_request(data, size, &req, method, sizeof method);
    const char *bad = NULL;
    if (req.failed) {
        free(req.p);
        return NULL; /* out of memory in the harness is not a finding */
    }
    ex_status st = exchange(req.p, req.len, &raw);
    if (st == EX_CONNECT) {
        snprintf(H.why, sizeof H.why, "the daemon no longer accepts connections (%s)",
                 strerror(H.connect_errno));
        bad = H.why;
    }
    else if (st == EX_TIMEOUT)
        bad = "the daemon did not answer within the I/O timeout";
    else if (!raw.failed) {
        answer a;
        parse_answer(&raw, &a);
        bad = check_answer(&a, method);
    }
    free(req.p);
    free(raw.p);
    return bad;
}

/* ---- start and stop ----------------------------------------------------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void *serve_thread(void *arg)
{
    char **argv = arg;
    int argc = 0;
    while (argv[argc])
        argc++;
    H.exit_code = partd_serve_main(argc, argv);
    __atomic_store_n(&H.done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Method, path, optional body (JSON); returns the status, body into *raw. */
static int simple(const char *method, const char *path, const char *body, buf *raw,
                  answer *a)
{
    buf req = {0};
    char line[512];
    snprintf(line, sizeof line,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
             "Authorization: Bearer " TOKEN "\r\n",
             method, path);
    buf_str(&req, line);
    if (body) {
        snprintf(line, sizeof line, "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                 strlen(body));
        buf_str(&req, line);
    }
    buf_str(&req, "\r\n");
    if (body)
        buf_str(&req, body);
    raw->len = 0;
    ex_status st = req.failed ? EX_CONNECT : exchange(req.p, req.len, raw);
    free(req.p);
    if (st != EX_OK)
        return -1;
    parse_answer(raw, a);
    return a->status;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_base(void)
{
    if (H.remove_base && H.base[0])
        nftw(H.base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int make_base(void)
{
    const char *dir = getenv("PARTD_FUZZ_DATA_DIR");
    if (dir && *dir) {
        snprintf(H.base, sizeof H.base, "%s", dir);
        if (mkdir(H.base, 0700) != 0 && errno != EEXIST)
            return -1;
        return 0;
    }
    snprintf(H.base, sizeof H.base, "/tmp/partd-fuzz-XXXXXX");
    if (!mkdtemp(H.base))
        return -1;
    H.remove_base = 1;
    atexit(remove_base);
    return 0;
}

static int wait_ready(void)
{
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    buf raw = {0};
    answer a;
    int status = -1;
    while (now_ms() < deadline && !__atomic_load_n(&H.done, __ATOMIC_SEQ_CST)) {
        status = simple("GET", "/readyz", NULL, &raw, &a);
        if (status == 200)
            break;
        struct timespec pause = {0, 10 * 1000000}; /* polling interval */
        nanosleep(&pause, NULL);
    }
    free(raw.p);
    return status == 200 ? 0 : -1;
}

/* Submits SEED_JOB, waits for it to finish, and records its id and ETag. */
static int seed_job(void)
{
    buf raw = {0};
    answer a;
    int rc = -1;
    int status = simple("POST", "/v1/jobs", SEED_JOB, &raw, &a);
    json_t *job = (status == 200 || status == 202) ? json_loadb(a.body, a.body_len, 0, NULL)
                                                     : NULL;
    const char *id = json_string_value(json_object_get(job, "id"));
    if (id)
        snprintf(H.id, sizeof H.id, "%s", id);
    json_decref(job);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/result", H.id);
    int64_t deadline = now_ms() + START_TIMEOUT_MS;
    while (id && now_ms() < deadline) {
        status = simple("GET", path, NULL, &raw, &a);
        if (status != 409)
            break;
        struct timespec pause = {0, 10 * 1000000}; /* polling interval */
        nanosleep(&pause, NULL);
    }
    const char *etag = status == 200 ? strcasestr(raw.p, "\r\nETag: ") : NULL;
    if (etag) {
        etag += 8;
        size_t n = strcspn(etag, "\r");
        snprintf(H.etag, sizeof H.etag, "%.*s", (int)n, etag);
        rc = 0;
    }
    free(raw.p);
    return rc;
}

int partd_fuzz_http_start(void)
{
    if (H.started)
        return 0;
    if (make_base() != 0) {
        fprintf(stderr, "fuzz http: cannot create a data directory: %s\n", strerror(errno));
        return -1;
    }
    static char token_file[300], data_dir[300], listen[64];
    snprintf(token_file, sizeof token_file, "%s/token", H.base);
    snprintf(data_dir, sizeof data_dir, "%s/data", H.base);
    FILE *f = fopen(token_file, "w");
    if (!f || fputs(TOKEN "\n", f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "fuzz http: cannot write %s\n", token_file);
        return -1;
    }
    /* The port may be taken between probing and binding: try a few. */
    for (int attempt = 0; attempt < 5 && !H.started; attempt++) {
        H.port = free_port();
        snprintf(listen, sizeof listen, "127.0.0.1:%d", H.port);
        static char *argv[] = {
            "serve", "--listen", NULL, "--data-dir", NULL, "--token-file", NULL,
            "--workers", "2", "--http-threads", "2", "--queue-max", "32",
            "--max-body-bytes", "1048576", "--max-model-bytes", "16777216",
            "--max-nodes", "20000", "--job-timeout-ms", "2000",
            "--cache-max-bytes", "4194304", "--conn-timeout-s", "10",
            "--max-connections", "1024", "--max-connections-per-ip", "1024",
            "--shutdown-grace-ms", "0", NULL};
        argv[2] = listen;
        argv[4] = data_dir;
        argv[6] = token_file;
        __atomic_store_n(&H.done, 0, __ATOMIC_SEQ_CST);
        if (pthread_create(&H.thread, NULL, serve_thread, argv) != 0)
            return -1;
        if (wait_ready() == 0) {
            H.started = 1;
        } else {
            if (!__atomic_load_n(&H.done, __ATOMIC_SEQ_CST)) {
                fprintf(stderr, "fuzz http: the daemon did not become ready\n");
                return -1;
            }
            pthread_join(H.thread, NULL);
        }
    }
    if (!H.started) {
        fprintf(stderr, "fuzz http: the daemon did not start (exit %d)\n", H.exit_code);
        return -1;
    }
    if (seed_job() != 0) {
        fprintf(stderr, "fuzz http: the seed job did not finish with a result\n");
        return -1;
    }
    return 0;
}

void partd_fuzz_http_stop(void)
{
    if (!H.started)
        return;
    /* The daemon's loop owns SIGTERM (libuv's handler): it drains and
     * partd_serve_main returns. */
    kill(getpid(), SIGTERM);
    pthread_join(H.thread, NULL);
    H.started = 0;
}
