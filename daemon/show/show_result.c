/*
 * show_result.c - reading a result document for `partd show`; see
 * show_result.h.
 *
 * Only what the pictures use is checked: a member that is present must have
 * the right type and range, and the members every result has (mode,
 * partitions with their device, memory and time, summary) must be present.
 * Members added by later versions are optional here (device_memory_bytes),
 * so that results of older versions still draw. A training result with a
 * `schedule` is one of contract v3 and must carry what re-timing its step
 * takes (ranks, actions, each stage's rank and figures, the checkpoint
 * mode); one without is a v2 result, drawn without a timeline.
 */
#include "show_result.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"
#include "partd/timeline.h"

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

static int training_figures(reader *rd, json_t *o, const char *at, int v3, partd__show_part *p)
{
    TRY(number(rd, o, at, "forward_ms", 1, &p->forward_ms));
    TRY(number(rd, o, at, "backward_ms", 1, &p->backward_ms));
    TRY(number(rd, o, at, "recompute_ms", 1, &p->recompute_ms));
    p->rank = -1;
    p->in_flight = 1;
    if (v3) {
        /* what the step is re-timed from (contract, "The training result") */
        TRY(integer(rd, o, at, "rank", 1, 0, &p->rank));
        TRY(number(rd, o, at, "input_grad_ms", 1, &p->input_grad_ms));
        TRY(number(rd, o, at, "weight_grad_ms", 1, &p->weight_grad_ms));
        TRY(number(rd, o, at, "send_ms", 1, &p->comm_ms));
    } else {
        /* v2 said comm_ms where v3 says send_ms, and in_flight where v3
         * reads a rank's memory from its order */
        int has_comm = number(rd, o, at, "comm_ms", 0, &p->comm_ms);
        TRY(has_comm);
        if (!has_comm)
            TRY(number(rd, o, at, "send_ms", 1, &p->comm_ms));
        TRY(integer(rd, o, at, "in_flight", 0, 1, &p->in_flight));
    }
    TRY(names(rd, o, at, "units", 0, &p->units));
    p->n_units = p->units ? json_array_size(p->units) : 0;
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
    if (has_p && p->params > 0)
        p->param_factor = pm / p->params; /* p->params is param_bytes still */
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
static void split_memory(partd__show_part *p, int training, long microbatches)
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

static int partition(reader *rd, partd__show_result *r, size_t i)
{
    char at[PTR_CAP];
    snprintf(at, sizeof at, "/partitions/%zu", i);
    json_t *o = json_array_get(json_object_get(r->doc, "partitions"), i);
    if (!json_is_object(o))
        return invalid(rd, at, "must be an object");
    partd__show_part *p = &r->parts[i];
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
        TRY(training_figures(rd, o, at, r->n_ranks > 0, p));
    return PARTD_OK;
}

/* A training schedule's name: PyTorch's seven, or v2's gpipe and 1f1b. */
static int schedule_name(reader *rd, json_t *o, const char *at, const char *key, const char **out)
{
    char ptr[PTR_CAP];
    snprintf(ptr, sizeof ptr, "%s/%s", at, key);
    int has = string(rd, o, at, key, 1, out);
    partd_training_schedule v3;
    if (has == 1 && strcmp(*out, "gpipe") != 0 && strcmp(*out, "1f1b") != 0 &&
        partd_training_schedule_parse(*out, &v3) != 0)
        return invalid(rd, ptr, "must name a training schedule");
    return has;
}

static int training_summary(reader *rd, partd__show_result *r, json_t *s)
{
    TRY(integer(rd, s, "/summary", "microbatches", 1, 1, &r->microbatches));
    TRY(schedule_name(rd, s, "/summary", "schedule", &r->schedule));
    TRY(number(rd, s, "/summary", "step_ms", 1, &r->step_ms));
    TRY(number(rd, s, "/summary", "bubble_fraction", 0, &r->bubble_fraction));
    /* v3 checkpoints microbatches by the mode: re-timing needs it */
    TRY(string(rd, s, "/summary", "checkpoint", r->n_ranks > 0, &r->checkpoint));
    partd_checkpoint mode;
    if (r->checkpoint && partd_checkpoint_parse(r->checkpoint, &mode) != 0)
        return invalid(rd, "/summary/checkpoint", "must name a checkpoint mode");
    return PARTD_OK;
}

/* ---- v3 training: ranks, the schedule's actions, the step re-timed ---- */

static int rank_entry(reader *rd, partd__show_result *r, json_t *o, size_t i)
{
    char at[PTR_CAP], ptr[PTR_CAP + 8];
    snprintf(at, sizeof at, "/ranks/%zu", i);
    if (!json_is_object(o))
        return invalid(rd, at, "must be an object");
    partd__show_rank *k = &r->ranks[i];
    long id;
    TRY(integer(rd, o, at, "rank", 1, 0, &id));
    snprintf(ptr, sizeof ptr, "%s/rank", at);
    if (id != (long)i)
        return invalid(rd, ptr, "must be the rank's place in /ranks");
    TRY(string(rd, o, at, "device", 1, &k->device));
    TRY(number(rd, o, at, "memory_bytes", 1, &k->memory_bytes));
    TRY(number(rd, o, at, "device_memory_bytes", 1, &k->device_memory_bytes));
    TRY(number(rd, o, at, "busy_ms", 1, &k->busy_ms));
    return PARTD_OK;
}

/* One rank's list of actions, appended at r->actions + *n. */
static int action_list(reader *rd, partd__show_result *r, json_t *list, size_t rank, size_t *n)
{
    char at[PTR_CAP];
    snprintf(at, sizeof at, "/schedule/actions/%zu", rank);
    if (!json_is_array(list))
        return invalid(rd, at, "must be an array of actions");
    for (size_t i = 0; i < json_array_size(list); i++) {
        const char *s = json_string_value(json_array_get(list, i));
        if (!s || !partd_timeline_action_parse(s, &r->actions[*n])) {
            char item[PTR_CAP + 24];
            snprintf(item, sizeof item, "%s/%zu", at, i);
            return invalid(rd, item,
                           "must be an action as PyTorch writes it (\"3F1\": stage, "
                           "F, B, I or W, microbatch)");
        }
        (*n)++;
    }
    return PARTD_OK;
}

static int schedule_part(reader *rd, partd__show_result *r, json_t *sched)
{
    if (!json_is_object(sched))
        return invalid(rd, "/schedule", "must be an object (name, virtual_stages, actions)");
    const char *name;
    TRY(schedule_name(rd, sched, "/schedule", "name", &name));
    TRY(integer(rd, sched, "/schedule", "virtual_stages", 1, 1, &r->virtual_stages));
    json_t *lists = json_object_get(sched, "actions");
    if (!json_is_array(lists) || json_array_size(lists) == 0)
        return invalid(rd, "/schedule/actions",
                       lists ? "must be a non-empty array, one list per rank" : "is missing");
    json_t *ranks = json_object_get(r->doc, "ranks");
    if (!json_is_array(ranks) || json_array_size(ranks) != json_array_size(lists))
        return invalid(rd, "/ranks",
                       ranks ? "must be an array with one rank per list of /schedule/actions"
                             : "is missing");
    size_t n = 0;
    for (size_t k = 0; k < json_array_size(lists); k++)
        n += json_array_size(json_array_get(lists, k));
    if (n > UINT32_MAX || json_array_size(lists) > UINT32_MAX - 1)
        return invalid(rd, "/schedule/actions", "holds more actions than a plan can");
    r->n_ranks = json_array_size(ranks);
    r->ranks = calloc(r->n_ranks, sizeof *r->ranks);
    r->action_off = calloc(r->n_ranks + 1, sizeof *r->action_off);
    r->actions = calloc(n ? n : 1, sizeof *r->actions);
    if (!r->ranks || !r->action_off || !r->actions)
        return PARTD_ENOMEM;
    n = 0;
    for (size_t k = 0; k < r->n_ranks; k++) {
        TRY(rank_entry(rd, r, json_array_get(ranks, k), k));
        TRY(action_list(rd, r, json_array_get(lists, k), k, &n));
        r->action_off[k + 1] = (uint32_t)n;
    }
    return PARTD_OK;
}

static uint32_t clamp32(long v)
{
    return v < 0 ? 0 : (unsigned long)v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The step, re-timed from the stages' figures and the ranks' actions. */
static int retime(reader *rd, partd__show_result *r)
{
    r->tl_stages = calloc(r->n_parts, sizeof *r->tl_stages);
    if (!r->tl_stages)
        return PARTD_ENOMEM;
    for (size_t j = 0; j < r->n_parts; j++) {
        const partd__show_part *p = &r->parts[j];
        r->tl_stages[j] = (partd_timeline_stage){
            clamp32(p->rank),  p->forward_ms,   p->backward_ms, p->input_grad_ms,
            p->weight_grad_ms, p->recompute_ms, p->comm_ms};
    }
    partd_checkpoint mode = PARTD_CHECKPOINT_AUTO;
    partd_checkpoint_parse(r->checkpoint, &mode);
    uint32_t M = clamp32(r->microbatches);
    r->plan = (partd_timeline_plan){(uint32_t)r->n_ranks,
                                    r->n_parts > UINT32_MAX ? UINT32_MAX : (uint32_t)r->n_parts,
                                    M,
                                    partd_timeline_checkpointed(mode, M),
                                    r->tl_stages,
                                    r->action_off,
                                    r->actions};
    char why[256];
    int rc = partd_timeline_run(&r->plan, &r->timeline, why, sizeof why);
    if (rc == PARTD_EINVALID && rd->errcap)
        snprintf(rd->err, rd->errcap, "not a result document: %s", why);
    return rc;
}

static int frontier(reader *rd, partd__show_sac *sac, json_t *a)
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
        partd__show_frontier_point *pt = &sac->frontier[i];
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

static int sac_part(reader *rd, partd__show_result *r, json_t *o)
{
    partd__show_sac *sac = &r->sac;
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

static int summary(reader *rd, partd__show_result *r)
{
    json_t *s = json_object_get(r->doc, "summary");
    if (!json_is_object(s))
        return invalid(rd, "/summary", s ? "must be an object" : "is missing");
    TRY(number(rd, s, "/summary", "bottleneck_ms", 1, &r->bottleneck_ms));
    TRY(number(rd, s, "/summary", "total_ms", 0, &r->total_ms));
    TRY(number(rd, s, "/summary", "peak_memory_bytes", 1, &r->peak_bytes));
    TRY(number(rd, s, "/summary", "transfer_bytes", 0, &r->transfer_bytes));
    r->latency_ms = -1;
    TRY(number(rd, s, "/summary", "latency_ms", 0, &r->latency_ms));
    return r->training ? training_summary(rd, r, s) : PARTD_OK;
}

/* A request given where a result is expected: the first mistake of a new
 * user, who needs to hear what to run instead rather than "/mode is
 * missing". */
static int is_request(reader *rd, json_t *doc)
{
    if (json_object_get(doc, "mode") || json_object_get(doc, "partitions") ||
        !json_object_get(doc, "graph"))
        return 0;
    if (rd->errcap)
        snprintf(rd->err, rd->errcap,
                 "not a result document: this is a request (it has /graph); `partd plan "
                 "REQUEST.json` makes a result from it (partd plan REQUEST.json | partd show)");
    return 1;
}

static int parse_doc(reader *rd, partd__show_result *r)
{
    if (!json_is_object(r->doc))
        return invalid(rd, "", "must be a JSON object");
    if (is_request(rd, r->doc))
        return PARTD_EINVALID;
    TRY(string(rd, r->doc, "", "mode", 1, &r->mode));
    r->training = strcmp(r->mode, "training") == 0;
    json_t *parts = json_object_get(r->doc, "partitions");
    if (!json_is_array(parts) || json_array_size(parts) == 0)
        return invalid(rd, "/partitions", parts ? "must be a non-empty array" : "is missing");
    /* a training result of v3 has a schedule with its actions, v2's none */
    json_t *sched = r->training ? json_object_get(r->doc, "schedule") : NULL;
    if (sched)
        TRY(schedule_part(rd, r, sched));
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
    if (r->n_ranks)
        TRY(retime(rd, r));
    json_t *sac = json_object_get(r->doc, "sac");
    return sac ? sac_part(rd, r, sac) : PARTD_OK;
}

int partd__show_result_parse(const char *json, size_t len, partd__show_result *out, char *err,
                             size_t errcap)
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
        partd__show_result_free(out);
    return rc;
}

void partd__show_result_free(partd__show_result *r)
{
    json_decref(r->doc);
    free(r->parts);
    free(r->ranks);
    free(r->tl_stages);
    free(r->action_off);
    free(r->actions);
    partd_timeline_free(&r->timeline);
    free(r->sac.frontier);
    memset(r, 0, sizeof *r);
}

const char *partd__show_result_part_word(const partd__show_result *r)
{
    /* Pipeline stages run in a line; FX's partitions form a DAG. */
    return strcmp(r->mode, "pipeline") == 0 || r->training ? "stage" : "partition";
}
