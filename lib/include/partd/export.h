/*
 * export.h - a plan turned into the input of the runtime that will run it
 * (contract v3, "Plan export"): `partd export` and
 * GET /v1/jobs/{id}/export/{format} both call partd_export().
 *
 * An export is a pure function of the result document: the same result text
 * and format give the same bytes on every run and machine (no clock, no
 * locale, no floating point in the output). Formats:
 *   torchtitan     TOML, torchtitan's job config ([parallelism] and friends)
 *   pytorch        CSV, each rank's compute actions (PyTorch's _load_csv,
 *                  format "compute_only")
 *   pytorch-split  JSON for torch.distributed.pipelining.pipeline()
 *   megatron       Megatron-LM command-line arguments (text)
 *   deepspeed      JSON for DeepSpeed's PipelineModule
 *   fairscale      JSON for fairscale / torchgpipe Pipe
 *   fx             JSON, FX Partitioner's node_to_partition
 * The first five read training results; pytorch-split, fairscale and fx the
 * node-level results (pipeline, size_based, FX's other modes) as well, where
 * each can (see lib/export/export_<format>.c for what each format says and
 * why). What a format cannot say exactly is either refused, or approximated
 * only on the safe side (more recomputation, never more memory than the plan
 * holds) and then listed: in a `warnings` member in JSON formats, as `#`
 * comment lines in text formats. PARTD_EXPORT_STRICT refuses instead of
 * approximating.
 *
 * Errors: partd_export() returns PARTD_OK, PARTD_EMALFORMED (not JSON:
 * problem status 400), PARTD_EINVALID (problem status 422: JSON but not a
 * result document, type "not-a-result"; or a plan the format cannot
 * express, type "export-not-expressible", each reason an error whose
 * pointer is a JSON Pointer into the result), or PARTD_ENOMEM. The lookups
 * below cannot fail except as stated.
 *
 * Ownership: *out is malloc'd (NUL-terminated after *out_len bytes) and the
 * caller's; it is NULL on every failure. The problem is the caller's
 * (problem.h). Content types and names are static strings.
 */
#ifndef PARTD_EXPORT_H
#define PARTD_EXPORT_H

#include <stddef.h>

#include "problem.h"

typedef enum partd_export_format {
    PARTD_EXPORT_TORCHTITAN,
    PARTD_EXPORT_PYTORCH,
    PARTD_EXPORT_PYTORCH_SPLIT,
    PARTD_EXPORT_MEGATRON,
    PARTD_EXPORT_DEEPSPEED,
    PARTD_EXPORT_FAIRSCALE,
    PARTD_EXPORT_FX,
    PARTD_EXPORT_FORMAT_COUNT
} partd_export_format;

/* Refuse what the format can say only approximately. */
#define PARTD_EXPORT_STRICT 0x1u

/* The format named `name` (exactly as in the table above): PARTD_OK, or
 * PARTD_EINVALID for an unknown name (the HTTP endpoint's 404), *out
 * unchanged. */
int partd_export_format_parse(const char *name, partd_export_format *out);

/* The format's name, and its HTTP Content-Type (`application/toml`,
 * `text/csv`, `application/json`, `text/plain`); NULL when out of range. */
const char *partd_export_format_name(partd_export_format format);
const char *partd_export_content_type(partd_export_format format);

/* The export of the result document `result_json` (len bytes, need not be
 * NUL-terminated) in `format`; flags 0 or PARTD_EXPORT_STRICT. See above
 * for what comes back. */
int partd_export(const char *result_json, size_t len, partd_export_format format,
                 unsigned flags, char **out, size_t *out_len, partd_problem *pb);

#endif
