/*
 * decode_training.h - options.training of a request (contract, "Training
 * mode"): defaults, decoding and range checks (its enums' names are in
 * enums.h).
 *
 * partd_decode_training_options() reads the member (NULL when absent) into
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
#include "model.h"

/* Bounds: microbatches multiply byte sums (kept below 2^50 by the decoder). */
#define PARTD_TRAINING_MAX_MICROBATCHES 1024
#define PARTD_TRAINING_MAX_FACTOR 64.0
#define PARTD_TRAINING_MAX_UNIT_DEPTH 1024

void partd_training_defaults(partd_training_options *to);

void partd_decode_training_options(partd_reader *r, json_t *o, partd_request *req);

/* The defaults that depend on the request: microbatches = number of devices
 * (at most PARTD_TRAINING_MAX_MICROBATCHES). Call after decoding options. */
void partd_training_fill_defaults(partd_request *req);

#endif
