/*
 * job.h - the job as the API shows it: status values, the plain record that
 * the store and the job table both produce, what it says of its request,
 * and its JSON rendering.
 *
 * Ownership: a partd_job_row owns `summary` and `error` (malloc'd JSON
 * texts or NULL); partd_job_row_clear() frees them.
 */
#ifndef PARTD_DAEMON_JOB_H
#define PARTD_DAEMON_JOB_H

#include <jansson.h>
#include <stdint.h>

#include "id.h"

/* Longest runner name (--name; default host:pid). */
#define PARTD_RUNNER_LEN 127
/* Room for what a job says of its request (partd_job_about). */
#define PARTD_JOB_ABOUT_CAP 1024
/* Device names a job lists at most (n_devices counts them all). */
#define PARTD_JOB_ABOUT_DEVICES 16

struct partd_request;

typedef enum partd_job_status {
    PARTD_JOB_QUEUED = 0,
    PARTD_JOB_RUNNING,
    PARTD_JOB_SUCCEEDED,
    PARTD_JOB_FAILED,
    PARTD_JOB_CANCELLED,
    PARTD_JOB_N_STATUS
} partd_job_status;

/* "queued", "running", ... */
const char *partd_job_status_name(partd_job_status s);
/* -1 when the name is not a status. */
int partd_job_status_parse(const char *name);

static inline int partd_job_finished(partd_job_status s)
{
    return s >= PARTD_JOB_SUCCEEDED;
}

typedef struct partd_job_row {
    char id[PARTD_ID_LEN + 1];
    int64_t seq;               /* store order: larger is newer */
    partd_job_status status;
    int64_t created_ms, started_ms, finished_ms; /* epoch ms, 0 = not yet */
    char graph_hash[72];
    char cache_key[72];
    int cached;
    char *summary;             /* the result's summary object (JSON), or NULL */
    char *error;               /* problem document (JSON) when failed, or NULL */
    int error_status;          /* the problem's HTTP status when failed */
    int attempts;              /* runs started */
    char runner[PARTD_RUNNER_LEN + 1]; /* the replica of the last attempt, "" = none yet */
    /* What was asked, as JSON members without braces (partd_job_about);
     * "" for jobs stored before partd kept it. An array, so that rows copy
     * by assignment as they always have. */
    char about[PARTD_JOB_ABOUT_CAP];
} partd_job_row;

void partd_job_row_clear(partd_job_row *row);

/* The request as the job document shows it, for people telling jobs
 * apart: "graph_name" (graph.name or null), "mode", "n_devices" and
 * "devices" (the first PARTD_JOB_ABOUT_DEVICES names, fewer when they
 * would not fit), written to out as JSON members without braces.
 * PARTD_OK or PARTD_ENOMEM (out is "" then). */
int partd_job_about(const struct partd_request *req, char out[PARTD_JOB_ABOUT_CAP]);

/* The contract's job object, serialised (malloc'd, compact, newline-
 * terminated); `summary` and `error` are embedded byte for byte. NULL on
 * ENOMEM. */
char *partd_job_to_text(const partd_job_row *row, size_t *len);

#endif
