/*
 * proc_mem.c - memory figures from /proc; see proc_mem.h.
 */
#include "proc_mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

double partd_bench_status_bytes(pid_t pid, const char *key)
{
    char path[64];
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    double v = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            v = strtod(line + n + 1, NULL) * 1024.0;
            break;
        }
    fclose(f);
    return v;
}

int partd_bench_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int partd_bench_in_child(partd_bench_fn fn, void *ctx, void *out, size_t out_size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        int rc = fn(ctx, out);
        if (rc == 0 && write(fds[1], out, out_size) != (ssize_t)out_size)
            rc = 1;
        _exit(rc == 0 ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, out_size);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return got == (ssize_t)out_size && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
