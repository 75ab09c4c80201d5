/*
 * decode_training.c - options.training; see decode_training.h.
 */
#include "decode_training.h"

#include <string.h>

#include "enums.h"


void partd_training_defaults(partd_training_options *to)
{
    memset(to, 0, sizeof *to);
    to->schedule = PARTD_SCHEDULE_1F1B;
    to->checkpoint = PARTD_CHECKPOINT_AUTO;
    to->backward_factor = 2.0;
    to->param_factor = 4.0;
}

static void decode_stages(partd_reader *r, json_t *v, const partd_request *req,
                          partd_training_options *to)
{
    const char *ptr = "/options/training/stages";
    uint32_t n = req->n_devices ? req->n_devices : 1;
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
        to->stages = 0;
    } else if (!json_is_integer(v)) {
        partd_problem_add(r->pb, ptr, "must be an integer or \"auto\", not %s",
                          partd_json_type_name(v));
    } else if (json_integer_value(v) < 1 || json_integer_value(v) > n) {
        partd_problem_add(r->pb, ptr, "must be between 1 and %u (the number of devices), not %lld",
                          n, (long long)json_integer_value(v));
    } else {
        to->stages = (uint32_t)json_integer_value(v);
    }
}

void partd_decode_training_options(partd_reader *r, json_t *o, partd_request *req)
{
    static const char *const members[] = {"schedule", "microbatches", "stages", "device_order",
                                          "checkpoint", "unit_depth", "backward_factor",
                                          "param_factor", NULL};
    /* The schedule enum (enums.h) less "inference", which is no training
     * schedule. */
    static const char *const schedules[] = {"gpipe", "1f1b", NULL};
    const char *base = "/options/training";
    partd_training_options *to = &req->options.training;
    json_t *v;
    int e;
    int64_t x;
    if (!o || partd_read_object(r, o, base, NULL) != 0)
        return;
    partd_read_reject_unknown(r, o, base, members, 0);
    if ((v = json_object_get(o, "schedule")) &&
        partd_read_enum(r, v, "/options/training/schedule", schedules, &e) == 0)
        to->schedule = e == 0 ? PARTD_SCHEDULE_GPIPE : PARTD_SCHEDULE_1F1B;
    if ((v = json_object_get(o, "microbatches")) &&
        partd_read_int(r, v, "/options/training/microbatches", 1,
                       PARTD_TRAINING_MAX_MICROBATCHES, &x) == 0)
        to->microbatches = (uint32_t)x;
    if ((v = json_object_get(o, "stages")))
        decode_stages(r, v, req, to);
    if ((v = json_object_get(o, "device_order")) &&
        partd_read_enum(r, v, "/options/training/device_order", partd_device_order_table.names,
                        &e) == 0)
        to->device_order_auto = e;
    if ((v = json_object_get(o, "checkpoint")) &&
        partd_read_enum(r, v, "/options/training/checkpoint", partd_checkpoint_table.names, &e) == 0)
        to->checkpoint = (partd_checkpoint)e;
    if ((v = json_object_get(o, "unit_depth")) &&
        partd_read_int(r, v, "/options/training/unit_depth", 1, PARTD_TRAINING_MAX_UNIT_DEPTH,
                       &x) == 0)
        to->unit_depth = (uint32_t)x;
    if ((v = json_object_get(o, "backward_factor")))
        partd_read_number(r, v, "/options/training/backward_factor", 0, 1,
                          PARTD_TRAINING_MAX_FACTOR, &to->backward_factor);
    if ((v = json_object_get(o, "param_factor")))
        partd_read_number(r, v, "/options/training/param_factor", 0, 1,
                          PARTD_TRAINING_MAX_FACTOR, &to->param_factor);
}

void partd_training_fill_defaults(partd_request *req)
{
    partd_training_options *to = &req->options.training;
    if (to->microbatches)
        return;
    uint32_t n = req->n_devices ? req->n_devices : 1;
    to->microbatches = n < PARTD_TRAINING_MAX_MICROBATCHES ? n : PARTD_TRAINING_MAX_MICROBATCHES;
}
