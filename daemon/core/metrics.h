/*
 * metrics.h - the daemon's Prometheus metrics.
 *
 * Counters and histograms are lock-free atomics that any thread updates;
 * partd_metrics_render() writes the text exposition format (version 0.0.4).
 * Label sets are closed (routes, methods and status codes from fixed lists)
 * so a hostile client cannot grow the series count.
 *
 * Figures that live elsewhere (the cache's size, readiness, a shared
 * store's queue) are sampled by the caller and handed to the renderer as
 * plain values (partd_metrics_gauges): this unit, part of the daemon's
 * core, depends on no other part of the daemon.
 */
#ifndef PARTD_DAEMON_METRICS_H
#define PARTD_DAEMON_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef enum partd_route {
    PARTD_ROUTE_JOBS = 0,      /* /v1/jobs */
    PARTD_ROUTE_JOB,           /* /v1/jobs/{id} */
    PARTD_ROUTE_JOB_RESULT,    /* /v1/jobs/{id}/result */
    PARTD_ROUTE_LIVEZ,
    PARTD_ROUTE_READYZ,
    PARTD_ROUTE_METRICS,
    PARTD_ROUTE_VERSION,
    PARTD_ROUTE_JOB_PLAN_SVG,  /* /v1/jobs/{id}/plan.svg */
    PARTD_ROUTE_CONSOLE,       /* / */
    PARTD_ROUTE_JOB_EXPORT,    /* /v1/jobs/{id}/export/{format} */
    PARTD_ROUTE_OTHER,
    PARTD_ROUTE_COUNT
} partd_route;

const char *partd_metrics_route_label(partd_route r);

#define PARTD_METHOD_COUNT 5 /* GET HEAD POST DELETE other */
#define PARTD_CODE_COUNT 17

#define PARTD_HTTP_BUCKETS 14
#define PARTD_JOB_BUCKETS 14

/* Jobs are counted by the status they end in: jobs_finished is indexed by
 * a job's status, in the order of jobs/job.h's partd_job_status (queued,
 * running, then the final ones rendered from PARTD_METRICS_FIRST_FINAL_STATUS
 * on: succeeded, failed, cancelled), which metrics.c's names follow. */
#define PARTD_METRICS_JOB_STATUSES 5
#define PARTD_METRICS_FIRST_FINAL_STATUS 2

#define PARTD_METRICS_STOP_TIMEOUT 0
#define PARTD_METRICS_STOP_SHUTDOWN 1

typedef struct partd_histogram {
    const double *bounds;      /* seconds, ascending */
    unsigned n_bounds;
    atomic_uint_fast64_t counts[PARTD_JOB_BUCKETS + 1]; /* last = +Inf */
    atomic_uint_fast64_t sum_us;
} partd_histogram;

typedef struct partd_metrics {
    atomic_uint_fast64_t http[PARTD_METHOD_COUNT][PARTD_ROUTE_COUNT][PARTD_CODE_COUNT];
    partd_histogram http_duration;
    atomic_uint_fast64_t jobs_submitted;
    atomic_uint_fast64_t jobs_finished[PARTD_METRICS_JOB_STATUSES];
    partd_histogram job_duration;
    partd_histogram queue_wait;
    atomic_int_fast64_t jobs_queued;
    atomic_int_fast64_t jobs_running;
    /* Ends of runs handed to the writer thread and not yet written (a
     * shared store; jobs_write.c). */
    atomic_int_fast64_t ends_unwritten;
    atomic_uint_fast64_t cache_hits, cache_misses;
    /* Request bodies whose decoding was stopped before it ended, by why:
     * PARTD_METRICS_STOP_TIMEOUT (--request-timeout-s) or
     * PARTD_METRICS_STOP_SHUTDOWN (SIGTERM). */
    atomic_uint_fast64_t decodes_stopped[2];
    double start_time_s;
    /* A store shared by replicas, once work sharing has started (NULL
     * before and on a store of one's own), set by the job engine: whoever
     * renders reads the shared queue's depth and the store's round trips
     * from it into partd_metrics_gauges. */
    _Atomic(struct partd_store *) shared_store;
} partd_metrics;

void partd_metrics_init(partd_metrics *m);

void partd_metrics_http(partd_metrics *m, const char *method, partd_route route, int code,
                        double seconds);
void partd_metrics_histogram_observe(partd_histogram *h, double seconds);

/* Values that live elsewhere, sampled at render time. */
typedef struct partd_metrics_gauges {
    uint64_t cache_bytes;
    uint64_t cache_entries;
    int ready;
    /* 1 when shared_store was set: then partd_jobs_queued is the shared
     * queue's depth (shared_queued; < 0 when it could not be counted, and
     * the replica's own figure is shown) and the store's round trips
     * (store_round_trips) are rendered. */
    int shared;
    int64_t shared_queued;
    uint64_t store_round_trips;
} partd_metrics_gauges;

/* malloc'd text (caller frees), NULL on ENOMEM. */
char *partd_metrics_render(partd_metrics *m, const partd_metrics_gauges *g, size_t *len);

#endif
