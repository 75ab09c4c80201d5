/*
 * serve.h - the `partd serve` subcommand.
 *
 * partd_serve_main() runs the daemon until SIGTERM/SIGINT and returns the
 * process exit code (0 after a clean drain; see `partd serve --help` for
 * the others).
 */
#ifndef PARTD_DAEMON_SERVE_H
#define PARTD_DAEMON_SERVE_H

/* argv[0] is the subcommand name. */
int partd_serve_main(int argc, char **argv);

#endif
