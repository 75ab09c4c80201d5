/*
 * config.c - table-driven flags + environment variables for `partd serve`.
 * See config.h. One table lists every setting once; --help, the environment
 * lookup and validation are all generated from it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/text.h"
#include "http/http.h"
#include "partd/partd.h"

typedef enum { OPT_STRING, OPT_U64, OPT_LOG_FORMAT } opt_type;

typedef struct opt_def {
    const char *flag;       /* without the leading "--" */
    opt_type type;
    size_t offset;          /* into partd_config */
    const char *def;        /* default as text, NULL = unset */
    uint64_t min, max;      /* for OPT_U64 */
    const char *help;
} opt_def;

#define U64_MAX_SAFE (UINT64_C(1) << 53)

static const opt_def OPTS[] = {
    {"listen", OPT_STRING, offsetof(partd_config, listen), "127.0.0.1:8080", 0, 0,
     "address to listen on: IPv4:PORT or [IPv6]:PORT (port 0 = any free port)"},
    {"data-dir", OPT_STRING, offsetof(partd_config, data_dir), "./partd-data", 0, 0,
     "directory of the SQLite store (created if missing)"},
    {"store", OPT_STRING, offsetof(partd_config, store), "sqlite", 0, 0,
     "store URL: sqlite (partd.db in the data directory) or postgresql://... or "
     "postgres://... (replicas share it)"},
    {"lease-ms", OPT_U64, offsetof(partd_config, lease_ms), "30000", 200, 86400000,
     "shared store: a running job another replica takes over when its runner stops renewing"},
    {"name", OPT_STRING, offsetof(partd_config, name), NULL, 0, 0,
     "this replica's name, shown as a job's runner (default: host:pid)"},
    {"store-max-bytes", OPT_U64, offsetof(partd_config, store_max_bytes), "0", 0, U64_MAX_SAFE,
     "cap on the store's size; past it writes fail as on a full disk (0 = no cap)"},
    {"workers", OPT_U64, offsetof(partd_config, workers), NULL, 1, 128,
     "planner threads (default: number of CPUs)"},
    {"http-threads", OPT_U64, offsetof(partd_config, http_threads), "4", 1, 256,
     "HTTP threads (libmicrohttpd thread pool, epoll)"},
    {"queue-max", OPT_U64, offsetof(partd_config, queue_max), "256", 1, 1000000,
     "jobs waiting to run before POST answers 429"},
    {"max-body-bytes", OPT_U64, offsetof(partd_config, max_body_bytes), "268435456", 1,
     U64_MAX_SAFE, "largest request body; larger ones get 413"},
    {"max-inflight-bytes", OPT_U64, offsetof(partd_config, max_inflight_bytes), "1073741824",
     1, U64_MAX_SAFE, "memory for all request bodies being received at once; past it 503"},
    {"max-model-bytes", OPT_U64, offsetof(partd_config, max_model_bytes), "4294967296", 0,
     U64_MAX_SAFE, "largest decoded model (estimate) before 422; 0 = no limit"},
    {"max-nodes", OPT_U64, offsetof(partd_config, max_nodes), "0", 0, UINT32_MAX,
     "most graph nodes per request; 0 = no limit"},
    {"job-timeout-ms", OPT_U64, offsetof(partd_config, job_timeout_ms), "600000", 0,
     U64_MAX_SAFE, "time limit per job, planning, rendering and storing included; 0 = none"},
    {"max-result-bytes", OPT_U64, offsetof(partd_config, max_result_bytes), "268435456", 0,
     U64_MAX_SAFE, "largest result document; a job whose result is larger fails; 0 = no limit"},
    {"cache-max-bytes", OPT_U64, offsetof(partd_config, cache_max_bytes), "268435456", 0,
     U64_MAX_SAFE, "in-memory LRU of result documents with their zstd and gzip forms, in bytes"},
    {"retention-hours", OPT_U64, offsetof(partd_config, retention_hours), "168", 0, 1000000,
     "finished jobs and results older than this are deleted (0: at the next sweep)"},
    {"sweep-interval-s", OPT_U64, offsetof(partd_config, sweep_interval_s), "300", 1, 86400,
     "period of the retention task"},
    {"token-file", OPT_STRING, offsetof(partd_config, token_file), NULL, 0, 0,
     "file holding the bearer token required on /v1/ (default: no auth)"},
    {"tls-cert", OPT_STRING, offsetof(partd_config, tls_cert), NULL, 0, 0,
     "PEM certificate (chain): serve HTTPS"},
    {"tls-key", OPT_STRING, offsetof(partd_config, tls_key), NULL, 0, 0,
     "PEM private key for --tls-cert"},
    {"log-format", OPT_LOG_FORMAT, offsetof(partd_config, log_format), "text", 0, 0,
     "log lines on stderr: text or json"},
    {"shutdown-grace-ms", OPT_U64, offsetof(partd_config, shutdown_grace_ms), "10000", 0,
     U64_MAX_SAFE, "on SIGTERM, time running jobs get to finish"},
    {"conn-timeout-s", OPT_U64, offsetof(partd_config, conn_timeout_s), "30", 1, 3600,
     "a connection idle this long is closed"},
    {"header-timeout-s", OPT_U64, offsetof(partd_config, header_timeout_s), "10", 1, 3600,
     "a request's line and headers must arrive within this time (slow senders are cut off)"},
    {"request-timeout-s", OPT_U64, offsetof(partd_config, request_timeout_s), "300", 1, 86400,
     "a request's headers and body must arrive within this time"},
    {"max-connections", OPT_U64, offsetof(partd_config, max_connections), "1024", 1, 1000000,
     "concurrent connections"},
    {"max-connections-per-ip", OPT_U64, offsetof(partd_config, max_connections_per_ip), "256",
     1, 1000000, "concurrent connections from one client address"},
    {"conn-memory-bytes", OPT_U64, offsetof(partd_config, conn_memory_bytes), "65536", 8192,
     16777216, "memory per connection for request line and headers"},
};

#define N_OPTS (sizeof OPTS / sizeof OPTS[0])

static void env_name(const char *flag, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "PARTD_");
    for (const char *p = flag; *p && n + 1 < cap; p++)
        out[n++] = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    out[n] = '\0';
}

static int set_value(partd_config *cfg, const opt_def *o, const char *value,
                     const char *source, char *err, size_t errcap)
{
    char *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STRING:
        if (*value == '\0') {
            snprintf(err, errcap, "%s: empty value", source);
            return PARTD_CONFIG_ERROR;
        }
        *(const char **)field = value;
        return PARTD_CONFIG_OK;
    case OPT_U64: {
        uint64_t v;
        if (partd_text_parse_u64(value, UINT64_MAX, &v) != PARTD_OK || v < o->min || v > o->max) {
            snprintf(err, errcap, "%s: '%s' is not an integer from %llu to %llu", source,
                     value, (unsigned long long)o->min, (unsigned long long)o->max);
            return PARTD_CONFIG_ERROR;
        }
        *(uint64_t *)field = v;
        return PARTD_CONFIG_OK;
    }
    case OPT_LOG_FORMAT:
        if (strcmp(value, "text") == 0)
            *(partd_log_format *)field = PARTD_LOG_TEXT;
        else if (strcmp(value, "json") == 0)
            *(partd_log_format *)field = PARTD_LOG_JSON;
        else {
            snprintf(err, errcap, "%s: '%s' is not text or json", source, value);
            return PARTD_CONFIG_ERROR;
        }
        return PARTD_CONFIG_OK;
    }
    return PARTD_CONFIG_ERROR;
}

static const opt_def *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTS; i++)
        if (strlen(OPTS[i].flag) == len && memcmp(OPTS[i].flag, name, len) == 0)
            return &OPTS[i];
    return NULL;
}

static int apply_defaults_and_env(partd_config *cfg, char *err, size_t errcap)
{
    memset(cfg, 0, sizeof *cfg);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->workers = ncpu > 0 ? (uint64_t)ncpu : 1;
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_def *o = &OPTS[i];
        char name[64];
        env_name(o->flag, name, sizeof name);
        const char *env = getenv(name);
        const char *value = env ? env : o->def;
        if (!value)
            continue;
        int rc = set_value(cfg, o, value, env ? name : o->flag, err, errcap);
        if (rc != PARTD_CONFIG_OK)
            return rc;
    }
    return PARTD_CONFIG_OK;
}

int partd_config_parse(partd_config *cfg, int argc, char **argv, char *err, size_t errcap)
{
    int rc = apply_defaults_and_env(cfg, err, errcap);
    if (rc != PARTD_CONFIG_OK)
        return rc;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return PARTD_CONFIG_HELP;
        if (strncmp(arg, "--", 2) != 0) {
            snprintf(err, errcap, "unexpected argument '%s' (see --help)", arg);
            return PARTD_CONFIG_ERROR;
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const opt_def *o = find_opt(name, len);
        if (!o) {
            snprintf(err, errcap, "unknown option '%s' (see --help)", arg);
            return PARTD_CONFIG_ERROR;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, errcap, "--%s needs a value", o->flag);
                return PARTD_CONFIG_ERROR;
            }
            value = argv[++i];
        }
        char source[80];
        snprintf(source, sizeof source, "--%s", o->flag);
        rc = set_value(cfg, o, value, source, err, errcap);
        if (rc != PARTD_CONFIG_OK)
            return rc;
    }
    if (cfg->name && strlen(cfg->name) > 127) {
        snprintf(err, errcap, "--name: longer than 127 bytes");
        return PARTD_CONFIG_ERROR;
    }
    if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL)) {
        snprintf(err, errcap, "--tls-cert and --tls-key go together");
        return PARTD_CONFIG_ERROR;
    }
    return PARTD_CONFIG_OK;
}

void partd_config_http(const partd_config *cfg, partd_http_settings *out)
{
    *out = (partd_http_settings){
        .listen = cfg->listen,
        .data_dir = cfg->data_dir,
        .tls_cert = cfg->tls_cert,
        .tls_key = cfg->tls_key,
        .http_threads = cfg->http_threads,
        .conn_timeout_s = cfg->conn_timeout_s,
        .header_timeout_s = cfg->header_timeout_s,
        .request_timeout_s = cfg->request_timeout_s,
        .max_connections = cfg->max_connections,
        .max_connections_per_ip = cfg->max_connections_per_ip,
        .conn_memory_bytes = cfg->conn_memory_bytes,
        .max_body_bytes = cfg->max_body_bytes,
        .max_inflight_bytes = cfg->max_inflight_bytes,
        .queue_max = cfg->queue_max,
    };
}

void partd_config_help(FILE *out)
{
    fprintf(out,
            "usage: partd serve [OPTION...]\n\n"
            "Runs the partitioning service. Every option can also be given as an\n"
            "environment variable (--foo-bar as PARTD_FOO_BAR); flags win.\n\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_def *o = &OPTS[i];
        char name[64];
        env_name(o->flag, name, sizeof name);
        fprintf(out, "  --%-24s %s\n  %-26s [%s; default: %s]\n", o->flag, o->help, "", name,
                o->def ? o->def : (strcmp(o->flag, "workers") == 0 ? "number of CPUs" : "unset"));
    }
    fprintf(out,
            "  --help                     this text\n\n"
            "Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT), 1 the store is\n"
            "not a partd store (empty, foreign or corrupt) or another daemon uses\n"
            "the data directory, 64 bad usage, 66 a file named by an\n"
            "option cannot be read, 71 the address cannot be listened on,\n"
            "73 the data directory or store cannot be created or written, 70 internal.\n");
}
