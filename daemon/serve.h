/*
 * serve.h - the `partd serve` and `partd healthcheck` subcommands.
 *
 * partd_serve_main() runs the daemon until SIGTERM/SIGINT and returns the
 * process exit code (0 after a clean drain; see `partd serve --help` for
 * the others). partd_healthcheck_main() returns 0 when GET /livez answers
 * 200, 1 when it does not, 2 on bad usage.
 */
#ifndef PARTD_DAEMON_SERVE_H
#define PARTD_DAEMON_SERVE_H

/* argv[0] is the subcommand name. */
int partd_serve_main(int argc, char **argv);
int partd_healthcheck_main(int argc, char **argv);

#endif
