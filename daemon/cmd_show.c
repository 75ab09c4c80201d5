/* cmd_show.c - `partd show`; see cmd_show.h. */
#include "cmd_show.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "partd.h"
#include "show.h"
#include "util.h"

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

/* Writes beside the target and renames, so a reader never sees half a picture. */
static int write_out(const char *path, const char *data, size_t len)
{
    if (!path)
        return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -1;
    size_t tl = strlen(path) + 8;
    char *tmp = malloc(tl);
    if (!tmp)
        return -1;
    snprintf(tmp, tl, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    int saved = errno;
    if (f && fclose(f) != 0) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok)
        remove(tmp);
    free(tmp);
    errno = saved;
    return ok ? 0 : -1;
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
    } else if (write_out(a->out, out.data, out.len) != 0) {
        fprintf(stderr, "partd show: cannot write %s: %s\n", a->out ? a->out : "standard output",
                strerror(errno));
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
    if (partd_read_file(a.in, SIZE_MAX, &body, &len) != PARTD_OK) {
        fprintf(stderr, "partd show: cannot read %s: %s\n",
                strcmp(a.in, "-") == 0 ? "standard input" : a.in, strerror(errno));
        return EXIT_IO;
    }
    int code = render(&a, body, len);
    free(body);
    return code;
}
