/* serve_child.c - see serve_child.h. */
#include "serve_child.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "serve/serve.h"

static int reap(pid_t pid)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int tu_server_start(tu_server *s, int argc, char **argv, int *exit_code)
{
    memset(s, 0, sizeof *s);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        /* exit(), not _exit(): under ASan the leak check runs in the
         * child too, and a leak makes its exit status non-zero. */
        exit(partd_serve_main(argc, argv));
    }
    close(fds[1]);
    s->log = fdopen(fds[0], "r");
    char line[8192];
    while (s->log && fgets(line, sizeof line, s->log)) {
        size_t have = strlen(s->text), keep = strnlen(line, sizeof s->text - 1 - have);
        memcpy(s->text + have, line, keep);
        s->text[have + keep] = '\0';
        const char *a = strstr(line, " listening address=");
        if (a) {
            a += strlen(" listening address=");
            size_t n = strcspn(a, " \n");
            if (n >= sizeof s->address)
                n = sizeof s->address - 1;
            memcpy(s->address, a, n);
            s->address[n] = '\0';
            return 0;
        }
    }
    /* EOF: the child ended without listening. */
    if (s->log)
        fclose(s->log);
    s->log = NULL;
    int code = reap(s->pid);
    if (exit_code)
        *exit_code = code;
    return -1;
}

int tu_server_stop(tu_server *s, const char *needle, int *seen)
{
    if (seen)
        *seen = 0;
    kill(s->pid, SIGTERM);
    char line[8192];
    while (fgets(line, sizeof line, s->log))
        if (needle && seen && strstr(line, needle))
            *seen = 1;
    fclose(s->log);
    s->log = NULL;
    return reap(s->pid);
}
