/*
 * output.h - writing a command's output file without clobbering what is not
 * ours, reading its input whole, and reporting a problem with it. Shared by
 * the commands of daemon/cmd (cmd_plan.c, cmd_show.c, cmd_export.c) and
 * private to the folder: partd__cmd_output_*.
 *
 * `partd plan -o PATH` (and every command that writes a file) goes through
 * here. A regular file (or a path that does not exist yet) is replaced
 * atomically: the bytes go to a temporary file created with O_EXCL beside
 * the target (beside the symlink's target when PATH is a symlink), which is
 * renamed over it on commit, so a reader never sees half a document and a
 * failed write leaves the old file alone. Anything else that already exists
 * (a character device such as /dev/null, a FIFO, a socket) is written
 * straight into, never replaced. NULL or "-" means standard output.
 *
 * Errors: functions return PARTD_OK or a negative PARTD_E* code
 * (partd/partd.h): PARTD_EIO with errno saying why, PARTD_ENOMEM.
 */
#ifndef PARTD_DAEMON_OUTPUT_H
#define PARTD_DAEMON_OUTPUT_H

#include <stddef.h>

typedef struct partd__cmd_output {
    int fd;
    int owns_fd;        /* 0 for standard output */
    char *tmp_path;     /* temporary file to rename on commit, or NULL */
    char *final_path;   /* where tmp_path goes */
} partd__cmd_output;

/* Opens the destination. On failure nothing is left behind. */
int partd__cmd_output_open(partd__cmd_output *o, const char *path);

/* Appends len bytes (retrying short writes and EINTR). */
int partd__cmd_output_write(partd__cmd_output *o, const void *data, size_t len);

/* Flushes and, for a replaced file, renames the temporary file over the
 * target. The output is closed whatever the outcome; on failure the
 * temporary file is removed. */
int partd__cmd_output_commit(partd__cmd_output *o);

/* Closes the output and removes the temporary file, if any (the target is
 * left as it was). Safe on an output that failed to open or was committed. */
void partd__cmd_output_abort(partd__cmd_output *o);

/* open + write + commit of one buffer. */
int partd__cmd_output_write_file(const char *path, const void *data, size_t len);

/* A command's input and output whole, with the line a user sees when
 * either fails on standard error ("partd <command>: cannot read FILE:
 * why"): read_input reads `path` ("-" = standard input) into a malloc'd
 * buffer (core/fs.h: partd_fs_read_file, no size cap), write_output is
 * partd__cmd_output_write_file. PARTD_OK or the failure's code. */
int partd__cmd_output_read_input(const char *command, const char *path, char **body,
                                 size_t *len);
int partd__cmd_output_write_output(const char *command, const char *path, const void *data,
                                   size_t len);

/* A problem document (partd/problem.h) on standard error, as a command
 * reports a bad input: its JSON text, or its detail alone when memory runs
 * out. */
struct partd_problem;
void partd__cmd_output_problem(const struct partd_problem *pb);

#endif
