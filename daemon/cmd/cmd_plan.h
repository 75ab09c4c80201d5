/*
 * cmd_plan.h - `partd plan` and `partd version`: offline planning.
 *
 * partd_cmd_plan() reads a request (file or stdin), plans it and writes the
 * result (stdout or -o FILE); a problem document goes to stderr. Exit codes:
 * 0 planned, 2 invalid request, 3 no feasible plan, 1 anything else (I/O,
 * memory, usage).
 */
#ifndef PARTD_CMD_PLAN_H
#define PARTD_CMD_PLAN_H

#include <stddef.h>

int partd_cmd_plan(int argc, char **argv);
int partd_cmd_version(int argc, char **argv);

#endif
