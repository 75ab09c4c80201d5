/*
 * show_result.c - reading a result document for `partd show`; see
 * show_result.h.
 *
 * Only what the pictures use is checked: a member that is present must have
 * the right type and range, and the members every result has (mode,
 * partitions with their device, memory and time, summary) must be present.
 * Members added by later versions are optional here (device_memory_bytes),
 * so that results of older versions still draw.
 */
#include "show_result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd.h"

#define PTR_CAP 96

typedef struct reader {
    char *err;
    size_t errcap;
} reader;

static int invalid(reader *rd, const char *ptr, const char *what)
{
    if (rd->errcap)
        snprintf(rd->err, rd->errcap, "not a result document: %s %s", *ptr ? ptr : "the document",
                 what);
    return PARTD_EINVALID;
}

/* A member that is a finite number >= 0. 1 found, 0 absent (an error when
 * required), negative PARTD_E* code otherwise. */
static int number(reader *rd, json_t *obj, const char *at, const char *key, int required,
                  double *out)
{
    char ptr[PTR_CAP];
    snprintf(ptr, sizeof ptr, "%s/%s", at, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return required ? invalid(rd, ptr, "is missing") : 0;
    if (!json_is_number(v))
        return invalid(rd, ptr, "must be a number");
    double d = json_number_value(v);
    if (!isfinite(d) || d < 0)
        return invalid(rd, ptr, "must be a number of at least 0");
    *out = d;
    return 1;
}

static int integer(reader *rd, json_t *obj, const char *at, const char *key, int required,
                   long min, long *out)
{
    char ptr[PTR_CAP];
    snprintf(ptr, sizeof ptr, "%s/%s", at, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return required ? invalid(rd, ptr, "is missing") : 0;
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 1L << 40)
        return invalid(rd, ptr, min > 0 ? "must be a positive integer" : "must be an integer");
    *out = (long)json_integer_value(v);
    return 1;
}

static int string(reader *rd, json_t *obj, const char *at, const char *key, int required,
                  const char **out)
{
    char ptr[PTR_CAP];
    snprintf(ptr, sizeof ptr, "%s/%s", at, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return required ? invalid(rd, ptr, "is missing") : 0;
    if (!json_is_string(v))
        return invalid(rd, ptr, "must be a string");
    *out = json_string_value(v);
    return 1;
}

/* An array of strings (names). */
static int names(reader *rd, json_t *obj, const char *at, const char *key, int required,
                 json_t **out)
{
    char ptr[PTR_CAP];
    snprintf(ptr, sizeof ptr, "%s/%s", at, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return required ? invalid(rd, ptr, "is missing") : 0;
    if (!json_is_array(v))
        return invalid(rd, ptr, "must be an array of names");
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!json_is_string(json_array_get(v, i))) {
            char item[PTR_CAP + 24];
            snprintf(item, sizeof item, "%s/%zu", ptr, i);
            return invalid(rd, item, "must be a string");
        }
    *out = v;
    return 1;
}

#define TRY(x)                                                                                 \
    do {                                                                                       \
        int rc_ = (x);                                                                         \
        if (rc_ < 0)                                                                           \
            return rc_;                                                                        \
    } while (0)

static int training_figures(reader *rd, json_t *o, const char *at, show_part *p)
{
    TRY(number(rd, o, at, "forward_ms", 1, &p->forward_ms));
    TRY(number(rd, o, at, "backward_ms", 1, &p->backward_ms));
    TRY(number(rd, o, at, "recompute_ms", 1, &p->recompute_ms));
    TRY(number(rd, o, at, "comm_ms", 1, &p->comm_ms));
    TRY(integer(rd, o, at, "in_flight", 1, 1, &p->in_flight));
    json_t *units = NULL;
    TRY(names(rd, o, at, "units", 0, &units));
    p->n_units = units ? json_array_size(units) : 0;
    TRY(names(rd, o, at, "checkpointed", 1, &p->checkpointed));
    /* The stage's own memory split (absent from results of older versions):
     * memory_bytes = param + input + activation memory. */
    double pm = 0, im = 0, am = 0;
    int has_p = number(rd, o, at, "param_memory_bytes", 0, &pm);
    TRY(has_p);
    int has_i = number(rd, o, at, "input_memory_bytes", 0, &im);
    TRY(has_i);
    int has_a = number(rd, o, at, "activation_memory_bytes", 0, &am);
    TRY(has_a);
    p->has_memory_split = has_p && has_i && has_a;
    if (p->has_memory_split) {
        p->params = pm;
        p->received = im;
        p->rest = am;
    }
    return PARTD_OK;
}

/* Splits memory_bytes into parameters, received tensors and the rest. A
 * training stage says its split (param_memory_bytes, with param_factor;
 * input_memory_bytes; activation_memory_bytes): used as given, scaled down
 * only if it were to exceed memory_bytes. Otherwise the result does not
 * carry param_factor, so the parameter part is the bytes of the parameters
 * themselves (1x) and any optimizer state lands in the rest, and a training
 * stage holds in_flight microbatches of its received tensors. */
static void split_memory(show_part *p, int training, long microbatches)
{
    if (p->has_memory_split) {
        double sum = p->params + p->received + p->rest;
        double f = sum > p->memory_bytes && sum > 0 ? p->memory_bytes / sum : 1.0;
        p->params *= f;
        p->received *= f;
        p->rest = fmax(0.0, p->memory_bytes - p->params - p->received);
        return;
    }
    double received = p->received;
    if (training && microbatches > 0)
        received = received * (double)p->in_flight / (double)microbatches;
    p->received = fmin(received, p->memory_bytes);
    p->params = fmin(p->params, p->memory_bytes - p->received);
    p->rest = p->memory_bytes - p->received - p->params;
}

static int partition(reader *rd, show_result *r, size_t i)
{
    char at[PTR_CAP];
    snprintf(at, sizeof at, "/partitions/%zu", i);
    json_t *o = json_array_get(json_object_get(r->doc, "partitions"), i);
    if (!json_is_object(o))
        return invalid(rd, at, "must be an object");
    show_part *p = &r->parts[i];
    p->device_memory_bytes = -1;
    p->nodes = -1;
    TRY(string(rd, o, at, "device", 1, &p->device));
    TRY(number(rd, o, at, "memory_bytes", 1, &p->memory_bytes));
    TRY(number(rd, o, at, "param_bytes", 1, &p->params));
    TRY(number(rd, o, at, "transfer_in_bytes", 1, &p->received));
    TRY(number(rd, o, at, "time_ms", 1, &p->time_ms));
    TRY(number(rd, o, at, "compute_ms", 0, &p->compute_ms));
    int has = number(rd, o, at, "device_memory_bytes", 0, &p->device_memory_bytes);
    TRY(has);
    if (has == 0)
        r->has_device_memory = 0;
    json_t *nodes = NULL;
    TRY(names(rd, o, at, "nodes", 0, &nodes));
    if (nodes)
        p->nodes = (long)json_array_size(nodes);
    if (r->training)
        TRY(training_figures(rd, o, at, p));
    return PARTD_OK;
}

static int training_summary(reader *rd, show_result *r, json_t *s)
{
    const char *schedule;
    TRY(integer(rd, s, "/summary", "microbatches", 1, 1, &r->microbatches));
    TRY(string(rd, s, "/summary", "schedule", 1, &schedule));
    if (strcmp(schedule, "gpipe") != 0 && strcmp(schedule, "1f1b") != 0)
        return invalid(rd, "/summary/schedule", "must be gpipe or 1f1b");
    r->one_f_one_b = strcmp(schedule, "1f1b") == 0;
    TRY(number(rd, s, "/summary", "step_ms", 1, &r->step_ms));
    TRY(number(rd, s, "/summary", "bubble_fraction", 0, &r->bubble_fraction));
    TRY(string(rd, s, "/summary", "checkpoint", 0, &r->checkpoint));
    return PARTD_OK;
}

static int frontier(reader *rd, show_sac *sac, json_t *a)
{
    if (!json_is_array(a))
        return invalid(rd, "/sac/frontier", "must be an array");
    sac->n_frontier = json_array_size(a);
    sac->frontier = calloc(sac->n_frontier ? sac->n_frontier : 1, sizeof *sac->frontier);
    if (!sac->frontier)
        return PARTD_ENOMEM;
    for (size_t i = 0; i < sac->n_frontier; i++) {
        char at[PTR_CAP];
        snprintf(at, sizeof at, "/sac/frontier/%zu", i);
        json_t *o = json_array_get(a, i);
        show_frontier_point *pt = &sac->frontier[i];
        if (!json_is_object(o))
            return invalid(rd, at, "must be an object");
        const char *status;
        TRY(number(rd, o, at, "budget_bytes", 1, &pt->budget_bytes));
        TRY(string(rd, o, at, "status", 1, &status));
        int peak = number(rd, o, at, "peak_memory_bytes", 0, &pt->peak_bytes);
        int rc = number(rd, o, at, "recomputation_time_ms", 0, &pt->recompute_ms);
        TRY(peak);
        TRY(rc);
        pt->solved = peak == 1 && rc == 1 &&
                     (strcmp(status, "optimal") == 0 || strcmp(status, "feasible") == 0);
    }
    return PARTD_OK;
}

static int sac_part(reader *rd, show_result *r, json_t *o)
{
    show_sac *sac = &r->sac;
    if (!json_is_object(o))
        return invalid(rd, "/sac", "must be an object");
    sac->present = 1;
    TRY(string(rd, o, "/sac", "status", 1, &sac->status));
    TRY(number(rd, o, "/sac", "recomputation_time_ms", 1, &sac->recompute_ms));
    TRY(number(rd, o, "/sac", "baseline_peak_memory_bytes", 1, &sac->baseline_bytes));
    TRY(number(rd, o, "/sac", "budget_bytes", 1, &sac->budget_bytes));
    int peak = number(rd, o, "/sac", "peak_memory_bytes", 0, &sac->peak_bytes);
    TRY(peak);
    sac->has_peak = peak == 1;
    sac->ac_decisions = json_object_get(o, "ac_decisions");
    if (!json_is_object(sac->ac_decisions))
        return invalid(rd, "/sac/ac_decisions", sac->ac_decisions ? "must be an object" : "is missing");
    json_t *f = json_object_get(o, "frontier");
    return f ? frontier(rd, sac, f) : PARTD_OK;
}

static int summary(reader *rd, show_result *r)
{
    json_t *s = json_object_get(r->doc, "summary");
    if (!json_is_object(s))
        return invalid(rd, "/summary", s ? "must be an object" : "is missing");
    TRY(number(rd, s, "/summary", "bottleneck_ms", 1, &r->bottleneck_ms));
    TRY(number(rd, s, "/summary", "total_ms", 0, &r->total_ms));
    TRY(number(rd, s, "/summary", "peak_memory_bytes", 1, &r->peak_bytes));
    TRY(number(rd, s, "/summary", "transfer_bytes", 0, &r->transfer_bytes));
    return r->training ? training_summary(rd, r, s) : PARTD_OK;
}

static int parse_doc(reader *rd, show_result *r)
{
    if (!json_is_object(r->doc))
        return invalid(rd, "", "must be a JSON object");
    TRY(string(rd, r->doc, "", "mode", 1, &r->mode));
    r->training = strcmp(r->mode, "training") == 0;
    json_t *parts = json_object_get(r->doc, "partitions");
    if (!json_is_array(parts) || json_array_size(parts) == 0)
        return invalid(rd, "/partitions", parts ? "must be a non-empty array" : "is missing");
    TRY(summary(rd, r));
    r->n_parts = json_array_size(parts);
    r->parts = calloc(r->n_parts, sizeof *r->parts);
    if (!r->parts)
        return PARTD_ENOMEM;
    r->has_device_memory = 1;
    for (size_t i = 0; i < r->n_parts; i++) {
        TRY(partition(rd, r, i));
        split_memory(&r->parts[i], r->training, r->microbatches);
    }
    json_t *sac = json_object_get(r->doc, "sac");
    return sac ? sac_part(rd, r, sac) : PARTD_OK;
}

int show_result_parse(const char *json, size_t len, show_result *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    reader rd = {err, errcap};
    if (errcap)
        err[0] = '\0';
    json_error_t je;
    out->doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!out->doc) {
        if (errcap)
            snprintf(err, errcap, "not JSON: %s at line %d column %d", je.text, je.line,
                     je.column);
        return PARTD_EMALFORMED;
    }
    int rc = parse_doc(&rd, out);
    if (rc == PARTD_ENOMEM && errcap)
        snprintf(err, errcap, "out of memory reading the result");
    if (rc != PARTD_OK)
        show_result_free(out);
    return rc;
}

void show_result_free(show_result *r)
{
    json_decref(r->doc);
    free(r->parts);
    free(r->sac.frontier);
    memset(r, 0, sizeof *r);
}
