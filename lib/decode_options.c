/*
 * decode_options.c - `options` of a request: defaults, the pipeline and
 * SAC members, and options.training through decode_training.h; see
 * decode_internal.h. The member is small: the reading layer builds it as a
 * jansson tree.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "decode_internal.h"
#include "decode_training.h"
#include "enums.h"
#include "json_read.h"
#include "partd.h"

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
    if (partd_read_object(r, o, "/options/pipeline", NULL) != 0)
        return;
    partd_read_reject_unknown(r, o, "/options/pipeline", members, 0);
    if ((v = json_object_get(o, "stages")) &&
        partd_read_int(r, v, "/options/pipeline/stages", INT64_MIN, INT64_MAX, &x) == 0) {
        if (x < 1 || x > default_stages)
            partd_problem_add(r->pb, "/options/pipeline/stages",
                              "must be between 1 and %u (the smaller of the number of "
                              "devices and of operation nodes), not %lld",
                              default_stages, (long long)x);
        else
            po->stages = (uint32_t)x;
    }
    if ((v = json_object_get(o, "balance_by")) &&
        partd_read_enum(r, v, "/options/pipeline/balance_by", partd_balance_by_table.names, &e) == 0)
        po->balance_by = (partd_balance_by)e;
    if ((v = json_object_get(o, "schedule")) &&
        partd_read_enum(r, v, "/options/pipeline/schedule", partd_schedule_table.names, &e) == 0)
        po->schedule = (partd_schedule)e;
    if ((v = json_object_get(o, "microbatches")) &&
        partd_read_int(r, v, "/options/pipeline/microbatches", 1, MAX_MICROBATCHES, &x) == 0)
        po->microbatches = (uint32_t)x;
    if ((v = json_object_get(o, "param_factor")))
        partd_read_number(r, v, "/options/pipeline/param_factor", 0, 1, MAX_PARAM_FACTOR,
                          &po->param_factor);
    if ((v = json_object_get(o, "cut_after")))
        partd_dec_name_list(d, v, "/options/pipeline/cut_after", 1u << 20, &po->cut_after,
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
    if (partd_read_object(r, o, "/options/sac", NULL) != 0)
        return;
    so->enabled = 1;
    partd_read_reject_unknown(r, o, "/options/sac", members, 0);
    if ((v = json_object_get(o, "memory_budget_bytes")))
        partd_read_bytes(r, v, "/options/sac/memory_budget_bytes", 1, &so->memory_budget_bytes);
    if ((v = json_object_get(o, "world_size")) &&
        partd_read_int(r, v, "/options/sac/world_size", 1, 1 << 20, &x) == 0)
        so->world_size = (uint32_t)x;
    if ((v = json_object_get(o, "ac_units")))
        so->has_ac_units = partd_dec_name_list(d, v, "/options/sac/ac_units", 1u << 20,
                                         &so->ac_units, &so->n_ac_units) == 0;
    if ((v = json_object_get(o, "fsdp_units")))
        so->has_fsdp_units = partd_dec_name_list(d, v, "/options/sac/fsdp_units", 1u << 20,
                                           &so->fsdp_units, &so->n_fsdp_units) == 0;
    if ((v = json_object_get(o, "op_level")))
        partd_read_bool(r, v, "/options/sac/op_level", &so->op_level);
    if ((v = json_object_get(o, "time_limit_ms")))
        partd_read_number(r, v, "/options/sac/time_limit_ms", 0, 1, MAX_TIME_LIMIT_MS,
                          &so->time_limit_ms);
    if ((v = json_object_get(o, "relative_gap")))
        partd_read_number(r, v, "/options/sac/relative_gap", 0, 0, 1, &so->relative_gap);
    if ((v = json_object_get(o, "frontier_points")) &&
        partd_read_int(r, v, "/options/sac/frontier_points", 2, 100, &x) == 0)
        so->frontier_points = (uint32_t)x;
}

/* options.result: only `detail`. */
static void decode_result_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"detail", NULL};
    json_t *v;
    int e;
    if (!o || partd_read_object(&d->r, o, "/options/result", NULL) != 0)
        return;
    partd_read_reject_unknown(&d->r, o, "/options/result", members, 0);
    if ((v = json_object_get(o, "detail")) &&
        partd_read_enum(&d->r, v, "/options/result/detail", partd_result_detail_table.names,
                        &e) == 0)
        d->req->options.result_detail = (partd_result_detail)e;
}

void partd_dec_set_default_options(partd_request *req)
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
    partd_training_defaults(&o->training);
    o->result_detail = PARTD_RESULT_DETAIL_FULL;
}

void partd_dec_options(partd_dec *d, json_t *o)
{
    static const char *const members[] = {"mode", "transfer_bytes_per_sec", "pipeline",
                                          "sac", "training", "result", NULL};
    partd_request *req = d->req;
    uint32_t default_stages = req->n_devices < req->graph.n_ops ? req->n_devices
                                                                  : req->graph.n_ops;
    if (default_stages == 0)
        default_stages = 1;
    if (o && partd_read_object(&d->r, o, "/options", NULL) != 0)
        o = NULL;
    if (o) {
        json_t *v;
        int e;
        partd_read_reject_unknown(&d->r, o, "/options", members, 0);
        if ((v = json_object_get(o, "mode")) &&
            partd_read_enum(&d->r, v, "/options/mode", partd_mode_table.names, &e) == 0)
            req->options.mode = (partd_mode)e;
        if ((v = json_object_get(o, "transfer_bytes_per_sec")))
            partd_read_number(&d->r, v, "/options/transfer_bytes_per_sec", MIN_RATE, 0, MAX_RATE,
                              &req->options.transfer_bytes_per_sec);
        decode_pipeline_options(d, json_object_get(o, "pipeline"), default_stages);
        decode_sac_options(d, json_object_get(o, "sac"));
        partd_decode_training_options(&d->r, json_object_get(o, "training"), req);
        decode_result_options(d, json_object_get(o, "result"));
    }
    partd_training_fill_defaults(req);
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

