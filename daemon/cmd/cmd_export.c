/* cmd_export.c - `partd export`; see cmd_export.h. */
#include "cmd_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "partd/export.h"
#include "partd/partd.h"

#define EXIT_EXPORTED 0
#define EXIT_IO 1
#define EXIT_NOT_EXPRESSIBLE 2

static int usage(FILE *to)
{
    fprintf(to, "usage: partd export [RESULT.json | -] --format FORMAT [-o FILE] [--strict]\n"
                "  Turns a result document (as `partd plan` writes it) into the input of the\n"
                "  runtime that runs the plan. FORMAT is one of:\n"
                "    torchtitan     torchtitan job config (TOML)\n"
                "    pytorch        torch.distributed.pipelining schedule, each rank's actions (CSV)\n"
                "    pytorch-split  torch.distributed.pipelining.pipeline() split_spec (JSON)\n"
                "    megatron       Megatron-LM arguments (text)\n"
                "    deepspeed      DeepSpeed PipelineModule parts (JSON)\n"
                "    fairscale      fairscale / torchgpipe Pipe balance, chunks, checkpoint (JSON)\n"
                "    fx             FX Partitioner node_to_partition (JSON)\n"
                "  What a format can say only approximately (always on the safe side: more\n"
                "  recomputation, never more memory) is listed in the output; --strict refuses it.\n"
                "  Reads stdin when no file (or -) is given; writes stdout or -o FILE.\n"
                "  Exit: 0 exported, 1 cannot read or write a file, 2 not a result document or\n"
                "  a plan the format cannot express (problem document on stderr).\n");
    return to == stdout ? EXIT_EXPORTED : EXIT_IO;
}

typedef struct export_args {
    const char *in, *out, *format;
    unsigned flags;
} export_args;

/* 0 parsed, 1 help printed, -1 usage error. */
static int parse_args(int argc, char **argv, export_args *a)
{
    int have_in = 0;
    *a = (export_args){"-", NULL, NULL, 0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc)
                return -1;
            a->out = argv[i];
        } else if (strcmp(argv[i], "--format") == 0 || strcmp(argv[i], "-f") == 0) {
            if (++i >= argc)
                return -1;
            a->format = argv[i];
        } else if (strcmp(argv[i], "--strict") == 0) {
            a->flags |= PARTD_EXPORT_STRICT;
        } else if (!have_in && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            a->in = argv[i];
            have_in = 1;
        } else {
            fprintf(stderr, "partd export: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
    }
    if (!a->format) {
        fprintf(stderr, "partd export: --format is required\n");
        return -1;
    }
    return 0;
}

static int export_body(const export_args *a, partd_export_format format, const char *body,
                       size_t len)
{
    partd_problem pb;
    partd_problem_init(&pb);
    char *out = NULL;
    size_t out_len = 0;
    int rc = partd_export(body, len, format, a->flags, &out, &out_len, &pb);
    int code = EXIT_EXPORTED;
    if (rc == PARTD_EMALFORMED || rc == PARTD_EINVALID) {
        partd__cmd_output_problem(&pb);
        code = EXIT_NOT_EXPRESSIBLE;
    } else if (rc != PARTD_OK) {
        fprintf(stderr, "partd export: %s\n", partd_strerror(rc));
        code = EXIT_IO;
    } else if (partd__cmd_output_write_output("export", a->out, out, out_len) != PARTD_OK) {
        code = EXIT_IO;
    }
    free(out);
    partd_problem_free(&pb);
    return code;
}

int partd_cmd_export(int argc, char **argv)
{
    export_args a;
    int p = parse_args(argc, argv, &a);
    if (p != 0)
        return usage(p > 0 ? stdout : stderr);
    partd_export_format format;
    if (partd_export_format_parse(a.format, &format) != PARTD_OK) {
        fprintf(stderr, "partd export: unknown format '%s'\n", a.format);
        return usage(stderr);
    }
    char *body;
    size_t len;
    if (partd__cmd_output_read_input("export", a.in, &body, &len) != PARTD_OK)
        return EXIT_IO;
    int code = export_body(&a, format, body, len);
    free(body);
    return code;
}
