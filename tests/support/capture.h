/*
 * capture.h - runs a command's entry function (partd_cmd_plan,
 * partd_cmd_show, ...) in the test process with its standard streams
 * redirected: stdin from a file (or left as it is), stdout and stderr into
 * files, restored afterwards; and a scratch directory for the files such
 * a test reads and writes (one per test group: setup and teardown).
 */
#ifndef PARTD_TEST_CAPTURE_H
#define PARTD_TEST_CAPTURE_H

typedef int (*tu_command_fn)(int argc, char **argv);

/* The command's exit code. stdin_file NULL leaves stdin unchanged. */
int tu_run_captured(tu_command_fn cmd, int argc, char **argv, const char *stdin_file,
                    const char *stdout_file, const char *stderr_file);

/* cmocka group setup/teardown: a fresh /tmp/<prefix>-XXXXXX, removed
 * afterwards. One scratch directory at a time. */
int tu_scratch_open(const char *prefix);
int tu_scratch_close(void);

/* <scratch>/<name>; several of these may be alive at once (argv plus
 * redirections), the eighth next call reuses the first buffer. */
const char *tu_scratch_path(const char *name);

void tu_write_text(const char *file, const char *text);

/* The file's contents (caller frees), NULL when it does not exist. */
char *tu_read_text(const char *file);

#endif
