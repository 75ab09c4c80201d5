/*
 * bench_http.c - HTTP load on the real daemon with wrk (Debian's package).
 *
 * Starts `partd serve` (PARTD_BIN, default build/partd) on a free loopback
 * port with a temporary data directory and measures:
 *   0. a 10^6-node request with summary detail (bench/support/gen.h): POST
 *      to succeeded, and the daemon's peak resident size, against the body's
 *      size and `partd plan` of the same file (time and peak RSS);
 * then, keep-alive:
 *   1. GET /livez, requests/s and p99;
 *   2. GET /v1/jobs/{id}/result of a cached ~1 MB result: full body
 *      uncompressed, with Content-Encoding gzip and zstd, and conditional
 *      (If-None-Match -> 304);
 *   3. GET /livez p99 while every planner thread plans a 10^6-node graph
 *      (bench/support/gen.h), checked to be still running afterwards; p99
 *      with 4 connections (a health checker's view) and at full load;
 *   4. the SQLite store's write-ahead log through many distinct small jobs
 *      (BENCH_WAL_JOBS, default 3000): its largest size seen after each
 *      batch and its size at the end (target: at most 32 MiB however many).
 * Settings: BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 64).
 * Prints one line per figure; exits non-zero only when it cannot measure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "proc_mem.h"

/* The latency probe: a few connections, so that p99 shows how long a health
 * check waits, not the queueing of a saturating load generator. */
#define PROBE_CONNECTIONS 4

static char port[16];
static pid_t daemon_pid;

static void die(const char *what)
{
    fprintf(stderr, "bench_http: %s\n", what);
    if (daemon_pid > 0)
        kill(daemon_pid, SIGKILL);
    exit(1);
}

/* ---- a minimal HTTP/1.1 client (one request per connection) ------------- */

typedef struct reply {
    int status;
    char *body;
    size_t len;
    char etag[96];
} reply;

static int connect_local(void)
{
    struct addrinfo hints = {0}, *ai;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo("127.0.0.1", port, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static reply http(const char *method, const char *path, const char *body, size_t len)
{
    reply r = {0};
    int fd = connect_local();
    if (fd < 0)
        die("cannot connect to the daemon");
    char head[512];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, body ? len : 0);
    if (write(fd, head, (size_t)n) != n)
        die("write failed");
    for (size_t off = 0; body && off < len;) {
        ssize_t w = write(fd, body + off, len - off);
        if (w <= 0)
            die("write failed");
        off += (size_t)w;
    }
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (got + 1 >= cap)
            buf = realloc(buf, cap *= 2);
        ssize_t k = read(fd, buf + got, cap - got - 1);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    buf[got] = '\0';
    sscanf(buf, "HTTP/1.1 %d", &r.status);
    char *etag = strcasestr(buf, "\r\nETag: ");
    if (etag)
        sscanf(etag + 8, "%95[^\r]", r.etag);
    char *sep = strstr(buf, "\r\n\r\n");
    r.body = buf;
    if (sep) {
        r.len = got - (size_t)(sep + 4 - buf);
        memmove(buf, sep + 4, r.len + 1);
    }
    return r;
}

/* "id":"<32 hex>" of a job document. */
static void job_id(const reply *r, char id[33])
{
    const char *p = strstr(r->body, "\"id\":\"");
    if (!p || sscanf(p + 6, "%32[0-9a-f]", id) != 1)
        die("no job id in the answer");
}

static int job_has_status(const char *id, const char *status)
{
    char path[80], want[48];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    snprintf(want, sizeof want, "\"status\":\"%s\"", status);
    reply r = http("GET", path, NULL, 0);
    int yes = r.status == 200 && strstr(r.body, want) != NULL;
    free(r.body);
    return yes;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Polls until the job has `status` or has finished. */
static void wait_status(const char *id, const char *status)
{
    while (!job_has_status(id, status) && !job_has_status(id, "succeeded") &&
           !job_has_status(id, "failed") && !job_has_status(id, "cancelled"))
        sleep_ms(5);
}

/* ---- the daemon ---------------------------------------------------------- */

static void start_daemon(const char *bin, const char *dir)
{
    int fds[2];
    if (pipe(fds) != 0)
        die("pipe");
    daemon_pid = fork();
    if (daemon_pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir,
              "--max-body-bytes", "1073741824", "--queue-max", "64", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *log = fdopen(fds[0], "r");
    char line[1024];
    while (fgets(line, sizeof line, log)) {
        char *a = strstr(line, "listening address=127.0.0.1:");
        if (a) {
            sscanf(a + strlen("listening address=127.0.0.1:"), "%15[0-9]", port);
            break;
        }
    }
    if (!port[0])
        die("the daemon did not start");
    /* Keep draining its log so that it never blocks on a full pipe. */
    if (fork() == 0) {
        while (fgets(line, sizeof line, log))
            ;
        _exit(0);
    }
    fclose(log);
}

/* ---- a large request ---------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* `partd plan FILE -o /dev/null`: wall time and the child's peak RSS. */
static void time_partd_plan(const char *bin, const char *file, double *secs, double *rss)
{
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "plan", file, "-o", "/dev/null", (char *)NULL);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        die("partd plan of the large request failed");
    *secs = now_s() - t0;
    *rss = (double)ru.ru_maxrss * 1024;
}

static char *submit(const char *body, size_t len, char id[33]);

static void measure_large_request(const char *bin, const char *dir)
{
    partd_gen_spec spec = {.n_nodes = 1000000, .n_devices = 8, .heterogeneous = 1,
                           .memory_slack = 1.5, .mode = "pipeline",
                           .extra_options = "\"result\":{\"detail\":\"summary\"}",
                           .seed = 7};
    size_t len;
    char *req = partd_gen_request(&spec, &len);
    if (!req)
        die("out of memory generating a request");
    char file[512];
    snprintf(file, sizeof file, "%s/large-request.json", dir);
    FILE *f = fopen(file, "w");
    if (!f || fwrite(req, 1, len, f) != len || fclose(f) != 0)
        die("cannot write the large request");
    double plan_s, plan_rss;
    time_partd_plan(bin, file, &plan_s, &plan_rss);
    double rss_before = partd_bench_status_bytes(daemon_pid, "VmRSS");
    char id[33];
    double t0 = now_s();
    free(submit(req, len, id));
    wait_status(id, "succeeded");
    double post_s = now_s() - t0;
    if (!job_has_status(id, "succeeded"))
        die("the large request did not succeed");
    double hwm = partd_bench_status_bytes(daemon_pid, "VmHWM");
    printf("large request: %zu nodes requested, body %.0f MB\n", (size_t)spec.n_nodes,
           (double)len / 1e6);
    printf("partd plan (summary detail): %.2f s, peak RSS %.0f MB = %.2fx the file "
           "(targets 1.5 s, 3x)\n", plan_s, plan_rss / 1e6, plan_rss / (double)len);
    printf("daemon POST to succeeded: %.2f s = %.2fx partd plan (target 2x); daemon peak RSS "
           "%.0f MB (%.0f MB before) = %.2fx the body (target 3x)\n",
           post_s, post_s / plan_s, hwm / 1e6, rss_before / 1e6, hwm / (double)len);
    unlink(file);
    free(req);
}

/* ---- wrk ---------------------------------------------------------------- */

typedef struct wrk_figures {
    double rps;
    double p99_ms;
    double bytes_per_s; /* headers and bodies */
    long non2xx;
} wrk_figures;

static double scaled(double v, const char *unit)
{
    switch (unit[0]) {
    case 'K':
        return v * 1024;
    case 'M':
        return v * 1024 * 1024;
    case 'G':
        return v * 1024 * 1024 * 1024;
    default:
        return v;
    }
}

static double to_ms(double v, const char *unit)
{
    if (strcmp(unit, "us") == 0)
        return v / 1000;
    if (strcmp(unit, "s") == 0)
        return v * 1000;
    return v;
}

static wrk_figures wrk(const char *path, const char *header, int seconds, int conns)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "wrk -t%d -c%d -d%ds --latency %s%s%s 'http://127.0.0.1:%s%s' 2>&1",
             conns < 2 ? 1 : 2, conns, seconds, header ? "-H '" : "", header ? header : "",
             header ? "'" : "", port, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        die("cannot run wrk (apt-get install wrk)");
    wrk_figures f = {0};
    char line[512];
    while (fgets(line, sizeof line, p)) {
        double v;
        char unit[8];
        if (sscanf(line, " 99%% %lf%7s", &v, unit) == 2)
            f.p99_ms = to_ms(v, unit);
        sscanf(line, "Requests/sec: %lf", &f.rps);
        if (sscanf(line, "Transfer/sec: %lf%7s", &v, unit) == 2)
            f.bytes_per_s = scaled(v, unit);
        sscanf(line, " Non-2xx or 3xx responses: %ld", &f.non2xx);
    }
    pclose(p);
    if (f.rps <= 0)
        die("wrk measured nothing");
    return f;
}

/* ---- the store's write-ahead log ------------------------------------------ */

static long long file_bytes(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static void measure_wal(const char *dir)
{
    int n_jobs = getenv("BENCH_WAL_JOBS") ? atoi(getenv("BENCH_WAL_JOBS")) : 3000;
    char wal[256], db[256];
    snprintf(wal, sizeof wal, "%s/partd.db-wal", dir);
    snprintf(db, sizeof db, "%s/partd.db", dir);
    enum { BATCH = 32 };
    long long peak = 0;
    double t0 = now_s();
    for (int done = 0; done < n_jobs; done += BATCH) {
        char ids[BATCH][33];
        int n = n_jobs - done < BATCH ? n_jobs - done : BATCH;
        for (int i = 0; i < n; i++) {
            /* Distinct seeds: no cache hits, every job stores its request
             * and its result. */
            partd_gen_spec small = {.n_nodes = 200, .n_devices = 4, .memory_slack = 1.5,
                                    .mode = "size_based", .seed = (uint64_t)(1000 + done + i)};
            size_t len;
            char *req = partd_gen_request(&small, &len);
            if (!req)
                die("out of memory generating a request");
            free(submit(req, len, ids[i]));
            free(req);
        }
        for (int i = 0; i < n; i++)
            wait_status(ids[i], "succeeded");
        long long now = file_bytes(wal);
        if (now > peak)
            peak = now;
    }
    printf("store WAL through %d distinct jobs (%.1f s): largest %.1f MiB, at the end %.1f "
           "MiB, partd.db %.1f MiB (target <= 32 MiB)\n", n_jobs, now_s() - t0,
           (double)peak / 1048576.0, (double)file_bytes(wal) / 1048576.0,
           (double)file_bytes(db) / 1048576.0);
}

/* ---- the benchmark -------------------------------------------------------- */

static char *submit(const char *body, size_t len, char id[33])
{
    reply r = http("POST", "/v1/jobs", body, len);
    if (r.status != 202 && r.status != 200) {
        fprintf(stderr, "%s\n", r.body);
        die("submission refused");
    }
    job_id(&r, id);
    return r.body;
}

int main(void)
{
    const char *bin = getenv("PARTD_BIN") ? getenv("PARTD_BIN") : "build/partd";
    int seconds = getenv("BENCH_SECONDS") ? atoi(getenv("BENCH_SECONDS")) : 10;
    int conns = getenv("BENCH_CONNECTIONS") ? atoi(getenv("BENCH_CONNECTIONS")) : 64;
    long workers = sysconf(_SC_NPROCESSORS_ONLN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    char dir[] = "/tmp/partd-bench-http-XXXXXX";
    if (!mkdtemp(dir))
        die("mkdtemp");
    signal(SIGCHLD, SIG_DFL);
    start_daemon(bin, dir);
    printf("bench_http: daemon on 127.0.0.1:%s, %ld planner threads, wrk -t2 -c%d -d%ds\n",
           port, workers, conns, seconds);
    measure_large_request(bin, dir);

    wrk_figures livez = wrk("/livez", NULL, seconds, conns);
    printf("livez: %.0f req/s, p99 %.2f ms (target > 20000 req/s)\n", livez.rps, livez.p99_ms);
    wrk_figures probe = wrk("/livez", NULL, seconds, PROBE_CONNECTIONS);
    printf("livez, %d connections: %.0f req/s, p99 %.2f ms\n", PROBE_CONNECTIONS, probe.rps,
           probe.p99_ms);

    /* A result of about 1 MB from the size_based planner. */
    partd_gen_spec spec = {.n_nodes = 80000, .n_devices = 4, .memory_slack = 1.5,
                           .mode = "size_based", .seed = 1};
    size_t len;
    char *req = partd_gen_request(&spec, &len);
    char id[33], path[80];
    free(submit(req, len, id));
    free(req);
    wait_status(id, "succeeded");
    snprintf(path, sizeof path, "/v1/jobs/%s/result", id);
    reply res = http("GET", path, NULL, 0);
    printf("result document: %zu bytes, ETag %s\n", res.len, res.etag);
    wrk_figures full = wrk(path, NULL, seconds, conns);
    printf("result (200, full body): %.0f req/s, p99 %.2f ms, %.0f MB/s\n", full.rps,
           full.p99_ms, full.rps * (double)res.len / 1e6);
    /* What clients that accept a content coding get (curl --compressed,
     * browsers, partd.client): the coded form made once per plan. */
    static const char *const codings[] = {"gzip", "zstd"};
    for (int i = 0; i < 2; i++) {
        char accept[64];
        snprintf(accept, sizeof accept, "Accept-Encoding: %s", codings[i]);
        wrk_figures coded = wrk(path, accept, seconds, conns);
        printf("result (200, Content-Encoding %s): %.0f req/s, p99 %.2f ms, %.0f bytes per "
               "answer (target > 20000 req/s)%s\n", codings[i], coded.rps, coded.p99_ms,
               coded.bytes_per_s / coded.rps, coded.non2xx ? " [non-2xx answers]" : "");
    }
    char inm[160];
    snprintf(inm, sizeof inm, "If-None-Match: %s", res.etag);
    wrk_figures cond = wrk(path, inm, seconds, conns);
    printf("result (304, If-None-Match): %.0f req/s, p99 %.2f ms\n", cond.rps, cond.p99_ms);
    free(res.body);

    /* Every planner thread busy with a 10^6-node graph. */
    char ids[64][33];
    long n_busy = workers < 64 ? workers : 64;
    for (long i = 0; i < n_busy; i++) {
        /* Memory balancing over thousands of stages: tens of seconds of
         * planning, longer than the two measurements below. */
        partd_gen_spec big = {.n_nodes = 1000000, .n_devices = 8192, .memory_slack = 1.5,
                              .mode = "pipeline",
                              .extra_options = "\"pipeline\":{\"balance_by\":\"memory\"}",
                              .seed = (uint64_t)(100 + i)};
        req = partd_gen_request(&big, &len);
        if (!req)
            die("out of memory generating a request");
        free(submit(req, len, ids[i]));
        free(req);
    }
    int busy_before = 1;
    for (long i = 0; i < n_busy; i++) {
        wait_status(ids[i], "running");
        busy_before &= job_has_status(ids[i], "running");
    }
    if (!busy_before)
        printf("warning: a 10^6-node plan finished before the measurement started\n");
    wrk_figures busy = wrk("/livez", NULL, seconds, PROBE_CONNECTIONS);
    wrk_figures busy_max = wrk("/livez", NULL, seconds, conns);
    int still = 1;
    for (long i = 0; i < n_busy; i++)
        still &= job_has_status(ids[i], "running");
    printf("livez while %ld planners plan 10^6-node graphs, %d connections: %.0f req/s, "
           "p99 %.2f ms (target < 5 ms)%s\n", n_busy, PROBE_CONNECTIONS, busy.rps, busy.p99_ms,
           still ? "" : " [a plan finished during the measurement]");
    printf("livez while %ld planners plan 10^6-node graphs, %d connections: %.0f req/s, "
           "p99 %.2f ms\n", n_busy, conns, busy_max.rps, busy_max.p99_ms);
    for (long i = 0; i < n_busy; i++) {
        snprintf(path, sizeof path, "/v1/jobs/%s", ids[i]);
        free(http("DELETE", path, NULL, 0).body);
    }
    measure_wal(dir);
    kill(daemon_pid, SIGTERM);
    int st;
    waitpid(daemon_pid, &st, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_http: could not remove %s\n", dir);
    return 0;
}
