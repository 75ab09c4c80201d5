/* output.c - atomic replacement of regular files, straight writes into
 * everything else; see output.h. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "partd/partd.h"
#include "partd/problem.h"

static void output_reset(partd__cmd_output *o)
{
    o->fd = -1;
    o->owns_fd = 0;
    o->tmp_path = NULL;
    o->final_path = NULL;
}

/* The mode a new file gets from open(2) with 0666: what umask allows. */
static mode_t default_file_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* A temporary file beside `target`, created with O_EXCL (mkstemp). */
static int open_temp_beside(partd__cmd_output *o, const char *target, mode_t mode)
{
    size_t len = strlen(target) + sizeof(".partd-XXXXXX");
    o->tmp_path = malloc(len);
    o->final_path = strdup(target);
    if (!o->tmp_path || !o->final_path) {
        partd__cmd_output_abort(o);
        errno = ENOMEM;
        return PARTD_ENOMEM;
    }
    snprintf(o->tmp_path, len, "%s.partd-XXXXXX", target);
    o->fd = mkstemp(o->tmp_path);
    if (o->fd < 0) {
        int saved = errno;
        free(o->tmp_path);
        o->tmp_path = NULL;
        partd__cmd_output_abort(o);
        errno = saved;
        return PARTD_EIO;
    }
    o->owns_fd = 1;
    if (fchmod(o->fd, mode) != 0) {
        int saved = errno;
        partd__cmd_output_abort(o);
        errno = saved;
        return PARTD_EIO;
    }
    return PARTD_OK;
}

int partd__cmd_output_open(partd__cmd_output *o, const char *path)
{
    output_reset(o);
    if (!path || strcmp(path, "-") == 0) {
        o->fd = STDOUT_FILENO;
        return PARTD_OK;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return PARTD_EIO;
        /* A dangling symlink: create its target, as open(2) would. */
        char resolved[PATH_MAX];
        ssize_t n = readlink(path, resolved, sizeof resolved - 1);
        if (n > 0 && resolved[0] == '/') {
            resolved[n] = '\0';
            return open_temp_beside(o, resolved, default_file_mode());
        }
        return open_temp_beside(o, path, default_file_mode());
    }
    if (!S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return PARTD_EIO;
        }
        /* A device, FIFO or socket: write into it, never replace it. */
        o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (o->fd < 0)
            return PARTD_EIO;
        o->owns_fd = 1;
        return PARTD_OK;
    }
    char *real = realpath(path, NULL); /* replace the file a symlink names */
    if (!real)
        return PARTD_EIO;
    int rc = open_temp_beside(o, real, st.st_mode & 07777);
    free(real);
    return rc;
}

int partd__cmd_output_write(partd__cmd_output *o, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(o->fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return PARTD_EIO;
        }
        p += n;
        len -= (size_t)n;
    }
    return PARTD_OK;
}

int partd__cmd_output_commit(partd__cmd_output *o)
{
    int rc = PARTD_OK;
    if (o->tmp_path) {
        if (fsync(o->fd) != 0)
            rc = PARTD_EIO;
    }
    if (o->owns_fd) {
        if (close(o->fd) != 0 && rc == PARTD_OK)
            rc = PARTD_EIO;
        o->owns_fd = 0;
    }
    o->fd = -1;
    if (rc == PARTD_OK && o->tmp_path && rename(o->tmp_path, o->final_path) != 0)
        rc = PARTD_EIO;
    if (rc == PARTD_OK && o->tmp_path) {
        free(o->tmp_path);
        o->tmp_path = NULL;
    }
    int saved = errno;
    partd__cmd_output_abort(o);
    errno = saved;
    return rc;
}

void partd__cmd_output_abort(partd__cmd_output *o)
{
    if (o->owns_fd)
        close(o->fd);
    if (o->tmp_path)
        unlink(o->tmp_path);
    free(o->tmp_path);
    free(o->final_path);
    output_reset(o);
}

int partd__cmd_output_write_file(const char *path, const void *data, size_t len)
{
    partd__cmd_output o;
    int rc = partd__cmd_output_open(&o, path);
    if (rc != PARTD_OK)
        return rc;
    rc = partd__cmd_output_write(&o, data, len);
    if (rc != PARTD_OK) {
        int saved = errno;
        partd__cmd_output_abort(&o);
        errno = saved;
        return rc;
    }
    return partd__cmd_output_commit(&o);
}

int partd__cmd_output_read_input(const char *command, const char *path, char **body,
                                 size_t *len)
{
    int rc = partd_fs_read_file(path, SIZE_MAX, body, len);
    if (rc != PARTD_OK)
        fprintf(stderr, "partd %s: cannot read %s: %s\n", command,
                strcmp(path, "-") == 0 ? "standard input" : path, strerror(errno));
    return rc;
}

int partd__cmd_output_write_output(const char *command, const char *path, const void *data,
                                   size_t len)
{
    int rc = partd__cmd_output_write_file(path, data, len);
    if (rc != PARTD_OK)
        fprintf(stderr, "partd %s: cannot write %s: %s\n", command,
                path ? path : "standard output", strerror(errno));
    return rc;
}

void partd__cmd_output_problem(const partd_problem *pb)
{
    size_t len;
    char *s = partd_problem_to_json(pb, &len);
    if (s)
        fwrite(s, 1, len, stderr);
    else
        fprintf(stderr, "partd: %s\n", pb->detail ? pb->detail : "error");
    free(s);
}
