/*
 * serve_child.h - runs `partd serve` (partd_serve_main) in a forked child
 * for tests that need a live daemon on loopback, and stops it with SIGTERM
 * as an operator would.
 *
 * The child's stderr (the daemon's log) comes back on a pipe: the start
 * waits for the "listening" line and takes the address from it, so tests
 * can listen on port 0 and synchronise on the log rather than on time.
 *
 * Errors: tu_server_start returns 0, or -1 when the child ended before
 * listening (its exit status in *exit_code, -1 when it did not exit
 * normally); tu_server_stop returns the child's exit status or -1.
 */
#ifndef PARTD_TEST_SERVE_CHILD_H
#define PARTD_TEST_SERVE_CHILD_H

#include <stdio.h>
#include <sys/types.h>

typedef struct tu_server {
    pid_t pid;
    FILE *log;          /* read end of the child's stderr */
    char address[128];  /* "127.0.0.1:PORT" once listening */
    char text[4096];    /* the log read by tu_server_start (its start) */
} tu_server;

/* argv[0] is "serve". */
int tu_server_start(tu_server *s, int argc, char **argv, int *exit_code);

/* SIGTERM, then reads the rest of the log (to EOF) and reaps the child;
 * *seen (when not NULL) is 1 when a log line contained `needle`. */
int tu_server_stop(tu_server *s, const char *needle, int *seen);

#endif
