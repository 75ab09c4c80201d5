/*
 * decode_options.c - `options` of a request: defaults, which mode reads
 * which block (a table), the pipeline and SAC members, and
 * options.training through decode_training.h; see decode_internal.h. The
 * member is small: the reading layer builds it as a jansson tree.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "decode_internal.h"
#include "decode_training.h"
#include "json_read.h"
#include "partd/enums.h"
#include "partd/partd.h"

static void decode_pipeline_options(partd_dec *d, json_t *o, uint32_t default_stages)
{
    static const char *const members[] = {"stages", "balance_by", "cut_after", "schedule",
                                          "microbatches", "param_factor", NULL};
    partd_pipeline_options *po = &d->req->options.pipeline;
    partd_reader *r = &d->r;
    json_t *v;
    int e;
    int64_t x;
    if (!o)
        return;
    if (partd_json_read_object(r, o, "/options/pipeline", NULL) != 0)
        return;
    partd_json_read_reject_unknown(r, o, "/options/pipeline", members, 0);
    if ((v = json_object_get(o, "stages")) &&
        partd_json_read_int(r, v, "/options/pipeline/stages", INT64_MIN, INT64_MAX, &x) == 0) {
        if (x < 1 || x > default_stages)
            partd_problem_add(r->pb, "/options/pipeline/stages",
                              "must be between 1 and %u (the smaller of the number of "
                              "devices and of operation nodes), not %lld",
                              default_stages, (long long)x);
        else
            po->stages = (uint32_t)x;
    }
    if ((v = json_object_get(o, "balance_by")) &&
        partd_json_read_enum(r, v, "/options/pipeline/balance_by", partd_enums_balance_by_table.names, &e) == 0)
        po->balance_by = (partd_balance_by)e;
    if ((v = json_object_get(o, "schedule")) &&
        partd_json_read_enum(r, v, "/options/pipeline/schedule", partd_enums_schedule_table.names, &e) == 0)
        po->schedule = (partd_schedule)e;
    if ((v = json_object_get(o, "microbatches")) &&
        partd_json_read_int(r, v, "/options/pipeline/microbatches", 1, PARTD_DECODE_MAX_MICROBATCHES, &x) == 0)
        po->microbatches = (uint32_t)x;
    if ((v = json_object_get(o, "param_factor")))
        partd_json_read_number(r, v, "/options/pipeline/param_factor", 0, 1, PARTD_DECODE_MAX_PARAM_FACTOR,
                          &po->param_factor);
    if ((v = json_object_get(o, "cut_after")))
        partd__decode_name_list(d, v, "/options/pipeline/cut_after", 1u << 20, &po->cut_after,
                      &po->n_cut_after);
}

static void decode_sac_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"memory_budget_bytes", "world_size", "ac_units",
                                          "fsdp_units", "op_level", "time_limit_ms",
                                          "relative_gap", "frontier_points", NULL};
    partd_sac_options *so = &d->req->options.sac;
    partd_reader *r = &d->r;
    json_t *v;
    int64_t x;
    if (!o)
        return;
    if (partd_json_read_object(r, o, "/options/sac", NULL) != 0)
        return;
    so->enabled = 1;
    partd_json_read_reject_unknown(r, o, "/options/sac", members, 0);
    if ((v = json_object_get(o, "memory_budget_bytes")))
        partd_json_read_bytes(r, v, "/options/sac/memory_budget_bytes", 1, &so->memory_budget_bytes);
    if ((v = json_object_get(o, "world_size")) &&
        partd_json_read_int(r, v, "/options/sac/world_size", 1, 1 << 20, &x) == 0)
        so->world_size = (uint32_t)x;
    if ((v = json_object_get(o, "ac_units")))
        so->has_ac_units = partd__decode_name_list(d, v, "/options/sac/ac_units", 1u << 20,
                                         &so->ac_units, &so->n_ac_units) == 0;
    if ((v = json_object_get(o, "fsdp_units")))
        so->has_fsdp_units = partd__decode_name_list(d, v, "/options/sac/fsdp_units", 1u << 20,
                                           &so->fsdp_units, &so->n_fsdp_units) == 0;
    if ((v = json_object_get(o, "op_level")))
        partd_json_read_bool(r, v, "/options/sac/op_level", &so->op_level);
    if ((v = json_object_get(o, "time_limit_ms")))
        partd_json_read_number(r, v, "/options/sac/time_limit_ms", 0, 1, PARTD_DECODE_MAX_TIME_LIMIT_MS,
                          &so->time_limit_ms);
    if ((v = json_object_get(o, "relative_gap")))
        partd_json_read_number(r, v, "/options/sac/relative_gap", 0, 0, 1, &so->relative_gap);
    if ((v = json_object_get(o, "frontier_points")) &&
        partd_json_read_int(r, v, "/options/sac/frontier_points", 2, 100, &x) == 0)
        so->frontier_points = (uint32_t)x;
}

/* options.result: only `detail`. */
static void decode_result_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"detail", NULL};
    json_t *v;
    int e;
    if (!o || partd_json_read_object(&d->r, o, "/options/result", NULL) != 0)
        return;
    partd_json_read_reject_unknown(&d->r, o, "/options/result", members, 0);
    if ((v = json_object_get(o, "detail")) &&
        partd_json_read_enum(&d->r, v, "/options/result/detail", partd_enums_result_detail_table.names,
                        &e) == 0)
        d->req->options.result_detail = (partd_result_detail)e;
}

void partd__decode_options_set_defaults(partd_request *req)
{
    partd_options *o = &req->options;
    o->mode = PARTD_MODE_PIPELINE;
    o->transfer_bytes_per_sec = 1e10;
    o->pipeline.balance_by = PARTD_BALANCE_TIME;
    o->pipeline.schedule = PARTD_SCHEDULE_INFERENCE;
    o->pipeline.microbatches = 1;
    o->pipeline.param_factor = 1.0;
    o->sac.world_size = 1;
    o->sac.time_limit_ms = 10000;
    partd__decode_training_defaults(&o->training);
    o->result_detail = PARTD_RESULT_DETAIL_FULL;
}

/* ---- which mode reads which block ---------------------------------------- */

/* The options blocks that belong to a mode. `transfer_bytes_per_sec` and
 * `result` go with every mode and are not listed. */
enum { BLOCK_PIPELINE = 1 << 0, BLOCK_SAC = 1 << 1, BLOCK_TRAINING = 1 << 2, BLOCK_AOT = 1 << 3 };

static const struct {
    const char *name;
    unsigned bit;
} blocks[] = {{"pipeline", BLOCK_PIPELINE},
              {"sac", BLOCK_SAC},
              {"training", BLOCK_TRAINING},
              {"aot", BLOCK_AOT}};

/* Each mode reads only its own blocks (contract v3); a block given for a
 * mode that does not read it is a 422. A new mode is one line here. */
static const struct {
    partd_mode mode;
    unsigned reads;
} mode_blocks[] = {
    {PARTD_MODE_SIZE_BASED, BLOCK_SAC},
    {PARTD_MODE_PIPELINE, BLOCK_PIPELINE | BLOCK_SAC},
    {PARTD_MODE_TRAINING, BLOCK_TRAINING},
    {PARTD_MODE_COST_AWARE, 0},
    {PARTD_MODE_KL_BASED, 0},
    {PARTD_MODE_SPARSE_NN, 0},
    {PARTD_MODE_AOT_BASED, BLOCK_AOT},
};

/* What to say instead of "remove it, or set options.mode to the mode it is
 * for", where a mode has its own way to the same end. */
static const struct {
    partd_mode mode;
    unsigned block;
    const char *hint;
} instead[] = {
    {PARTD_MODE_TRAINING, BLOCK_PIPELINE,
     "training takes its microbatches, schedule and param_factor from options.training"},
    {PARTD_MODE_TRAINING, BLOCK_SAC,
     "training chooses what each stage checkpoints itself (options.training.checkpoint); "
     "SAC is not planned per stage"},
};

static const char *hint_for(partd_mode mode, unsigned block)
{
    for (size_t i = 0; i < sizeof instead / sizeof instead[0]; i++)
        if (instead[i].mode == mode && instead[i].block == block)
            return instead[i].hint;
    return "remove it, or set options.mode to the mode it is for";
}

static unsigned blocks_of(partd_mode mode)
{
    for (size_t i = 0; i < sizeof mode_blocks / sizeof mode_blocks[0]; i++)
        if (mode_blocks[i].mode == mode)
            return mode_blocks[i].reads;
    return 0;
}

/* "mode pipeline", "modes size_based and pipeline": the modes that read bit. */
static void modes_reading(unsigned bit, char *out, size_t cap)
{
    size_t n = 0, k = 0, count = 0;
    for (size_t i = 0; i < sizeof mode_blocks / sizeof mode_blocks[0]; i++)
        count += (mode_blocks[i].reads & bit) != 0;
    n += (size_t)snprintf(out, cap, "mode%s", count == 1 ? "" : "s");
    for (size_t i = 0; i < sizeof mode_blocks / sizeof mode_blocks[0] && n < cap; i++) {
        if (!(mode_blocks[i].reads & bit))
            continue;
        k++;
        n += (size_t)snprintf(out + n, cap - n, "%s%s", k == 1 ? " " : k == count ? " and " : ", ",
                              partd_mode_name(mode_blocks[i].mode));
    }
}

/* Reports each block of o that the request's mode does not read (mode_given:
 * the request named its mode, else it is the default). Returns the blocks
 * of o to decode. */
static unsigned check_blocks(partd_dec *d, json_t *o, int mode_given)
{
    partd_mode mode = d->req->options.mode;
    unsigned reads = blocks_of(mode), read = 0;
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (!json_object_get(o, blocks[i].name))
            continue;
        if (reads & blocks[i].bit) {
            read |= blocks[i].bit;
            continue;
        }
        char ptr[64], modes[128];
        snprintf(ptr, sizeof ptr, "/options/%s", blocks[i].name);
        modes_reading(blocks[i].bit, modes, sizeof modes);
        partd_problem_add(d->r.pb, ptr, "is read by %s only, not by mode %s%s: %s", modes,
                          partd_mode_name(mode), mode_given ? "" : " (the default)",
                          hint_for(mode, blocks[i].bit));
    }
    return read;
}

void partd__decode_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"mode", "transfer_bytes_per_sec", "pipeline",
                                          "sac", "training", "aot", "result", NULL};
    partd_request *req = d->req;
    uint32_t default_stages = req->n_devices < req->graph.n_ops ? req->n_devices
                                                                  : req->graph.n_ops;
    if (default_stages == 0)
        default_stages = 1;
    if (o && partd_json_read_object(&d->r, o, "/options", NULL) != 0)
        o = NULL;
    if (o) {
        json_t *v;
        int e;
        partd_json_read_reject_unknown(&d->r, o, "/options", members, 0);
        /* with a mode that is no mode, every block is read for its errors */
        unsigned read = BLOCK_PIPELINE | BLOCK_SAC | BLOCK_TRAINING | BLOCK_AOT;
        v = json_object_get(o, "mode");
        int mode_ok = !v || partd_json_read_enum(&d->r, v, "/options/mode",
                                                 partd_enums_mode_table.names, &e) == 0;
        if (v && mode_ok)
            req->options.mode = (partd_mode)e;
        if (mode_ok)
            read = check_blocks(d, o, v != NULL);
        if ((v = json_object_get(o, "transfer_bytes_per_sec")))
            partd_json_read_number(&d->r, v, "/options/transfer_bytes_per_sec", PARTD_DECODE_MIN_RATE, 0, PARTD_DECODE_MAX_RATE,
                              &req->options.transfer_bytes_per_sec);
        if (read & BLOCK_PIPELINE)
            decode_pipeline_options(d, json_object_get(o, "pipeline"), default_stages);
        if (read & BLOCK_SAC)
            decode_sac_options(d, json_object_get(o, "sac"));
        if (read & BLOCK_TRAINING)
            partd__decode_training_options(&d->r, json_object_get(o, "training"), req);
        if ((read & BLOCK_AOT) || req->options.mode == PARTD_MODE_AOT_BASED)
            partd__decode_aot_options(d, json_object_get(o, "aot"));
        decode_result_options(d, json_object_get(o, "result"));
    }
    partd__decode_training_fill_defaults(req);
    if (!req->options.pipeline.stages)
        req->options.pipeline.stages = default_stages;
    if (req->options.sac.enabled && !req->options.sac.memory_budget_bytes) {
        int64_t m = INT64_MAX;
        for (uint32_t i = 0; i < req->n_devices; i++)
            if (req->devices[i].memory_bytes < m)
                m = req->devices[i].memory_bytes;
        req->options.sac.memory_budget_bytes = m == INT64_MAX ? 0 : m;
    }
}

