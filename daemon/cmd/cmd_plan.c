/* cmd_plan.c - `partd plan` and `partd version`; see cmd_plan.h. */
#include "cmd_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/result.h"

#define EXIT_PLANNED 0
#define EXIT_FAILURE_OTHER 1
#define EXIT_INVALID 2
#define EXIT_INFEASIBLE 3

static int usage(FILE *to)
{
    fprintf(to, "usage: partd plan [REQUEST.json | -] [-o RESULT.json]\n"
                "  Plans a request offline. Reads stdin when no file (or -) is given;\n"
                "  writes the result to stdout or to -o FILE. A problem document goes to\n"
                "  stderr. Exit: 0 planned, 2 invalid request, 3 no feasible plan, 1 other.\n");
    return to == stdout ? EXIT_PLANNED : EXIT_FAILURE_OTHER;
}

static int exit_code_for(int rc)
{
    switch (rc) {
    case PARTD_OK: return EXIT_PLANNED;
    case PARTD_EMALFORMED:
    case PARTD_EINVALID:
    case PARTD_ETOOBIG: return EXIT_INVALID;
    case PARTD_EINFEASIBLE: return EXIT_INFEASIBLE;
    default: return EXIT_FAILURE_OTHER;
    }
}

/* The sink of partd_result_write: the output file, keeping the errno of a
 * failed write for the message. */
typedef struct file_sink {
    partd__cmd_output out;
    int saved_errno;
} file_sink;

static int file_sink_write(const char *data, size_t len, void *ctx)
{
    file_sink *f = ctx;
    int rc = partd__cmd_output_write(&f->out, data, len);
    if (rc != PARTD_OK)
        f->saved_errno = errno;
    return rc;
}

/* Streams the result into out_path (output.h: a regular file is replaced
 * only once the whole document is written). PARTD_OK, or PARTD_EIO,
 * PARTD_ENOMEM or PARTD_EINTERNAL with a message on stderr. */
static int write_result(const partd_request *req, const partd_plan *plan, const char *out_path)
{
    const char *name = out_path ? out_path : "stdout";
    file_sink f = {.saved_errno = 0};
    if (partd__cmd_output_open(&f.out, out_path) != PARTD_OK) {
        fprintf(stderr, "partd plan: cannot write %s: %s\n", name, strerror(errno));
        return PARTD_EIO;
    }
    int rc = partd_result_write(req, plan, NULL, 0, file_sink_write, &f, NULL);
    if (rc == PARTD_OK) {
        if (partd__cmd_output_commit(&f.out) != PARTD_OK) {
            f.saved_errno = errno;
            rc = PARTD_EIO;
        }
    } else {
        partd__cmd_output_abort(&f.out);
    }
    if (rc == PARTD_EIO)
        fprintf(stderr, "partd plan: cannot write %s: %s\n", name, strerror(f.saved_errno));
    else if (rc != PARTD_OK)
        fprintf(stderr, "partd plan: %s writing the result\n",
                rc == PARTD_ENOMEM ? "out of memory" : partd_strerror(rc));
    return rc;
}

/* Decodes the request from `in` in chunks of READ_CHUNK bytes: the body is
 * never held whole. PARTD_EIO (errno set) when reading fails. */
#define READ_CHUNK (1u << 20)

static int decode_file(FILE *in, partd_request **req, partd_problem *pb)
{
    partd_decoder *dec = partd_request_decoder_new(NULL, pb);
    char *buf = malloc(READ_CHUNK);
    int rc = dec && buf ? PARTD_OK : PARTD_ENOMEM;
    if (rc == PARTD_ENOMEM)
        partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                          "the server ran out of memory parsing the request");
    size_t n;
    while (rc == PARTD_OK && (n = fread(buf, 1, READ_CHUNK, in)) > 0)
        rc = partd_request_decoder_feed(dec, buf, n);
    if (rc == PARTD_OK && ferror(in))
        rc = PARTD_EIO;
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, req);
    free(buf);
    partd_request_decoder_free(dec);
    return rc;
}

static int plan_file(FILE *in, const char *in_name, const char *out_path)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    partd_plan *plan = NULL;
    int rc = decode_file(in, &req, &pb);
    if (rc == PARTD_EIO) {
        fprintf(stderr, "partd plan: cannot read %s: %s\n", in_name, strerror(errno));
        partd_problem_free(&pb);
        return EXIT_FAILURE_OTHER;
    }
    if (rc == PARTD_OK)
        rc = partd_plan_run(req, NULL, &plan, &pb);
    if (rc == PARTD_OK)
        rc = write_result(req, plan, out_path);
    else if (exit_code_for(rc) == EXIT_FAILURE_OTHER) {
        /* Not the request's fault (out of memory, an internal error): a
         * line for the operator, not a problem document about the input. */
        fprintf(stderr, "partd plan: %s%s%s\n", partd_strerror(rc), pb.detail ? ": " : "",
                pb.detail ? pb.detail : "");
    } else {
        partd__cmd_output_problem(&pb);
    }
    partd_plan_free(plan);
    partd_request_free(req);
    partd_problem_free(&pb);
    return exit_code_for(rc);
}

int partd_cmd_plan(int argc, char **argv)
{
    const char *in = "-", *out = NULL;
    int have_in = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return usage(stdout);
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc)
                return usage(stderr);
            out = argv[i];
        } else if (!have_in && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            in = argv[i];
            have_in = 1;
        } else {
            fprintf(stderr, "partd plan: unexpected argument '%s'\n", argv[i]);
            return usage(stderr);
        }
    }
    const char *in_name = strcmp(in, "-") == 0 ? "standard input" : in;
    FILE *f = strcmp(in, "-") == 0 ? stdin : fopen(in, "rb");
    if (!f) {
        fprintf(stderr, "partd plan: cannot read %s: %s\n", in_name, strerror(errno));
        return EXIT_FAILURE_OTHER;
    }
    int code = plan_file(f, in_name, out);
    if (f != stdin)
        fclose(f);
    return code;
}

int partd_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
#ifndef PARTD_BUILD
#define PARTD_BUILD "unknown"
#endif
    printf("partd %s (%s, build %s)\n", PARTD_VERSION, PARTD_PLANNER_VERSION, PARTD_BUILD);
    return 0;
}
