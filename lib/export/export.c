/* export.c - partd_export(): the result read, the format's writer run in a
 * context of its own; see partd/export.h. */
#include "partd/export.h"

#include <stdlib.h>

#include "export_internal.h"
#include "partd/partd.h"

typedef int (*writer)(partd__export_ctx *c, char **out, size_t *len);

/* Each format's writer, and whether it also exports node-level results
 * (pipeline, size_based, FX's modes). */
static const struct {
    writer write;
    int node_level;
} writers[PARTD_EXPORT_FORMAT_COUNT] = {
    [PARTD_EXPORT_TORCHTITAN] = {partd__export_torchtitan, 0},
    [PARTD_EXPORT_PYTORCH] = {partd__export_pytorch, 0},
    [PARTD_EXPORT_PYTORCH_SPLIT] = {partd__export_pytorch_split, 1},
    [PARTD_EXPORT_MEGATRON] = {partd__export_megatron, 0},
    [PARTD_EXPORT_DEEPSPEED] = {partd__export_deepspeed, 0},
    [PARTD_EXPORT_FAIRSCALE] = {partd__export_fairscale, 1},
    [PARTD_EXPORT_FX] = {partd__export_fx, 1},
};

int partd_export(const char *result_json, size_t len, partd_export_format format,
                 unsigned flags, char **out, size_t *out_len, partd_problem *pb)
{
    *out = NULL;
    *out_len = 0;
    if ((unsigned)format >= PARTD_EXPORT_FORMAT_COUNT)
        return PARTD_EINVALID;
    partd__export_plan plan;
    int rc = partd__export_read(result_json, len, &plan, pb);
    if (rc != PARTD_OK)
        return rc;
    partd__export_ctx c = {&plan, format, flags, pb, 0, NULL, 0, PARTD_OK};
    if (!plan.training && !writers[format].node_level)
        partd__export_refuse(&c, "/mode",
                             "the %s format exports training plans (units, ranks, schedule); "
                             "a %s plan has none: use pytorch-split, fairscale or fx",
                             partd_export_format_name(format), plan.mode);
    else
        rc = writers[format].write(&c, out, out_len);
    if (rc == PARTD_OK && c.rc != PARTD_OK)
        rc = c.rc;
    if (rc == PARTD_OK && c.n_refusals)
        rc = PARTD_EINVALID;
    if (rc != PARTD_OK) {
        free(*out);
        *out = NULL;
        *out_len = 0;
    }
    partd__export_ctx_free(&c);
    partd__export_plan_free(&plan);
    return rc;
}
