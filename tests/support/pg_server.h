/*
 * pg_server.h - a throw-away PostgreSQL server for tests: initdb and pg_ctl
 * of Debian's `postgresql` package (PARTD_PG_BINDIR, default
 * /usr/lib/postgresql/15/bin) into a temporary directory, listening only on
 * 127.0.0.1 at a free port, its unix socket in that directory, fsync off.
 * PostgreSQL refuses to run as root: then the server runs as `nobody`
 * (setpriv), owning the directory. Each test gets a fresh database.
 *
 * Ownership: the partd_pg_server holds the directory and the running
 * server; partd_pg_server_stop stops it and removes the directory.
 *
 * Errors: start returns 0 (running), 1 (skip: the server binaries are not
 * installed; `why` says so) or -1 (`why` says what failed).
 */
#ifndef PARTD_TESTS_PG_SERVER_H
#define PARTD_TESTS_PG_SERVER_H

#include <stddef.h>

typedef struct partd_pg_server {
    char dir[256];
    char bindir[256];
    int port;
    int running;
    unsigned next_db;
} partd_pg_server;

int partd_pg_server_start(partd_pg_server *srv, char *why, size_t cap);
void partd_pg_server_stop(partd_pg_server *srv);

/* Creates a new empty database and writes its postgresql:// URL. 0 or -1. */
int partd_pg_server_fresh_db(partd_pg_server *srv, char *url, size_t cap);

/* Runs `pg_ctl restart` (the server is gone for a moment): 0 or -1. */
int partd_pg_server_restart(partd_pg_server *srv);

#endif
