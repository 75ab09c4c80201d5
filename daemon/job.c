/*
 * job.c - job status names and the job document. See job.h.
 */
#include "job.h"

#include <stdlib.h>
#include <string.h>

static const char *const STATUS_NAMES[PARTD_JOB_N_STATUS] = {
    "queued", "running", "succeeded", "failed", "cancelled"};

const char *partd_job_status_name(partd_job_status s)
{
    return (unsigned)s < PARTD_JOB_N_STATUS ? STATUS_NAMES[s] : "unknown";
}

int partd_job_status_parse(const char *name)
{
    for (int i = 0; i < PARTD_JOB_N_STATUS; i++)
        if (strcmp(STATUS_NAMES[i], name) == 0)
            return i;
    return -1;
}

void partd_job_row_clear(partd_job_row *row)
{
    free(row->summary);
    free(row->error);
    row->summary = NULL;
    row->error = NULL;
}

static json_t *time_or_null(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[32];
    partd_rfc3339(ms, buf);
    return json_string(buf);
}

/* Appends `,"key":` and the raw JSON text (without trailing whitespace). The
 * summary and problem documents are spliced in as produced, so the job shows
 * the result's summary byte for byte (a parse and re-dump would reformat
 * its numbers). */
static int append_raw(char **out, size_t *len, const char *key, const char *raw)
{
    size_t rlen = strlen(raw);
    while (rlen && (raw[rlen - 1] == '\n' || raw[rlen - 1] == ' ' || raw[rlen - 1] == '\r'))
        rlen--;
    size_t klen = strlen(key);
    char *p = realloc(*out, *len + klen + rlen + 8);
    if (!p)
        return -1;
    *out = p;
    p += *len;
    *p++ = ',';
    *p++ = '"';
    memcpy(p, key, klen);
    p += klen;
    *p++ = '"';
    *p++ = ':';
    memcpy(p, raw, rlen);
    p += rlen;
    *p = '\0';
    *len = (size_t)(p - *out);
    return 0;
}

char *partd_job_to_text(const partd_job_row *row, size_t *len)
{
    char self[64], result[80];
    snprintf(self, sizeof self, "/v1/jobs/%s", row->id);
    snprintf(result, sizeof result, "/v1/jobs/%s/result", row->id);
    json_t *job = json_object();
    if (!job)
        return NULL;
    int bad = 0;
    bad |= json_object_set_new(job, "id", json_string(row->id));
    bad |= json_object_set_new(job, "status", json_string(partd_job_status_name(row->status)));
    bad |= json_object_set_new(job, "created_at", time_or_null(row->created_ms));
    bad |= json_object_set_new(job, "started_at", time_or_null(row->started_ms));
    bad |= json_object_set_new(job, "finished_at", time_or_null(row->finished_ms));
    bad |= json_object_set_new(job, "graph_hash", json_string(row->graph_hash));
    bad |= json_object_set_new(job, "cache_key", json_string(row->cache_key));
    bad |= json_object_set_new(job, "cached", json_boolean(row->cached));
    bad |= json_object_set_new(job, "attempts", json_integer(row->attempts));
    bad |= json_object_set_new(job, "runner",
                               row->runner[0] ? json_string(row->runner) : json_null());
    char *text = bad ? NULL : json_dumps(job, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(job);
    if (!text)
        return NULL;
    size_t n = strlen(text) - 1; /* drop the closing brace */
    text[n] = '\0';
    char links[200];
    snprintf(links, sizeof links, "{\"self\":\"%s\",\"result\":\"%s\"}", self, result);
    if ((row->status == PARTD_JOB_SUCCEEDED && row->summary &&
         append_raw(&text, &n, "summary", row->summary) != 0) ||
        (row->status == PARTD_JOB_FAILED && row->error &&
         append_raw(&text, &n, "error", row->error) != 0) ||
        append_raw(&text, &n, "links", links) != 0) {
        free(text);
        return NULL;
    }
    char *closed = realloc(text, n + 3);
    if (!closed) {
        free(text);
        return NULL;
    }
    text = closed;
    text[n++] = '}';
    text[n++] = '\n';
    text[n] = '\0';
    if (len)
        *len = n;
    return text;
}
