/*
 * config.h - `partd serve` settings: command-line flags, PARTD_* environment
 * variables and defaults, in that order of precedence.
 *
 * Every flag --foo-bar has the variable PARTD_FOO_BAR. partd_config_parse()
 * validates every value (numbers in range, enums known) and reports the
 * first bad one in `err` (a sentence naming the flag or variable).
 *
 * Ownership: string members point into argv/environ or at static defaults;
 * the config owns no memory.
 */
#ifndef PARTD_DAEMON_CONFIG_H
#define PARTD_DAEMON_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/log.h"

typedef struct partd_config {
    const char *listen;           /* ADDR:PORT, [v6]:PORT */
    const char *data_dir;
    const char *store;            /* store URL: "sqlite" or postgresql://... */
    uint64_t lease_ms;            /* shared store: a running job's lease */
    const char *name;             /* this replica's name; NULL = host:pid */
    uint64_t store_max_bytes;     /* 0 = no cap */
    uint64_t workers;             /* planner threads (libuv pool size) */
    uint64_t http_threads;        /* libmicrohttpd thread pool size */
    uint64_t queue_max;           /* jobs waiting before 429 */
    uint64_t max_body_bytes;
    uint64_t max_inflight_bytes;  /* all request bodies being received */
    uint64_t max_model_bytes;     /* decoded model estimate; 0 = none */
    uint64_t max_nodes;           /* 0 = none */
    uint64_t job_timeout_ms;      /* 0 = none */
    uint64_t max_result_bytes;    /* result document; 0 = none */
    uint64_t cache_max_bytes;     /* in-memory LRU of result documents */
    uint64_t retention_hours;
    uint64_t sweep_interval_s;    /* retention task period */
    const char *token_file;       /* NULL = no auth */
    const char *tls_cert;         /* NULL = plain HTTP */
    const char *tls_key;
    partd_log_format log_format;
    uint64_t shutdown_grace_ms;
    uint64_t conn_timeout_s;      /* idle connection cut-off */
    uint64_t header_timeout_s;    /* request line + headers must arrive within */
    uint64_t request_timeout_s;   /* headers + body must arrive within */
    uint64_t max_connections;
    uint64_t max_connections_per_ip;
    uint64_t conn_memory_bytes;   /* libmicrohttpd per-connection pool */
} partd_config;

/* Outcome of parsing. */
enum {
    PARTD_CONFIG_OK = 0,
    PARTD_CONFIG_HELP = 1,   /* --help was given: print help, exit 0 */
    PARTD_CONFIG_ERROR = 2   /* err says what */
};

/* argv[0] is the subcommand name ("serve"). */
int partd_config_parse(partd_config *cfg, int argc, char **argv,
                       char *err, size_t errcap);

struct partd_http_settings;

/* The HTTP server's settings (http.h) from cfg; strings stay cfg's. */
void partd_config_http(const partd_config *cfg, struct partd_http_settings *out);

void partd_config_help(FILE *out);

#endif
