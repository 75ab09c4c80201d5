/* fs.c - see fs.h. */
#include "fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "partd/partd.h"

int partd_fs_read_file(const char *path, size_t max, char **buf, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return PARTD_EIO;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    int rc = b ? PARTD_OK : PARTD_ENOMEM;
    while (rc == PARTD_OK) {
        if (n + 1 == cap) { /* always room for the NUL */
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                rc = PARTD_ENOMEM;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (n > max)
            rc = PARTD_ETOOBIG;
        else if (got == 0 && ferror(f))
            rc = PARTD_EIO;
        else if (got == 0)
            break;
    }
    int saved = rc == PARTD_ETOOBIG ? EFBIG : rc == PARTD_ENOMEM ? ENOMEM : errno;
    if (f != stdin)
        fclose(f);
    if (rc != PARTD_OK) {
        free(b);
        errno = saved;
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return PARTD_OK;
}

int partd_fs_space(const char *path, uint64_t *avail, int *read_only)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0)
        return PARTD_EIO;
    *avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    *read_only = (vfs.f_flag & ST_RDONLY) != 0;
    return PARTD_OK;
}
