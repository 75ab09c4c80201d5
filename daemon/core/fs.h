/*
 * fs.h - files: reading a whole file (or standard input) under a size cap,
 * and the space and state of the file system that holds a path.
 *
 * Functions return PARTD_OK or a negative PARTD_E* code (partd.h); errno
 * says why where stated. The buffer partd_fs_read_file returns is the
 * caller's.
 */
#ifndef PARTD_DAEMON_FS_H
#define PARTD_DAEMON_FS_H

#include <stddef.h>
#include <stdint.h>

/* Reads a whole file ("-" = standard input) into a new malloc'd buffer,
 * NUL-terminated after its *len bytes (caller frees). PARTD_OK; PARTD_EIO
 * when it cannot be opened or read, PARTD_ETOOBIG past max bytes,
 * PARTD_ENOMEM; errno says why in every case (EFBIG past max). */
int partd_fs_read_file(const char *path, size_t max, char **buf, size_t *len);

/* The file system holding path: *avail bytes an unprivileged writer may
 * still use, *read_only 1 when it is mounted read-only (also after the
 * kernel remounted it so on an error). PARTD_OK or PARTD_EIO. */
int partd_fs_space(const char *path, uint64_t *avail, int *read_only);

#endif
