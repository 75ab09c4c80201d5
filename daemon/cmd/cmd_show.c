/* cmd_show.c - `partd show`; see cmd_show.h. */
#include "cmd_show.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "output.h"
#include "partd/partd.h"
#include "show/show.h"

#define EXIT_DRAWN 0
#define EXIT_IO 1
#define EXIT_NOT_RESULT 2

static int usage(FILE *to)
{
    fprintf(to, "usage: partd show [RESULT.json | -] [-o PLAN.svg] [--format svg|text]\n"
                "  Draws a plan from its result document (as `partd plan` writes it): an SVG\n"
                "  picture of memory and time per stage, the training timeline and the\n"
                "  checkpointing plan, or with --format text the same facts as a table.\n"
                "  Reads stdin when no file (or -) is given; writes stdout or -o FILE.\n"
                "  Exit: 0 drawn, 1 cannot read or write a file, 2 not a result document.\n");
    return to == stdout ? EXIT_DRAWN : EXIT_IO;
}

typedef struct show_args {
    const char *in, *out;
    int text;
} show_args;

/* 0 parsed, 1 help printed, -1 usage error. */
static int parse_args(int argc, char **argv, show_args *a)
{
    int have_in = 0;
    a->in = "-";
    a->out = NULL;
    a->text = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc)
                return -1;
            a->out = argv[i];
        } else if (strcmp(argv[i], "--format") == 0) {
            if (++i >= argc || (strcmp(argv[i], "svg") != 0 && strcmp(argv[i], "text") != 0)) {
                fprintf(stderr, "partd show: --format takes svg or text\n");
                return -1;
            }
            a->text = strcmp(argv[i], "text") == 0;
        } else if (!have_in && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            a->in = argv[i];
            have_in = 1;
        } else {
            fprintf(stderr, "partd show: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
    }
    return 0;
}

static int render(const show_args *a, const char *body, size_t len)
{
    partd_buf out;
    partd_buf_init(&out);
    char err[512];
    int rc = a->text ? partd_show_text(body, len, &out, err, sizeof err)
                     : partd_show_svg(body, len, &out, err, sizeof err);
    int code = EXIT_DRAWN;
    if (rc == PARTD_EMALFORMED || rc == PARTD_EINVALID) {
        fprintf(stderr, "partd show: %s\n", err);
        code = EXIT_NOT_RESULT;
    } else if (rc != PARTD_OK) {
        fprintf(stderr, "partd show: %s\n", err);
        code = EXIT_IO;
    } else if (partd__cmd_output_write_output("show", a->out, out.data, out.len) != PARTD_OK) {
        code = EXIT_IO;
    }
    partd_buf_free(&out);
    return code;
}

int partd_cmd_show(int argc, char **argv)
{
    show_args a;
    int p = parse_args(argc, argv, &a);
    if (p != 0)
        return usage(p > 0 ? stdout : stderr);
    char *body;
    size_t len;
    if (partd__cmd_output_read_input("show", a.in, &body, &len) != PARTD_OK)
        return EXIT_IO;
    int code = render(&a, body, len);
    free(body);
    return code;
}
