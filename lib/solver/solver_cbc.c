/*
 * solver_cbc.c - CBC's C interface loaded on first use (solver_cbc.h).
 * The solver runs in a forked child (solver_child.c); the parent loads the
 * library before the fork, so a child never takes the loader's locks.
 * The soname comes from the build (PARTD_CBC_SONAME, Makefile).
 */
#include "solver_cbc.h"

PARTD_DYNLIB_DEFINE(partd__cbc, PARTD_CBC_SONAME, PARTD__CBC_FUNCTIONS)
