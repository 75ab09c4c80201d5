/*
 * pg_server.c - a throw-away PostgreSQL server for tests. See pg_server.h.
 */
#include "pg_server.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_BINDIR "/usr/lib/postgresql/15/bin"

/* A port the kernel just handed out on 127.0.0.1 (free at that moment). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* The command prefix that drops root for the server's programs. */
static const char *as_user(void)
{
    return geteuid() == 0 ? "setpriv --reuid=nobody --regid=nogroup --clear-groups " : "";
}

static int sh(const char *cmd)
{
    int rc = system(cmd);
    return rc == 0 ? 0 : -1;
}

int partd_pg_server_start(partd_pg_server *srv, char *why, size_t cap)
{
    memset(srv, 0, sizeof *srv);
    const char *bindir = getenv("PARTD_PG_BINDIR");
    snprintf(srv->bindir, sizeof srv->bindir, "%s", bindir ? bindir : DEFAULT_BINDIR);
    char path[400];
    snprintf(path, sizeof path, "%s/initdb", srv->bindir);
    if (access(path, X_OK) != 0) {
        snprintf(why, cap, "PostgreSQL server binaries not installed (%s; apt-get install "
                 "postgresql)", path);
        return 1;
    }
    snprintf(srv->dir, sizeof srv->dir, "/tmp/partd-pg-XXXXXX");
    if (!mkdtemp(srv->dir)) {
        snprintf(why, cap, "cannot make a temporary directory");
        return -1;
    }
    char cmd[2048];
    if (geteuid() == 0) {
        snprintf(cmd, sizeof cmd, "chown nobody:nogroup '%s'", srv->dir);
        if (sh(cmd) != 0) {
            snprintf(why, cap, "cannot hand %s to nobody", srv->dir);
            return -1;
        }
    }
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s'%s/initdb' -D '%s/data' -U partd --auth=trust -E UTF8 "
             "--no-sync > '%s/initdb.log' 2>&1",
             srv->dir, as_user(), srv->bindir, srv->dir, srv->dir);
    if (sh(cmd) != 0) {
        snprintf(why, cap, "initdb failed (see %s/initdb.log)", srv->dir);
        return -1;
    }
    for (int tries = 0; tries < 5 && !srv->running; tries++) {
        srv->port = free_port();
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && %s'%s/pg_ctl' -D '%s/data' -l '%s/server.log' -w -t 60 "
                 "-o \"-h 127.0.0.1 -p %d -k '%s' -F -c max_connections=300\" start > /dev/null",
                 srv->dir, as_user(), srv->bindir, srv->dir, srv->dir, srv->port, srv->dir);
        srv->running = sh(cmd) == 0;
    }
    if (!srv->running) {
        snprintf(why, cap, "pg_ctl start failed (see %s/server.log)", srv->dir);
        return -1;
    }
    return 0;
}

void partd_pg_server_stop(partd_pg_server *srv)
{
    char cmd[1024];
    if (srv->running) {
        snprintf(cmd, sizeof cmd, "cd '%s' && %s'%s/pg_ctl' -D '%s/data' -m immediate stop "
                 "> /dev/null 2>&1", srv->dir, as_user(), srv->bindir, srv->dir);
        (void)sh(cmd);
        srv->running = 0;
    }
    if (srv->dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", srv->dir);
        (void)sh(cmd);
        srv->dir[0] = '\0';
    }
}

int partd_pg_server_restart(partd_pg_server *srv)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s'%s/pg_ctl' -D '%s/data' -m fast -w -t 60 "
             "restart > /dev/null 2>&1", srv->dir, as_user(), srv->bindir, srv->dir);
    return sh(cmd);
}

int partd_pg_server_fresh_db(partd_pg_server *srv, char *url, size_t cap)
{
    char conninfo[256], sql[96], name[64];
    snprintf(conninfo, sizeof conninfo, "host=127.0.0.1 port=%d user=partd dbname=postgres "
             "connect_timeout=10", srv->port);
    snprintf(name, sizeof name, "t%u_%ld", ++srv->next_db, (long)getpid());
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    PGconn *c = PQconnectdb(conninfo);
    int ok = PQstatus(c) == CONNECTION_OK;
    if (ok) {
        PGresult *r = PQexec(c, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            fprintf(stderr, "CREATE DATABASE failed: %s", PQerrorMessage(c));
        PQclear(r);
    } else {
        fprintf(stderr, "cannot connect to the test server: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    if (!ok)
        return -1;
    snprintf(url, cap, "postgresql://partd@127.0.0.1:%d/%s", srv->port, name);
    return 0;
}
