/*
 * systemd.c - libsystemd loaded when `partd serve` starts
 * (serve_internal.h, partd/dynlib.h); its soname comes from the build
 * (PARTD_SYSTEMD_SONAME, Makefile).
 */
#include "serve_internal.h"

PARTD_DYNLIB_DEFINE(partd__serve_systemd, PARTD_SYSTEMD_SONAME, PARTD__SERVE_SYSTEMD_FUNCTIONS)
