/* export_format.c - the export formats' names and HTTP content types; see
 * partd/export.h. */
#include "partd/export.h"

#include <string.h>

#include "partd/partd.h"

static const struct {
    const char *name;
    const char *content_type;
} formats[PARTD_EXPORT_FORMAT_COUNT] = {
    [PARTD_EXPORT_TORCHTITAN] = {"torchtitan", "application/toml"},
    [PARTD_EXPORT_PYTORCH] = {"pytorch", "text/csv"},
    [PARTD_EXPORT_PYTORCH_SPLIT] = {"pytorch-split", "application/json"},
    [PARTD_EXPORT_MEGATRON] = {"megatron", "text/plain"},
    [PARTD_EXPORT_DEEPSPEED] = {"deepspeed", "application/json"},
    [PARTD_EXPORT_FAIRSCALE] = {"fairscale", "application/json"},
    [PARTD_EXPORT_FX] = {"fx", "application/json"},
};

int partd_export_format_parse(const char *name, partd_export_format *out)
{
    for (int f = 0; f < PARTD_EXPORT_FORMAT_COUNT; f++)
        if (strcmp(name, formats[f].name) == 0) {
            *out = (partd_export_format)f;
            return PARTD_OK;
        }
    return PARTD_EINVALID;
}

const char *partd_export_format_name(partd_export_format format)
{
    return (unsigned)format < PARTD_EXPORT_FORMAT_COUNT ? formats[format].name : NULL;
}

const char *partd_export_content_type(partd_export_format format)
{
    return (unsigned)format < PARTD_EXPORT_FORMAT_COUNT ? formats[format].content_type : NULL;
}
