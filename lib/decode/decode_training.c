/*
 * decode_training.c - options.training; see decode_training.h.
 */
#include "decode_training.h"

#include <stdio.h>
#include <string.h>

#include "partd/enums.h"


void partd__decode_training_defaults(partd_training_options *to)
{
    memset(to, 0, sizeof *to);
    to->schedules = 1u << PARTD_TRAINING_1F1B;
    to->schedule_named = 1;
    to->weight_grad_fraction = 0.5;
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
                          partd_json_read_type_name(v));
    } else if (json_integer_value(v) < 1 || json_integer_value(v) > n) {
        partd_problem_add(r->pb, ptr, "must be between 1 and %u (the number of devices), not %lld",
                          n, (long long)json_integer_value(v));
    } else {
        to->stages = (uint32_t)json_integer_value(v);
    }
}

/* A schedule name: PyTorch's (get_schedule_class's) or v2's "gpipe" and
 * "1f1b". -1 when it names none. */
static int schedule_of(const char *s)
{
    partd_training_schedule e;
    if (partd_training_schedule_parse(s, &e) == 0)
        return (int)e;
    if (strcmp(s, "gpipe") == 0)
        return PARTD_TRAINING_GPIPE;
    if (strcmp(s, "1f1b") == 0)
        return PARTD_TRAINING_1F1B;
    return -1;
}

static void bad_name(partd_reader *r, const char *ptr, json_t *v)
{
    if (!json_is_string(v)) {
        partd_problem_add(r->pb, ptr, "must be a schedule name, not %s",
                          partd_json_read_type_name(v));
        return;
    }
    partd_problem_add(r->pb, ptr,
                      "unknown schedule \"%.64s\": one of GPipe, 1F1B, LoopedBFS, "
                      "Interleaved1F1B, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV "
                      "(gpipe and 1f1b accepted), a list of them, or \"auto\"",
                      json_string_value(v));
}

/* A name, a non-empty list of distinct names, or "auto" (all seven). */
static void decode_schedule(partd_reader *r, json_t *v, partd_training_options *to)
{
    const char *base = "/options/training/schedule";
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0) {
        to->schedules = (1u << PARTD_TRAINING_SCHEDULE_COUNT) - 1;
        to->schedule_named = 0;
        return;
    }
    if (!json_is_array(v)) {
        int s = json_is_string(v) ? schedule_of(json_string_value(v)) : -1;
        if (s < 0)
            bad_name(r, base, v);
        else
            to->schedules = 1u << s;
        return;
    }
    if (json_array_size(v) == 0) {
        partd_problem_add(r->pb, base, "must name at least one schedule");
        return;
    }
    uint32_t set = 0;
    int ok = 1;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char ptr[64];
        snprintf(ptr, sizeof ptr, "%s/%zu", base, i);
        json_t *x = json_array_get(v, i);
        int s = json_is_string(x) ? schedule_of(json_string_value(x)) : -1;
        if (s < 0) {
            bad_name(r, ptr, x);
            ok = 0;
        } else if (set & (1u << s)) {
            partd_problem_add(r->pb, ptr, "names %s twice",
                              partd_training_schedule_name((partd_training_schedule)s));
            ok = 0;
        }
        set |= s >= 0 ? 1u << s : 0;
    }
    if (ok) {
        to->schedules = set;
        to->schedule_named = 0;
    }
}

static void decode_virtual(partd_reader *r, json_t *v, partd_training_options *to)
{
    const char *ptr = "/options/training/virtual_stages";
    int64_t x;
    if (json_is_string(v) && strcmp(json_string_value(v), "auto") == 0)
        to->virtual_stages = 0;
    else if (!json_is_integer(v))
        partd_problem_add(r->pb, ptr, "must be an integer or \"auto\", not %s",
                          partd_json_read_type_name(v));
    else if (partd_json_read_int(r, v, ptr, 1, PARTD_TRAINING_MAX_VIRTUAL_STAGES, &x) == 0)
        to->virtual_stages = (uint32_t)x;
}

void partd__decode_training_options(partd_reader *r, json_t *o, partd_request *req)
{
    static const char *const members[] = {"schedule", "virtual_stages", "weight_grad_fraction",
                                          "microbatches", "stages", "device_order",
                                          "checkpoint", "unit_depth", "backward_factor",
                                          "param_factor", NULL};
    const char *base = "/options/training";
    partd_training_options *to = &req->options.training;
    json_t *v;
    int e;
    int64_t x;
    if (!o || partd_json_read_object(r, o, base, NULL) != 0)
        return;
    partd_json_read_reject_unknown(r, o, base, members, 0);
    if ((v = json_object_get(o, "schedule")))
        decode_schedule(r, v, to);
    if ((v = json_object_get(o, "virtual_stages")))
        decode_virtual(r, v, to);
    if ((v = json_object_get(o, "weight_grad_fraction")))
        partd_json_read_number(r, v, "/options/training/weight_grad_fraction", 0, 0, 1,
                               &to->weight_grad_fraction);
    if ((v = json_object_get(o, "microbatches")) &&
        partd_json_read_int(r, v, "/options/training/microbatches", 1,
                       PARTD_TRAINING_MAX_MICROBATCHES, &x) == 0)
        to->microbatches = (uint32_t)x;
    if ((v = json_object_get(o, "stages")))
        decode_stages(r, v, req, to);
    if ((v = json_object_get(o, "device_order")) &&
        partd_json_read_enum(r, v, "/options/training/device_order", partd_enums_device_order_table.names,
                        &e) == 0)
        to->device_order_auto = e;
    if ((v = json_object_get(o, "checkpoint")) &&
        partd_json_read_enum(r, v, "/options/training/checkpoint", partd_enums_checkpoint_table.names, &e) == 0)
        to->checkpoint = (partd_checkpoint)e;
    if ((v = json_object_get(o, "unit_depth")) &&
        partd_json_read_int(r, v, "/options/training/unit_depth", 1, PARTD_TRAINING_MAX_UNIT_DEPTH,
                       &x) == 0)
        to->unit_depth = (uint32_t)x;
    if ((v = json_object_get(o, "backward_factor")))
        partd_json_read_number(r, v, "/options/training/backward_factor", 0, 1,
                          PARTD_TRAINING_MAX_FACTOR, &to->backward_factor);
    if ((v = json_object_get(o, "param_factor")))
        partd_json_read_number(r, v, "/options/training/param_factor", 0, 1,
                          PARTD_TRAINING_MAX_FACTOR, &to->param_factor);
}

void partd__decode_training_fill_defaults(partd_request *req)
{
    partd_training_options *to = &req->options.training;
    if (to->microbatches)
        return;
    uint32_t n = req->n_devices ? req->n_devices : 1;
    to->microbatches = n < PARTD_TRAINING_MAX_MICROBATCHES ? n : PARTD_TRAINING_MAX_MICROBATCHES;
}
