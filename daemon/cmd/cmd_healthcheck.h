/*
 * cmd_healthcheck.h - `partd healthcheck`: whether a daemon is alive, for
 * Docker's HEALTHCHECK.
 *
 * partd_cmd_healthcheck() asks GET /livez of the daemon (--url, else the
 * address PARTD_LISTEN names, else 127.0.0.1:8080) within --timeout-ms.
 * Exit codes: 0 when it answers 200, 1 when it answers another status or
 * not at all, 2 on bad usage.
 */
#ifndef PARTD_CMD_HEALTHCHECK_H
#define PARTD_CMD_HEALTHCHECK_H

int partd_cmd_healthcheck(int argc, char **argv);

#endif
