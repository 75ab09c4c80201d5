/*
 * output.h - writing a command's output file without clobbering what is not
 * ours.
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
 * Errors: functions return PARTD_OK or a negative PARTD_E* code (partd.h):
 * PARTD_EIO with errno saying why, PARTD_ENOMEM.
 */
#ifndef PARTD_DAEMON_OUTPUT_H
#define PARTD_DAEMON_OUTPUT_H

#include <stddef.h>

typedef struct partd_output {
    int fd;
    int owns_fd;        /* 0 for standard output */
    char *tmp_path;     /* temporary file to rename on commit, or NULL */
    char *final_path;   /* where tmp_path goes */
} partd_output;

/* Opens the destination. On failure nothing is left behind. */
int partd_output_open(partd_output *o, const char *path);

/* Appends len bytes (retrying short writes and EINTR). */
int partd_output_write(partd_output *o, const void *data, size_t len);

/* Flushes and, for a replaced file, renames the temporary file over the
 * target. The output is closed whatever the outcome; on failure the
 * temporary file is removed. */
int partd_output_commit(partd_output *o);

/* Closes the output and removes the temporary file, if any (the target is
 * left as it was). Safe on an output that failed to open or was committed. */
void partd_output_abort(partd_output *o);

/* open + write + commit of one buffer. */
int partd_write_output(const char *path, const void *data, size_t len);

#endif
