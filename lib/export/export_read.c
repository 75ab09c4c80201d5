/* export_read.c - a result document read into a partd__export_plan; see
 * export_internal.h.
 *
 * What a training result must hold (contract v3, "The training result"):
 * partitions[] with `units` (and `rank`, `checkpointed`, `device`),
 * `summary.microbatches` and `summary.checkpoint`, and the schedule's name
 * and stages per rank in `schedule` (v3) or `summary.schedule` (v2, where
 * every rank held one stage). Each rank's action list is read from
 * `schedule.actions`; a result without it (v2) gets the named class's own
 * order. Node-level results (pipeline, size_based and FX's other modes)
 * need only their partitions. Everything else in the document is left to
 * the formats that read it. */
#include "export_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "partd/enums.h"
#include "partd/partd.h"

static const char *const node_modes[] = {
    "pipeline", "size_based", "cost_aware", "kl_based", "sparse_nn", "aot_based",
};

typedef struct reader {
    partd__export_plan *p;
    partd_problem *pb;
    uint32_t errors;
} reader;

static void bad(reader *rd, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void bad(reader *rd, const char *pointer, const char *fmt, ...)
{
    if (rd->errors++ == 0)
        partd_problem_set(rd->pb, 422, "not-a-result", "Not a result document",
                          "the input is not a partd result document (see errors)");
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    partd_problem_add(rd->pb, pointer, "%s", msg);
}

/* An integer member from lo to hi; 0 (and an error) when it is not. */
static int get_int(reader *rd, const json_t *obj, const char *key, const char *pointer,
                   int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        bad(rd, pointer, "must be an integer from %lld to %lld", (long long)lo, (long long)hi);
        return 0;
    }
    *out = json_integer_value(v);
    return 1;
}

/* NULL (no error) when absent; an error when present and not an array of
 * strings (non-empty ones when nonempty is set). */
static json_t *string_array(reader *rd, json_t *obj, const char *key, uint32_t j, int nonempty)
{
    json_t *a = json_object_get(obj, key);
    char ptr[128];
    partd__export_stage_pointer(ptr, sizeof ptr, j, key, (size_t)-1);
    if (!a)
        return NULL;
    if (!json_is_array(a)) {
        bad(rd, ptr, "must be an array of strings");
        return NULL;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *s = partd__export_str_at(a, i);
        if (!s || (nonempty && !*s)) {
            partd__export_stage_pointer(ptr, sizeof ptr, j, key, i);
            bad(rd, ptr, nonempty ? "must be a non-empty string" : "must be a string");
            return NULL;
        }
    }
    return a;
}

static void read_stage(reader *rd, json_t *part, uint32_t j)
{
    partd__export_stage *s = &rd->p->stages[j];
    char ptr[128];
    partd__export_stage_pointer(ptr, sizeof ptr, j, NULL, (size_t)-1);
    if (!json_is_object(part)) {
        bad(rd, ptr, "must be an object");
        return;
    }
    s->device = json_string_value(json_object_get(part, "device"));
    if (!s->device) {
        partd__export_stage_pointer(ptr, sizeof ptr, j, "device", (size_t)-1);
        bad(rd, ptr, "must be a string (the partition's device)");
    }
    s->nodes = string_array(rd, part, "nodes", j, 1);
    s->logical_ids = json_object_get(part, "logical_ids");
    s->children = json_object_get(part, "children");
    if (!rd->p->training) {
        const json_t *fm = json_object_get(part, "first_module");
        s->first_module = json_string_value(fm);
        if (fm && (!s->first_module || !*s->first_module)) {
            partd__export_stage_pointer(ptr, sizeof ptr, j, "first_module", (size_t)-1);
            bad(rd, ptr, "must be a module's name (a non-empty string)");
        }
        return;
    }
    s->units = string_array(rd, part, "units", j, 1);
    if (!s->units || json_array_size(s->units) == 0) {
        partd__export_stage_pointer(ptr, sizeof ptr, j, "units", (size_t)-1);
        bad(rd, ptr, "a training stage lists its units (a non-empty array of names)");
    }
    s->checkpointed = string_array(rd, part, "checkpointed", j, 1);
    for (size_t i = 0; s->units && i < json_array_size(s->checkpointed); i++) {
        const char *u = partd__export_str_at(s->checkpointed, i);
        size_t k = 0;
        while (k < json_array_size(s->units) && strcmp(partd__export_str_at(s->units, k), u) != 0)
            k++;
        if (k == json_array_size(s->units)) {
            partd__export_stage_pointer(ptr, sizeof ptr, j, "checkpointed", i);
            bad(rd, ptr, "names no unit of this stage");
        }
    }
}

/* "<stage><kind><microbatch>", kind one of F, B, I, W (PyTorch's
 * _Action.from_str for compute actions). */
static int parse_action(const char *s, partd_training_action *a)
{
    static const char kinds[] = "FBIW";
    uint64_t v[2] = {0, 0};
    for (int part = 0; part < 2; part++) {
        const char *start = s;
        while (*s >= '0' && *s <= '9' && s - start < 9)
            v[part] = v[part] * 10 + (uint64_t)(*s++ - '0');
        if (s == start || (*s >= '0' && *s <= '9'))
            return 0;
        if (part == 0) {
            const char *k = *s ? strchr(kinds, *s++) : NULL;
            if (!k)
                return 0;
            a->kind = (uint8_t)(k - kinds); /* partd_training_kind's order */
        }
    }
    if (v[1] > PARTD_TRAINING_MAX_MICROBATCHES)
        return 0;
    a->stage = (uint32_t)v[0];
    a->mb = (uint16_t)v[1];
    a->pad = 0;
    return *s == '\0';
}

/* One rank's list, appended to p->order (room made by the caller). */
static void read_rank_actions(reader *rd, const json_t *l, uint32_t r)
{
    partd__export_plan *p = rd->p;
    char ptr[96];
    for (size_t i = 0; i < json_array_size(l); i++) {
        const char *s = partd__export_str_at(l, i);
        partd_training_action a = {0};
        snprintf(ptr, sizeof ptr, "/schedule/actions/%u/%zu", r, i);
        if (!s || !parse_action(s, &a)) {
            bad(rd, ptr, "must be an action as PyTorch writes it (\"3F1\": stage, F, B, I "
                         "or W, microbatch)");
            continue;
        }
        if (a.stage >= p->n_stages || a.mb >= p->microbatches) {
            bad(rd, ptr, "%s names a stage or microbatch the plan does not have", s);
            continue;
        }
        if (p->stages[a.stage].rank != r) {
            bad(rd, ptr, "%s: stage %u runs on rank %u, not this one", s, a.stage,
                p->stages[a.stage].rank);
            continue;
        }
        p->order.act[p->order.n++] = a;
    }
}

/* schedule.actions, one list per rank, into p->order. */
static int read_actions(reader *rd, const json_t *lists)
{
    partd__export_plan *p = rd->p;
    if (!json_is_array(lists) || json_array_size(lists) != p->n_ranks) {
        bad(rd, "/schedule/actions", "must hold one list of actions per rank (%u)", p->n_ranks);
        return PARTD_OK;
    }
    size_t total = 0;
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        const json_t *l = json_array_get(lists, r);
        if (!json_is_array(l)) {
            char ptr[96];
            snprintf(ptr, sizeof ptr, "/schedule/actions/%u", r);
            bad(rd, ptr, "must be an array of action strings");
        }
        total += json_array_size(l);
    }
    if (rd->errors)
        return PARTD_OK;
    if (total > UINT32_MAX) {
        bad(rd, "/schedule/actions", "lists more actions than a plan can hold");
        return PARTD_OK;
    }
    partd_training_lists *o = &p->order;
    *o = (partd_training_lists){.schedule = p->sched, .S = p->n_ranks, .v = p->v,
                                .V = p->n_stages, .M = p->microbatches};
    o->off = malloc(((size_t)p->n_ranks + 1) * sizeof *o->off);
    o->act = malloc((total ? total : 1) * sizeof *o->act);
    if (!o->off || !o->act)
        return PARTD_ENOMEM;
    for (uint32_t r = 0; r < p->n_ranks; r++) {
        o->off[r] = o->n;
        read_rank_actions(rd, json_array_get(lists, r), r);
    }
    o->off[p->n_ranks] = o->n;
    return PARTD_OK;
}

/* The named class's own order for every rank (a result that does not list
 * its actions); no lists at all when the class cannot run this shape. */
static int own_actions(partd__export_plan *p)
{
    int rc = partd__export_own_order(p, &p->order);
    return rc == PARTD_EINVALID ? PARTD_OK : rc;
}

/* Schedule name and stages per rank: `schedule` (v3) or `summary` (v2). */
static int read_shape(reader *rd, const json_t *summary, const json_t *sched)
{
    partd__export_plan *p = rd->p;
    const char *where = sched ? "/schedule/name" : "/summary/schedule";
    p->sched_pointer = where;
    p->sched_name = json_string_value(json_object_get(sched ? sched : summary,
                                                      sched ? "name" : "schedule"));
    if (!p->sched_name || partd__export_sched_parse(p->sched_name, &p->sched) != PARTD_OK) {
        bad(rd, where, "must name one of PyTorch's schedules (GPipe, 1F1B, LoopedBFS, "
                       "Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV)");
        return 0;
    }
    int64_t v = partd_training_schedule_v(p->sched, 1), stages; /* the class's own, or 1 */
    const json_t *vobj = sched ? sched : summary;
    if (json_object_get(vobj, "virtual_stages") &&
        !get_int(rd, vobj, "virtual_stages", sched ? "/schedule/virtual_stages"
                                                   : "/summary/virtual_stages",
                 1, 64, &v))
        return 0;
    if (p->n_stages % v != 0) {
        bad(rd, "/partitions", "%u stages do not make %lld per rank", p->n_stages,
            (long long)v);
        return 0;
    }
    p->v = (uint32_t)v;
    p->n_ranks = p->n_stages / p->v;
    if (json_object_get(summary, "stages") &&
        get_int(rd, summary, "stages", "/summary/stages", 1, UINT32_MAX, &stages) &&
        stages != p->n_ranks)
        bad(rd, "/summary/stages", "says %lld ranks; the partitions make %u", (long long)stages,
            p->n_ranks);
    return 1;
}

/* Ranks of the stages (the schedule's placement), and each rank's device. */
static int read_ranks(reader *rd, json_t **parts)
{
    partd__export_plan *p = rd->p;
    p->rank_device = calloc(p->n_ranks, sizeof *p->rank_device);
    if (!p->rank_device)
        return PARTD_ENOMEM;
    for (uint32_t j = 0; j < p->n_stages; j++) {
        uint32_t r = partd_training_schedule_rank(p->sched, p->n_ranks, j);
        int64_t given = r;
        char ptr[96];
        partd__export_stage_pointer(ptr, sizeof ptr, j, "rank", (size_t)-1);
        if (json_object_get(parts[j], "rank") &&
            get_int(rd, parts[j], "rank", ptr, 0, UINT32_MAX, &given) && given != r)
            bad(rd, ptr, "%s places stage %u on rank %u, not %lld", p->sched_name, j, r,
                (long long)given);
        p->stages[j].rank = r;
        if (!p->rank_device[r])
            p->rank_device[r] = p->stages[j].device;
    }
    const json_t *ranks = json_object_get(p->doc, "ranks");
    for (uint32_t r = 0; r < p->n_ranks && json_array_size(ranks) == p->n_ranks; r++) {
        const char *d = json_string_value(json_object_get(json_array_get(ranks, r), "device"));
        if (d)
            p->rank_device[r] = d;
    }
    return PARTD_OK;
}

static int read_training(reader *rd, json_t **parts)
{
    partd__export_plan *p = rd->p;
    const json_t *summary = json_object_get(p->doc, "summary");
    const json_t *sched = json_object_get(p->doc, "schedule");
    if (!json_is_object(summary)) {
        bad(rd, "/summary", "must be an object");
        return PARTD_OK;
    }
    if (sched && !json_is_object(sched)) {
        bad(rd, "/schedule", "must be an object (name, virtual_stages, actions)");
        return PARTD_OK;
    }
    int64_t m;
    if (get_int(rd, summary, "microbatches", "/summary/microbatches", 1,
                PARTD_TRAINING_MAX_MICROBATCHES, &m))
        p->microbatches = (uint32_t)m;
    const char *ck = json_string_value(json_object_get(summary, "checkpoint"));
    partd_checkpoint mode;
    if (!ck || partd_checkpoint_parse(ck, &mode) != PARTD_OK)
        bad(rd, "/summary/checkpoint", "must be never, always, except_last or auto");
    else
        p->checkpoint = mode;
    if (!read_shape(rd, summary, sched) || rd->errors)
        return PARTD_OK;
    int rc = read_ranks(rd, parts);
    if (rc != PARTD_OK || rd->errors)
        return rc;
    const json_t *lists = json_object_get(sched, "actions");
    p->actions_given = lists != NULL;
    return lists ? read_actions(rd, lists) : own_actions(p);
}

/* summary.schedule and summary.microbatches of a pipeline result: both or
 * neither (a result written before they were recorded). */
static void read_pipeline(reader *rd)
{
    partd__export_plan *p = rd->p;
    const json_t *summary = json_object_get(p->doc, "summary");
    const json_t *name = json_object_get(summary, "schedule");
    int64_t m;
    partd_schedule s;
    p->pipeline_schedule = -1;
    if (!name && !json_object_get(summary, "microbatches"))
        return;
    if (!json_is_string(name) || partd_schedule_parse(json_string_value(name), &s) != PARTD_OK)
        bad(rd, "/summary/schedule", "must be the pipeline's schedule: inference, gpipe or 1f1b");
    else if (get_int(rd, summary, "microbatches", "/summary/microbatches", 1, UINT32_MAX, &m)) {
        p->pipeline_schedule = (int)s;
        p->microbatches = (uint32_t)m;
    }
}

/* A node-level plan runs stage j on rank j, the partition's device. */
static int read_node_level(reader *rd)
{
    partd__export_plan *p = rd->p;
    p->n_ranks = p->n_stages;
    p->rank_device = calloc(p->n_ranks, sizeof *p->rank_device);
    if (!p->rank_device)
        return PARTD_ENOMEM;
    for (uint32_t j = 0; j < p->n_stages; j++) {
        p->stages[j].rank = j;
        p->rank_device[j] = p->stages[j].device;
    }
    if (strcmp(p->mode, "pipeline") == 0)
        read_pipeline(rd);
    return PARTD_OK;
}

static int read_doc(reader *rd)
{
    partd__export_plan *p = rd->p;
    if (!json_is_object(p->doc)) {
        bad(rd, "", "must be an object (a result document)");
        return PARTD_OK;
    }
    p->mode = json_string_value(json_object_get(p->doc, "mode"));
    int known = p->mode && strcmp(p->mode, "training") == 0;
    for (size_t i = 0; p->mode && i < sizeof node_modes / sizeof *node_modes; i++)
        known |= strcmp(p->mode, node_modes[i]) == 0;
    if (!known) {
        bad(rd, "/mode", "must be the mode of a result (training, pipeline, size_based, ...)");
        return PARTD_OK;
    }
    p->training = strcmp(p->mode, "training") == 0;
    json_t *parts = json_object_get(p->doc, "partitions");
    if (!json_is_array(parts) || json_array_size(parts) == 0 ||
        json_array_size(parts) > UINT32_MAX / 2) {
        bad(rd, "/partitions", "must be a non-empty array");
        return PARTD_OK;
    }
    p->n_stages = (uint32_t)json_array_size(parts);
    p->stages = calloc(p->n_stages, sizeof *p->stages);
    json_t **items = malloc(p->n_stages * sizeof *items);
    int rc = p->stages && items ? PARTD_OK : PARTD_ENOMEM;
    for (uint32_t j = 0; rc == PARTD_OK && j < p->n_stages; j++) {
        items[j] = json_array_get(parts, j);
        read_stage(rd, items[j], j);
    }
    if (rc == PARTD_OK && p->training && !rd->errors)
        rc = read_training(rd, items);
    else if (rc == PARTD_OK && !p->training)
        rc = read_node_level(rd);
    free(items);
    return rc;
}

int partd__export_read(const char *text, size_t len, partd__export_plan *p, partd_problem *pb)
{
    memset(p, 0, sizeof *p);
    p->pipeline_schedule = -1;
    json_error_t err;
    p->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!p->doc) {
        /* jansson says "out of memory", or nothing at all when it could
         * not allocate its lexer (every syntax error has a text) */
        if (json_error_code(&err) == json_error_out_of_memory || err.text[0] == '\0')
            return PARTD_ENOMEM;
        partd_problem_set(pb, 400, "malformed-json", "Malformed JSON",
                          "the input is not JSON: %s (line %d, column %d)", err.text, err.line,
                          err.column);
        return PARTD_EMALFORMED;
    }
    reader rd = {p, pb, 0};
    int rc = read_doc(&rd);
    if (rc == PARTD_OK && rd.errors)
        rc = PARTD_EINVALID;
    if (rc != PARTD_OK)
        partd__export_plan_free(p);
    return rc;
}

void partd__export_plan_free(partd__export_plan *p)
{
    partd_training_lists_free(&p->order);
    free(p->rank_device);
    free(p->stages);
    json_decref(p->doc);
    memset(p, 0, sizeof *p);
}
