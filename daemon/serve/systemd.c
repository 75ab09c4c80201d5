/*
 * systemd.c - libsystemd loaded when `partd serve` starts
 * (serve_internal.h, partd/dynlib.h).
 */
#include "serve_internal.h"

#ifndef PARTD_SYSTEMD_SONAME
#define PARTD_SYSTEMD_SONAME "libsystemd.so"
#endif

PARTD_DYNLIB_DEFINE(partd__serve_systemd, PARTD_SYSTEMD_SONAME, PARTD__SERVE_SYSTEMD_FUNCTIONS)
