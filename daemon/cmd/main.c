/* main.c - the partd command: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cmd_export.h"
#include "cmd_healthcheck.h"
#include "cmd_plan.h"
#include "cmd_show.h"
#include "serve/serve.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} command;

static const command commands[] = {
    {"plan", partd_cmd_plan, "plan a request offline: partd plan [REQUEST.json|-] [-o OUT]"},
    {"export", partd_cmd_export,
     "a plan as a runtime's input: partd export [RESULT.json|-] --format F [-o FILE] [--strict]"},
    {"show", partd_cmd_show, "draw a plan: partd show [RESULT.json|-] [-o PLAN.svg] [--format svg|text]"},
    {"serve", partd_serve_main, "run the service: partd serve [--listen ADDR:PORT] ... (--help)"},
    {"healthcheck", partd_cmd_healthcheck, "exit 0 when /livez answers 200: [--url URL]"},
    {"version", partd_cmd_version, "print the version"},
};

static int usage(FILE *to)
{
    fprintf(to, "usage: partd COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(to, "  %-12s %s\n", commands[i].name, commands[i].help);
    fprintf(to, "\n'partd COMMAND --help' describes a command.\n");
    return to == stdout ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "help") == 0)
        return usage(stdout);
    if (strcmp(argv[1], "--version") == 0)
        return partd_cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "partd: unknown command '%s'\n", argv[1]);
    return usage(stderr);
}
