/* capture.c - see capture.h. */
#include "capture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/fs.h"
#include "partd/partd.h"
#include "testutil.h"

int tu_run_captured(tu_command_fn cmd, int argc, char **argv, const char *stdin_file,
                    const char *stdout_file, const char *stderr_file)
{
    fflush(stdout);
    fflush(stderr);
    int saved[3] = {dup(0), dup(1), dup(2)};
    int in = stdin_file ? open(stdin_file, O_RDONLY) : -1;
    int out = open(stdout_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(stderr_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(out >= 0 && err >= 0 && (!stdin_file || in >= 0));
    if (in >= 0) {
        dup2(in, 0);
        close(in);
        clearerr(stdin);
    }
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    int code = cmd(argc, argv);
    fflush(stdout);
    fflush(stderr);
    for (int fd = 0; fd < 3; fd++) {
        dup2(saved[fd], fd);
        close(saved[fd]);
    }
    clearerr(stdin);
    return code;
}

static char scratch[96];

int tu_scratch_open(const char *prefix)
{
    snprintf(scratch, sizeof scratch, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(scratch) ? 0 : -1;
}

int tu_scratch_close(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

const char *tu_scratch_path(const char *name)
{
    static char buf[8][160];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", scratch, name);
    return p;
}

void tu_write_text(const char *file, const char *text)
{
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

char *tu_read_text(const char *file)
{
    char *buf = NULL;
    size_t len = 0;
    return partd_fs_read_file(file, 1 << 24, &buf, &len) == PARTD_OK ? buf : NULL;
}
