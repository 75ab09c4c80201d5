/*
 * metrics.c - Prometheus text exposition. See metrics.h.
 */
#define _GNU_SOURCE
#include "metrics.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "partd/partd.h"
#include "time.h"

#ifndef PARTD_BUILD
#define PARTD_BUILD "unknown"
#endif

static const double HTTP_BOUNDS[PARTD_HTTP_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static const double JOB_BOUNDS[PARTD_JOB_BUCKETS] = {
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800};

static const char *const METHODS[PARTD_METHOD_COUNT] = {"GET", "HEAD", "POST", "DELETE",
                                                        "other"};
static const int CODES[PARTD_CODE_COUNT - 1] = {200, 202, 304, 400, 401, 404, 405, 409,
                                                413, 415, 422, 429, 431, 500, 503, 504};
/* The statuses' names as the API gives them, in partd_job_status's order. */
static const char *const JOB_STATUSES[PARTD_METRICS_JOB_STATUSES] = {
    "queued", "running", "succeeded", "failed", "cancelled"};
static const char *const ROUTES[PARTD_ROUTE_COUNT] = {
    "/v1/jobs", "/v1/jobs/{id}", "/v1/jobs/{id}/result", "/livez",
    "/readyz",  "/metrics",      "/version",             "/v1/jobs/{id}/plan.svg",
    "/",        "/v1/jobs/{id}/export/{format}",         "other"};

const char *partd_metrics_route_label(partd_route r)
{
    return (unsigned)r < PARTD_ROUTE_COUNT ? ROUTES[r] : "other";
}

void partd_metrics_init(partd_metrics *m)
{
    memset(m, 0, sizeof *m);
    m->http_duration.bounds = HTTP_BOUNDS;
    m->http_duration.n_bounds = PARTD_HTTP_BUCKETS;
    m->job_duration.bounds = JOB_BOUNDS;
    m->job_duration.n_bounds = PARTD_JOB_BUCKETS;
    m->queue_wait.bounds = JOB_BOUNDS;
    m->queue_wait.n_bounds = PARTD_JOB_BUCKETS;
    m->start_time_s = (double)partd_time_now_ms() / 1000.0;
}

static unsigned method_index(const char *method)
{
    for (unsigned i = 0; i + 1 < PARTD_METHOD_COUNT; i++)
        if (strcmp(METHODS[i], method) == 0)
            return i;
    return PARTD_METHOD_COUNT - 1;
}

static unsigned code_index(int code)
{
    for (unsigned i = 0; i < PARTD_CODE_COUNT - 1; i++)
        if (CODES[i] == code)
            return i;
    return PARTD_CODE_COUNT - 1;
}

void partd_metrics_histogram_observe(partd_histogram *h, double seconds)
{
    unsigned i = 0;
    while (i < h->n_bounds && seconds > h->bounds[i])
        i++;
    atomic_fetch_add(&h->counts[i], 1);
    if (seconds > 0)
        atomic_fetch_add(&h->sum_us, (uint64_t)(seconds * 1e6));
}

void partd_metrics_http(partd_metrics *m, const char *method, partd_route route, int code,
                        double seconds)
{
    if ((unsigned)route >= PARTD_ROUTE_COUNT)
        route = PARTD_ROUTE_OTHER;
    atomic_fetch_add(&m->http[method_index(method)][route][code_index(code)], 1);
    partd_metrics_histogram_observe(&m->http_duration, seconds);
}

/* ---- rendering --------------------------------------------------------- */

typedef struct buf {
    char *p;
    size_t n, cap;
    int failed;
} buf;

static void bprintf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bprintf(buf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < b->cap - b->n) {
            b->n += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

static void histogram(buf *b, const char *name, const char *help, partd_histogram *h)
{
    bprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cumulative = 0;
    for (unsigned i = 0; i <= h->n_bounds; i++) {
        cumulative += atomic_load(&h->counts[i]);
        if (i < h->n_bounds)
            bprintf(b, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i],
                    (unsigned long long)cumulative);
        else
            bprintf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cumulative);
    }
    bprintf(b, "%s_sum %.6f\n%s_count %llu\n", name, (double)atomic_load(&h->sum_us) / 1e6, name,
            (unsigned long long)cumulative);
}

static void counter(buf *b, const char *name, const char *help, uint64_t v)
{
    bprintf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
            (unsigned long long)v);
}

static void gauge(buf *b, const char *name, const char *help, double v)
{
    bprintf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static long count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static void process_metrics(buf *b, double start_time_s)
{
    long page = sysconf(_SC_PAGESIZE);
    unsigned long long vsize = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu", &vsize, &rss) != 2)
            vsize = rss = 0;
        fclose(f);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    struct rlimit rl;
    double max_fds = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (double)rl.rlim_cur : -1;
    bprintf(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
               "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n",
            cpu);
    gauge(b, "process_resident_memory_bytes", "Resident memory size in bytes.",
          (double)rss * (double)page);
    gauge(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
          (double)vsize * (double)page);
    gauge(b, "process_open_fds", "Number of open file descriptors.", (double)count_open_fds());
    gauge(b, "process_max_fds", "Maximum number of open file descriptors.", max_fds);
    gauge(b, "process_start_time_seconds",
          "Start time of the process since unix epoch in seconds.", start_time_s);
}

char *partd_metrics_render(partd_metrics *m, const partd_metrics_gauges *g, size_t *len)
{
    buf b = {malloc(16384), 0, 16384, 0};
    if (!b.p)
        return NULL;
    bprintf(&b, "# HELP partd_http_requests_total HTTP requests answered.\n"
                "# TYPE partd_http_requests_total counter\n");
    for (unsigned mi = 0; mi < PARTD_METHOD_COUNT; mi++)
        for (unsigned r = 0; r < PARTD_ROUTE_COUNT; r++)
            for (unsigned c = 0; c < PARTD_CODE_COUNT; c++) {
                uint64_t v = atomic_load(&m->http[mi][r][c]);
                if (!v)
                    continue;
                char code[8];
                if (c < PARTD_CODE_COUNT - 1)
                    snprintf(code, sizeof code, "%d", CODES[c]);
                else
                    snprintf(code, sizeof code, "other");
                bprintf(&b, "partd_http_requests_total{method=\"%s\",route=\"%s\",code=\"%s\"} %llu\n",
                        METHODS[mi], ROUTES[r], code, (unsigned long long)v);
            }
    histogram(&b, "partd_http_request_duration_seconds", "Time to answer an HTTP request.",
              &m->http_duration);
    counter(&b, "partd_jobs_submitted_total", "Jobs accepted by POST /v1/jobs.",
            atomic_load(&m->jobs_submitted));
    bprintf(&b, "# HELP partd_jobs_finished_total Jobs that reached a final status.\n"
                "# TYPE partd_jobs_finished_total counter\n");
    for (int s = PARTD_METRICS_FIRST_FINAL_STATUS; s < PARTD_METRICS_JOB_STATUSES; s++)
        bprintf(&b, "partd_jobs_finished_total{status=\"%s\"} %llu\n", JOB_STATUSES[s],
                (unsigned long long)atomic_load(&m->jobs_finished[s]));
    histogram(&b, "partd_job_duration_seconds", "Planning time of a job.", &m->job_duration);
    histogram(&b, "partd_job_queue_wait_seconds", "Time a job waited before planning started.",
              &m->queue_wait);
    int shared = g->shared;
    int64_t queued = shared ? g->shared_queued : -1;
    gauge(&b, "partd_jobs_queued",
          shared ? "Jobs waiting to run, of every replica sharing the store."
                 : "Jobs waiting to run.",
          (double)(queued >= 0 ? queued : atomic_load(&m->jobs_queued)));
    gauge(&b, "partd_jobs_running", "Jobs being planned.", (double)atomic_load(&m->jobs_running));
    counter(&b, "partd_cache_hits_total", "Submissions answered from the result cache.",
            atomic_load(&m->cache_hits));
    counter(&b, "partd_cache_misses_total", "Submissions that needed planning.",
            atomic_load(&m->cache_misses));
    bprintf(&b, "# HELP partd_http_decodes_stopped_total Request bodies whose decoding was "
                "stopped: past --request-timeout-s, or at shutdown.\n"
                "# TYPE partd_http_decodes_stopped_total counter\n"
                "partd_http_decodes_stopped_total{reason=\"timeout\"} %llu\n"
                "partd_http_decodes_stopped_total{reason=\"shutdown\"} %llu\n",
            (unsigned long long)atomic_load(&m->decodes_stopped[PARTD_METRICS_STOP_TIMEOUT]),
            (unsigned long long)atomic_load(&m->decodes_stopped[PARTD_METRICS_STOP_SHUTDOWN]));
    gauge(&b, "partd_cache_bytes", "Bytes held by the in-memory result cache.",
          (double)g->cache_bytes);
    gauge(&b, "partd_cache_entries", "Results held by the in-memory result cache.",
          (double)g->cache_entries);
    gauge(&b, "partd_ready", "1 when /readyz answers 200.", g->ready ? 1 : 0);
    bprintf(&b, "# HELP partd_build_info Build of the running daemon.\n"
                "# TYPE partd_build_info gauge\n"
                "partd_build_info{version=\"%s\",planner_version=\"%s\",build=\"%s\"} 1\n",
            PARTD_VERSION, PARTD_PLANNER_VERSION, PARTD_BUILD);
    if (shared) {
        counter(&b, "partd_store_round_trips_total",
                "Round trips to the shared store's database server.", g->store_round_trips);
        gauge(&b, "partd_store_ends_unwritten",
              "Ends of runs (results and final job states) waiting to be written to the "
              "shared store.",
              (double)atomic_load(&m->ends_unwritten));
    }
    process_metrics(&b, m->start_time_s);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}
