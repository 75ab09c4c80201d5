/*
 * service.h - the state that the daemon's units share while it serves:
 * settings, store, cache, metrics, job engine and lifecycle phase.
 *
 * Created and owned by serve.c; every other unit borrows it. Members are
 * set before any thread starts, except `phase` (atomic).
 */
#ifndef PARTD_DAEMON_SERVICE_H
#define PARTD_DAEMON_SERVICE_H

#include <stdatomic.h>
#include <stddef.h>

#include "cache.h"
#include "config.h"
#include "decode.h"
#include "metrics.h"
#include "store.h"

typedef enum partd_phase {
    PARTD_PHASE_STARTING = 0,  /* recovering: /readyz 503 */
    PARTD_PHASE_READY,
    PARTD_PHASE_DRAINING       /* SIGTERM seen: no new jobs, /readyz 503 */
} partd_phase;

struct partd_jobs;

typedef struct partd_service {
    const partd_config *cfg;
    partd_store *store;
    partd_cache *cache;
    partd_metrics metrics;
    struct partd_jobs *jobs;
    partd_decode_limits limits;
    char *token;               /* bearer token, NULL when auth is off */
    size_t token_len;
    atomic_int phase;          /* partd_phase */
    char runner[PARTD_RUNNER_LEN + 1]; /* this replica's name (--name, else host:pid) */
} partd_service;

#endif
