/*
 * decode_training.h - options.training of a request (contract, "Training
 * mode", v3): defaults, decoding and range checks (its enums' names are in
 * enums.h). schedule is a name (PyTorch's, or v2's gpipe / 1f1b), a list of
 * them or "auto"; the checks that need the graph (a named schedule's
 * conditions, weight_grad_ms against the backward time) are the training
 * planner's partd_training_validate (validate.c calls it).
 *
 * partd__decode_training_options() reads the member (NULL when absent) into
 * req->options.training; every bad value is reported at its JSON Pointer in
 * the reader's problem (422). The member is validated in every mode and used
 * only by mode "training", as options.pipeline is used only by "pipeline".
 * Call it after the devices were decoded (stages are checked against them).
 * Nothing is allocated.
 */
#ifndef PARTD_DECODE_TRAINING_H
#define PARTD_DECODE_TRAINING_H

#include <jansson.h>

#include "json_read.h"
#include "partd/model.h"

/* Bounds: microbatches multiply byte sums (kept below 2^50 by the decoder). */
#define PARTD_TRAINING_MAX_MICROBATCHES 1024
#define PARTD_TRAINING_MAX_FACTOR 64.0
#define PARTD_TRAINING_MAX_UNIT_DEPTH 1024
#define PARTD_TRAINING_MAX_VIRTUAL_STAGES 8

void partd__decode_training_defaults(partd_training_options *to);

void partd__decode_training_options(partd_reader *r, json_t *o, partd_request *req);

/* The defaults that depend on the request: microbatches = number of devices
 * (at most PARTD_TRAINING_MAX_MICROBATCHES). Call after decoding options. */
void partd__decode_training_fill_defaults(partd_request *req);

#endif
