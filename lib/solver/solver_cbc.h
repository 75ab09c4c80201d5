/*
 * solver_cbc.h - CBC's C interface, loaded on first use (partd/dynlib.h):
 * lib/solver includes this instead of <coin/Cbc_C_Interface.h>, and the
 * Cbc_* names it uses then call through the table partd__cbc_load fills
 * (not a public interface; the library's soname comes from the build,
 * PARTD_CBC_SONAME). A function added here goes in both lists.
 *
 * Errors: partd__cbc_load returns PARTD_OK, or PARTD_EINTERNAL with *why
 * naming the library or the function it lacks.
 */
#ifndef PARTD_SOLVER_CBC_H
#define PARTD_SOLVER_CBC_H

#include <coin/Cbc_C_Interface.h>

#include "partd/dynlib.h"

#define PARTD__CBC_FUNCTIONS(X, p)                          \
    X(p, Cbc_bestSolution)                                  \
    X(p, Cbc_deleteModel)                                   \
    X(p, Cbc_getBestPossibleObjValue)                       \
    X(p, Cbc_getColSolution)                                \
    X(p, Cbc_getNumIntegers)                                \
    X(p, Cbc_getObjValue)                                   \
    X(p, Cbc_isProvenInfeasible)                            \
    X(p, Cbc_isProvenOptimal)                               \
    X(p, Cbc_loadProblem)                                   \
    X(p, Cbc_newModel)                                      \
    X(p, Cbc_setAllowableFractionGap)                       \
    X(p, Cbc_setAllowableGap)                               \
    X(p, Cbc_setInteger)                                    \
    X(p, Cbc_setLogLevel)                                   \
    X(p, Cbc_setMaximumSeconds)                             \
    X(p, Cbc_setParameter)                                  \
    X(p, Cbc_solve)                                         \
    X(p, Cbc_status)

PARTD_DYNLIB_DECLARE(partd__cbc, PARTD__CBC_FUNCTIONS)

#define Cbc_bestSolution PARTD_DYNLIB_FN(partd__cbc, Cbc_bestSolution)
#define Cbc_deleteModel PARTD_DYNLIB_FN(partd__cbc, Cbc_deleteModel)
#define Cbc_getBestPossibleObjValue PARTD_DYNLIB_FN(partd__cbc, Cbc_getBestPossibleObjValue)
#define Cbc_getColSolution PARTD_DYNLIB_FN(partd__cbc, Cbc_getColSolution)
#define Cbc_getNumIntegers PARTD_DYNLIB_FN(partd__cbc, Cbc_getNumIntegers)
#define Cbc_getObjValue PARTD_DYNLIB_FN(partd__cbc, Cbc_getObjValue)
#define Cbc_isProvenInfeasible PARTD_DYNLIB_FN(partd__cbc, Cbc_isProvenInfeasible)
#define Cbc_isProvenOptimal PARTD_DYNLIB_FN(partd__cbc, Cbc_isProvenOptimal)
#define Cbc_loadProblem PARTD_DYNLIB_FN(partd__cbc, Cbc_loadProblem)
#define Cbc_newModel PARTD_DYNLIB_FN(partd__cbc, Cbc_newModel)
#define Cbc_setAllowableFractionGap PARTD_DYNLIB_FN(partd__cbc, Cbc_setAllowableFractionGap)
#define Cbc_setAllowableGap PARTD_DYNLIB_FN(partd__cbc, Cbc_setAllowableGap)
#define Cbc_setInteger PARTD_DYNLIB_FN(partd__cbc, Cbc_setInteger)
#define Cbc_setLogLevel PARTD_DYNLIB_FN(partd__cbc, Cbc_setLogLevel)
#define Cbc_setMaximumSeconds PARTD_DYNLIB_FN(partd__cbc, Cbc_setMaximumSeconds)
#define Cbc_setParameter PARTD_DYNLIB_FN(partd__cbc, Cbc_setParameter)
#define Cbc_solve PARTD_DYNLIB_FN(partd__cbc, Cbc_solve)
#define Cbc_status PARTD_DYNLIB_FN(partd__cbc, Cbc_status)

#endif
