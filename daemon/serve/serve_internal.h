/*
 * serve_internal.h - what the files of daemon/serve/ share beyond their own
 * headers (not for use outside this directory): libsystemd's functions,
 * loaded by partd__serve_systemd_load (systemd.c) when `partd serve`
 * starts, so that the offline commands never load it and its compression
 * and crypto libraries. serve.c calls sd_* through this table; a function
 * added here goes in both lists.
 *
 * Errors: partd__serve_systemd_load returns PARTD_OK, or PARTD_EINTERNAL
 * with *why naming the library or the function it lacks.
 */
#ifndef PARTD_DAEMON_SERVE_INTERNAL_H
#define PARTD_DAEMON_SERVE_INTERNAL_H

#include <systemd/sd-daemon.h>

#include "partd/dynlib.h"

#define PARTD__SERVE_SYSTEMD_FUNCTIONS(X, p)                \
    X(p, sd_notify)                                         \
    X(p, sd_notifyf)                                        \
    X(p, sd_watchdog_enabled)

PARTD_DYNLIB_DECLARE(partd__serve_systemd, PARTD__SERVE_SYSTEMD_FUNCTIONS)

#define sd_notify PARTD_DYNLIB_FN(partd__serve_systemd, sd_notify)
#define sd_notifyf PARTD_DYNLIB_FN(partd__serve_systemd, sd_notifyf)
#define sd_watchdog_enabled PARTD_DYNLIB_FN(partd__serve_systemd, sd_watchdog_enabled)

#endif
