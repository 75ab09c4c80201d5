/*
 * serve.c - `partd serve`: wires settings, store, cache, job engine and HTTP
 * server together and runs the libuv loop on the main thread.
 *
 * Start-up order: settings, the data directory's lock (datadir.h: a second
 * daemon on it exits 1), store (a corrupt or unwritable one ends the
 * process with a clear message and exit code), HTTP listening (/readyz says
 * 503 while starting), recovery of unfinished jobs, READY=1.
 * Shutdown: SIGTERM/SIGINT -> STOPPING=1, /readyz 503, no new jobs, running
 * jobs get --shutdown-grace-ms, the rest stay queued in the store; exit 0.
 */
#include "serve.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "datadir.h"
#include "http/http.h"
#include "jobs/cache.h"
#include "jobs/jobs.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "serve_internal.h"
#include "store/store.h"

#define EXIT_IN_USE 1 /* the data directory is another daemon's */
#define EXIT_USAGE 64
#define EXIT_NOINPUT 66
#define EXIT_SOFTWARE 70

/* What `partd serve` makes and owns while it serves; it hands each part
 * what that part works with in a struct of its own (partd_http_context in
 * http.h, partd_jobs_options in jobs.h). Set before any thread starts. */
typedef struct service {
    const partd_config *cfg;
    partd_store *store;
    partd_cache *cache;
    partd_metrics metrics;
    struct partd_jobs *jobs;
    partd_decode_limits limits;
    char runner[PARTD_RUNNER_LEN + 1]; /* this replica's name (--name, else host:pid) */
} service;

typedef struct server {
    service svc;
    partd_config cfg;
    uv_loop_t loop;
    uv_signal_t sigterm, sigint;
    uv_timer_t sweep, watchdog, slow;
    int loop_ready;
    int drained;               /* on_drained closed the handles */
    int lock_fd;               /* the data directory's lock (datadir.h) */
    partd_http *http;
    partd_http_context http_ctx; /* what the HTTP server answers from */
    char *token;               /* --token-file's token, NULL when auth is off */
} server;

static void on_handle_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_drained(void *ctx)
{
    server *s = ctx;
    partd_log_msg("info", "shutdown", "drained; stopping");
    s->drained = 1;
    uv_close((uv_handle_t *)&s->sigterm, on_handle_closed);
    uv_close((uv_handle_t *)&s->sigint, on_handle_closed);
    uv_close((uv_handle_t *)&s->sweep, on_handle_closed);
    uv_close((uv_handle_t *)&s->watchdog, on_handle_closed);
    uv_close((uv_handle_t *)&s->slow, on_handle_closed);
    partd_jobs_close(s->svc.jobs);
}

static void on_signal(uv_signal_t *h, int signum)
{
    server *s = h->data;
    if (atomic_exchange(&s->http_ctx.phase, PARTD_HTTP_DRAINING) == PARTD_HTTP_DRAINING)
        return;
    sd_notify(0, "STOPPING=1\nSTATUS=draining");
    partd_log_msg("info", "shutdown", "%s received: draining (grace %llu ms)",
                  signum == SIGTERM ? "SIGTERM" : "SIGINT",
                  (unsigned long long)s->cfg.shutdown_grace_ms);
    /* No new job is taken now: bodies being decoded are stopped rather
     * than decoded to their end. */
    partd_http_stop_decoding(s->http);
    partd_jobs_drain(s->svc.jobs, s->cfg.shutdown_grace_ms);
}

static void forget_cached(const char *key, void *ctx)
{
    partd_cache_remove(ctx, key);
}

static void on_sweep(uv_timer_t *t)
{
    server *s = t->data;
    /* On the store's clock: replicas sharing it agree on what is old even
     * when their own clocks do not. Unreachable: the next sweep does it. */
    int64_t now = 0;
    if (partd_store_now_ms(s->svc.store, &now) != PARTD_OK)
        return;
    int64_t cutoff = now - (int64_t)s->cfg.retention_hours * 3600 * 1000;
    unsigned jobs = 0, results = 0;
    if (partd_store_sweep(s->svc.store, cutoff, forget_cached, s->svc.cache, &jobs, &results) ==
            PARTD_OK &&
        (jobs || results)) {
        partd_log_field f[] = {PARTD_LF_N("jobs_deleted", jobs),
                               PARTD_LF_N("results_deleted", results), PARTD_LF_END};
        partd_log("info", "retention", f);
    }
}

static void on_slow_check(uv_timer_t *t)
{
    server *s = t->data;
    if (s->http)
        partd_http_cut_slow(s->http);
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    /* Sent from the loop thread: a stuck loop stops the pings. */
    sd_notify(0, "WATCHDOG=1");
}

/* The token file's first line, without trailing whitespace. */
static int load_token(server *s, char *err, size_t cap)
{
    FILE *f = fopen(s->cfg.token_file, "rb");
    if (!f) {
        snprintf(err, cap, "cannot read --token-file %s", s->cfg.token_file);
        return -1;
    }
    char buf[4097];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    n = strlen(buf);
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (n < 16) {
        snprintf(err, cap, "--token-file %s: the token must be at least 16 characters",
                 s->cfg.token_file);
        return -1;
    }
    s->token = strdup(buf);
    s->http_ctx.token = s->token;
    s->http_ctx.token_len = n;
    return s->token ? 0 : -1;
}

static void set_pool_size(uint64_t workers)
{
    /* libuv reads this once, when the first work request is queued. */
    char n[32];
    snprintf(n, sizeof n, "%llu", (unsigned long long)workers);
    setenv("UV_THREADPOOL_SIZE", n, 1);
}

/* glibc gives threads malloc arenas of their own, up to 8 per core. A
 * result made on a planner thread and freed on the loop or an HTTP thread
 * leaves free chunks in an arena that the threads allocating next may not
 * use, so the resident size grows with the number of threads that ever
 * allocated (HTTP threads under many clients), far beyond what the cache
 * and the jobs hold. One arena per core bounds that and keeps threads on
 * different cores from contending. An operator's MALLOC_ARENA_MAX wins. */
static void limit_arenas(void)
{
    if (getenv("MALLOC_ARENA_MAX"))
        return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    mallopt(M_ARENA_MAX, cores < 2 ? 2 : cores > 64 ? 64 : (int)cores);
}

static void start_timers(server *s)
{
    uv_timer_init(&s->loop, &s->sweep);
    s->sweep.data = s;
    uv_timer_start(&s->sweep, on_sweep, 1000, s->cfg.sweep_interval_s * 1000);
    uv_timer_init(&s->loop, &s->slow);
    s->slow.data = s;
    uv_timer_start(&s->slow, on_slow_check, 250, 250);
    uv_timer_init(&s->loop, &s->watchdog);
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
        uint64_t ms = usec / 2000 ? usec / 2000 : 1;
        uv_timer_start(&s->watchdog, on_watchdog, ms, ms);
    }
    uv_signal_init(&s->loop, &s->sigterm);
    uv_signal_init(&s->loop, &s->sigint);
    s->sigterm.data = s->sigint.data = s;
    uv_signal_start(&s->sigterm, on_signal, SIGTERM);
    uv_signal_start(&s->sigint, on_signal, SIGINT);
}

/* --name, else host:pid: how jobs show the replica that runs them. */
static void name_runner(server *s)
{
    if (s->cfg.name) {
        snprintf(s->svc.runner, sizeof s->svc.runner, "%s", s->cfg.name);
        return;
    }
    char host[64] = "localhost";
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    snprintf(s->svc.runner, sizeof s->svc.runner, "%s:%ld", host, (long)getpid());
}

/* The HTTP server's context from the settings and the parts made so far
 * (its token and phase are set before). */
static void fill_http_context(server *s)
{
    partd_http_context *c = &s->http_ctx;
    partd_config_http(&s->cfg, &c->settings);
    c->store = s->svc.store;
    c->cache = s->svc.cache;
    c->jobs = s->svc.jobs;
    c->metrics = &s->svc.metrics;
    c->limits = s->svc.limits;
}

/* The job engine, given what it works with from the service. */
static partd_jobs *start_jobs(server *s)
{
    partd_jobs_options opt = {
        .store = s->svc.store,
        .cache = s->svc.cache,
        .metrics = &s->svc.metrics,
        .limits = s->svc.limits,
        .runner = s->svc.runner,
        .workers = s->cfg.workers,
        .queue_max = s->cfg.queue_max,
        .job_timeout_ms = s->cfg.job_timeout_ms,
        .max_result_bytes = s->cfg.max_result_bytes,
        .lease_ms = s->cfg.lease_ms,
        .on_drained = on_drained,
        .ctx = s,
    };
    return partd_jobs_new(&s->loop, &opt);
}

static int run(server *s)
{
    char err[1024];
    int code = 0, held = 0;
    s->lock_fd = partd_datadir_lock(s->cfg.data_dir, &held, err, sizeof err);
    if (s->lock_fd < 0) {
        partd_log_msg("error", "store", "%s", err);
        fprintf(stderr, "partd serve: %s\n", err);
        return held ? EXIT_IN_USE : PARTD_EXIT_STORE_UNWRITABLE;
    }
    name_runner(s);
    s->svc.store = partd_store_open_url(s->cfg.store, s->cfg.data_dir, err, sizeof err, &code);
    if (!s->svc.store) {
        partd_log_msg("error", "store", "%s", err);
        fprintf(stderr, "partd serve: %s\n", err);
        return code;
    }
    if (partd_store_limit_size(s->svc.store, s->cfg.store_max_bytes) != PARTD_OK) {
        fprintf(stderr, "partd serve: cannot apply --store-max-bytes\n");
        return PARTD_EXIT_STORE_UNWRITABLE;
    }
    s->svc.cache = partd_cache_new(s->cfg.cache_max_bytes);
    s->loop_ready = uv_loop_init(&s->loop) == 0;
    if (!s->loop_ready || !s->svc.cache || !(s->svc.jobs = start_jobs(s))) {
        fprintf(stderr, "partd serve: out of memory\n");
        return EXIT_SOFTWARE;
    }
    start_timers(s); /* signals first: a SIGTERM during recovery drains */
    fill_http_context(s);
    s->http = partd_http_start(&s->http_ctx, err, sizeof err, &code);
    if (!s->http) {
        partd_log_msg("error", "http", "%s", err);
        fprintf(stderr, "partd serve: %s\n", err);
        return code;
    }
    int recovered = partd_jobs_recover(s->svc.jobs);
    if (recovered < 0) {
        fprintf(stderr, "partd serve: recovering queued jobs failed: %s\n",
                partd_strerror(recovered));
        return recovered == PARTD_EIO ? PARTD_EXIT_STORE_UNWRITABLE : EXIT_SOFTWARE;
    }
    int expected = PARTD_HTTP_STARTING;
    atomic_compare_exchange_strong(&s->http_ctx.phase, &expected, PARTD_HTTP_READY);
    partd_log_field f[] = {
        PARTD_LF_S("address", partd_http_address(s->http)),
        PARTD_LF_S("data_dir", s->cfg.data_dir),
        PARTD_LF_N("workers", s->cfg.workers),
        PARTD_LF_N("recovered_jobs", recovered),
        PARTD_LF_S("version", PARTD_VERSION),
        PARTD_LF_S("tls", s->cfg.tls_cert ? "on" : "off"),
        PARTD_LF_END};
    partd_log("info", "listening", f);
    sd_notifyf(0, "READY=1\nSTATUS=listening on %s", partd_http_address(s->http));
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return 0;
}

static void teardown(server *s)
{
    partd_http_stop(s->http);
    if (s->svc.jobs) {
        /* A start refused after the timers, signals and the engine were set
         * up (HTTP or recovery failed) never drained: drain now with no
         * grace (runs already handed to the pool are stopped, their jobs
         * stay queued in the store), which closes every handle; else the
         * loop cannot be closed and their memory leaks. */
        if (!s->drained) {
            partd_jobs_drain(s->svc.jobs, 0);
            uv_run(&s->loop, UV_RUN_DEFAULT);
        }
        uv_run(&s->loop, UV_RUN_NOWAIT); /* let closing handles finish */
        partd_jobs_free(s->svc.jobs);
    }
    if (s->loop_ready)
        uv_loop_close(&s->loop);
    partd_cache_free(s->svc.cache);
    partd_store_close(s->svc.store);
    partd_datadir_unlock(s->lock_fd); /* last: nothing touches the directory after */
    free(s->token);
}

int partd_serve_main(int argc, char **argv)
{
    server *s = calloc(1, sizeof *s);
    if (!s)
        return EXIT_SOFTWARE;
    char err[512];
    int rc = partd_config_parse(&s->cfg, argc, argv, err, sizeof err);
    if (rc == PARTD_CONFIG_HELP) {
        partd_config_help(stdout);
        free(s);
        return 0;
    }
    if (rc != PARTD_CONFIG_OK) {
        fprintf(stderr, "partd serve: %s\n", err);
        free(s);
        return EXIT_USAGE;
    }
    const char *why;
    if (partd__serve_systemd_load(&why) != PARTD_OK) {
        fprintf(stderr, "partd serve: %s\n", why);
        free(s);
        return EXIT_SOFTWARE;
    }
    partd_log_init(s->cfg.log_format);
    signal(SIGPIPE, SIG_IGN);
    set_pool_size(s->cfg.workers);
    limit_arenas();
    s->svc.cfg = &s->cfg;
    s->lock_fd = -1;
    partd_metrics_init(&s->svc.metrics);
    atomic_init(&s->http_ctx.phase, PARTD_HTTP_STARTING);
    s->svc.limits.max_model_bytes = s->cfg.max_model_bytes;
    s->svc.limits.max_nodes = (uint32_t)s->cfg.max_nodes;
    if (s->cfg.token_file && load_token(s, err, sizeof err) != 0) {
        fprintf(stderr, "partd serve: %s\n", err);
        free(s);
        return EXIT_NOINPUT;
    }
    int code = run(s);
    teardown(s);
    if (code == 0)
        partd_log_msg("info", "shutdown", "stopped");
    free(s);
    return code;
}
