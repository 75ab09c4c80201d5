/*
 * capture.h - runs a command's entry function (partd_cmd_plan,
 * partd_cmd_show, ...) in the test process with its standard streams
 * redirected: stdin from a file (or left as it is), stdout and stderr into
 * files, restored afterwards.
 */
#ifndef PARTD_TEST_CAPTURE_H
#define PARTD_TEST_CAPTURE_H

typedef int (*tu_command_fn)(int argc, char **argv);

/* The command's exit code. stdin_file NULL leaves stdin unchanged. */
int tu_run_captured(tu_command_fn cmd, int argc, char **argv, const char *stdin_file,
                    const char *stdout_file, const char *stderr_file);

#endif
