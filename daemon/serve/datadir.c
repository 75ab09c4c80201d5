/*
 * datadir.c - the data directory's lock (flock on DIR/partd.lock with the
 * holder's pid inside). See datadir.h.
 */
#include "datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The pid written in the lock file, or 0 when it holds none (yet). */
static long holder_pid(int fd)
{
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end = NULL;
    long pid = strtol(buf, &end, 10);
    return end != buf && pid > 0 ? pid : 0;
}

static void held_by_another(const char *dir, int fd, char *err, size_t cap)
{
    long pid = holder_pid(fd);
    if (pid)
        snprintf(err, cap, "the data directory %s is in use by another partd serve (pid %ld); "
                 "one daemon per data directory", dir, pid);
    else
        snprintf(err, cap, "the data directory %s is in use by another partd serve (pid "
                 "unknown); one daemon per data directory", dir);
}

/* Writes our pid into the lock file we hold. */
static int write_pid(int fd)
{
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
        return -1;
    return 0;
}

int partd_datadir_lock(const char *dir, int *held, char *err, size_t cap)
{
    *held = 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create the data directory %s: %s", dir, strerror(errno));
        return -1;
    }
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/partd.lock", dir) >= sizeof path) {
        snprintf(err, cap, "the data directory path is too long");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, cap, "cannot open the lock file %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            *held = 1;
            held_by_another(dir, fd, err, cap);
        } else {
            snprintf(err, cap, "cannot lock %s: %s", path, strerror(errno));
        }
        close(fd);
        return -1;
    }
    if (write_pid(fd) != 0) {
        snprintf(err, cap, "cannot write the lock file %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void partd_datadir_unlock(int fd)
{
    if (fd >= 0)
        close(fd);
}
