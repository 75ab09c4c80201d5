/*
 * datadir.h - the data directory's lock: one `partd serve` per directory.
 *
 * The lock is flock(2) on DIR/partd.lock, held for the daemon's lifetime
 * through an open descriptor (released by the kernel when the process ends,
 * however it ends); the file holds the holder's pid so that a second daemon
 * can say who has it. Two daemons on one directory would each plan and
 * finish the other's jobs (a cancelled job turning succeeded).
 *
 * Errors: partd_datadir_lock returns a descriptor (>= 0), or -1 with a
 * sentence in err and *held 1 when another process holds the lock (the
 * sentence names the directory and its pid), 0 when the directory or its
 * lock file cannot be made. Ownership: the caller closes the descriptor with
 * partd_datadir_unlock.
 */
#ifndef PARTD_DAEMON_DATADIR_H
#define PARTD_DAEMON_DATADIR_H

#include <stddef.h>

/* Creates dir (0700) when missing and takes its lock without waiting. */
int partd_datadir_lock(const char *dir, int *held, char *err, size_t errcap);

/* Releases the lock (fd < 0 is fine). The file stays: removing it would let
 * a third daemon lock a new file while a second still holds the old one. */
void partd_datadir_unlock(int fd);

#endif
