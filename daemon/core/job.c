/*
 * job.c - job status names and the job document. See job.h.
 */
#include "job.h"
#include "time.h"

#include <stdlib.h>
#include <string.h>

#include "partd/model.h"
#include "partd/partd.h"

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

/* The members of an object's compact dump, without its braces, into out;
 * 1 when they fit. */
static int members_fit(json_t *o, char out[PARTD_JOB_ABOUT_CAP])
{
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t n = text ? strlen(text) : 0;
    int fits = n >= 2 && n - 2 < PARTD_JOB_ABOUT_CAP;
    if (fits) {
        memcpy(out, text + 1, n - 2);
        out[n - 2] = '\0';
    }
    free(text);
    return fits;
}

int partd_job_about(const partd_request *req, char out[PARTD_JOB_ABOUT_CAP])
{
    out[0] = '\0';
    json_t *devices = json_array();
    json_t *o = json_pack("{s:o?, s:s, s:I, s:O}", "graph_name",
                          req->graph_name ? json_string(req->graph_name) : NULL, "mode",
                          partd_mode_name(req->options.mode), "n_devices",
                          (json_int_t)req->n_devices, "devices", devices);
    int rc = o && devices ? PARTD_OK : PARTD_ENOMEM;
    for (uint32_t d = 0; rc == PARTD_OK && d < req->n_devices && d < PARTD_JOB_ABOUT_DEVICES; d++)
        if (json_array_append_new(devices, json_string(partd_device_name(req, d))) != 0)
            rc = PARTD_ENOMEM;
    /* long names: fewer of them, then no graph name */
    while (rc == PARTD_OK && !members_fit(o, out)) {
        size_t n = json_array_size(devices);
        if (n)
            json_array_remove(devices, n - 1);
        else if (json_object_set_new(o, "graph_name", json_null()) != 0 ||
                 !members_fit(o, out))
            rc = PARTD_ENOMEM; /* a mode and a count always fit: memory ran out */
    }
    json_decref(devices);
    json_decref(o);
    if (rc != PARTD_OK)
        out[0] = '\0';
    return rc;
}

static json_t *time_or_null(int64_t ms)
{
    if (ms <= 0)
        return json_null();
    char buf[32];
    partd_time_rfc3339(ms, buf);
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

/* Appends "," and members (JSON object members without braces). */
static int append_members(char **out, size_t *len, const char *members)
{
    size_t m = strlen(members);
    char *p = realloc(*out, *len + m + 2);
    if (!p)
        return -1;
    *out = p;
    p[(*len)++] = ',';
    memcpy(p + *len, members, m + 1);
    *len += m;
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
    if (row->about[0] && append_members(&text, &n, row->about) != 0) {
        free(text);
        return NULL;
    }
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
