/*
 * dynlib.h - a shared library loaded on first use rather than at every
 * start: the MILP solver (CBC), the PostgreSQL client and the HTTP server
 * are needed only by some work, and loading them with their dependencies
 * (some 40 libraries, C++ among them) is most of what starting the partd
 * binary costs. Each user keeps one partd_dynlib per library, statically
 * initialised with PARTD_DYNLIB_INIT, and calls its functions through the
 * table filled here (see solver_cbc.h, pg_internal.h, http_internal.h).
 *
 * Errors: partd_dynlib_load returns PARTD_OK or PARTD_EINTERNAL, the
 * latter with lib->err naming the library and what the loader said, or
 * the function it lacks. The first call decides; later calls, from any
 * thread, return the same.
 *
 * The pattern each user follows, for a list LIST(X, p) of X(p, function):
 * PARTD_DYNLIB_DECLARE(prefix, LIST) in its header (an index per function,
 * prefix_fns, prefix_load), then `#define function PARTD_DYNLIB_FN(prefix,
 * function)` for each, so that the code calling the library reads as if it
 * were linked; PARTD_DYNLIB_DEFINE(prefix, soname, LIST) in one C file.
 * prefix_load(&why) loads it (PARTD_OK, or PARTD_EINTERNAL with why).
 */
#ifndef PARTD_DYNLIB_H
#define PARTD_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

typedef void (*partd_dynlib_fn)(void);

typedef struct partd_dynlib {
    const char *soname;             /* what dlopen takes, e.g. "libpq.so.5" */
    const char *const *names;       /* n function names */
    partd_dynlib_fn *fns;           /* n slots, filled in names' order */
    size_t n;
    pthread_mutex_t lock;
    int state;                      /* 0 not tried, else PARTD_OK + 1 or the error */
    char err[256];
} partd_dynlib;

#define PARTD_DYNLIB_INIT(soname, names, fns, n)                                               \
    {(soname), (names), (fns), (n), PTHREAD_MUTEX_INITIALIZER, 0, {0}}

int partd_dynlib_load(partd_dynlib *lib);

#define PARTD_DYNLIB_INDEX_(p, f) p##_##f,
#define PARTD_DYNLIB_NAME_(p, f) #f,

#define PARTD_DYNLIB_DECLARE(p, LIST)                                                          \
    enum { LIST(PARTD_DYNLIB_INDEX_, p) p##_count };                                          \
    extern partd_dynlib_fn p##_fns[p##_count];                                                 \
    int p##_load(const char **why);

#define PARTD_DYNLIB_DEFINE(p, soname, LIST)                                                   \
    partd_dynlib_fn p##_fns[p##_count];                                                        \
    static const char *const p##_names[] = {LIST(PARTD_DYNLIB_NAME_, p)};                      \
    static partd_dynlib p##_lib = PARTD_DYNLIB_INIT(soname, p##_names, p##_fns, p##_count);    \
    int p##_load(const char **why)                                                             \
    {                                                                                          \
        int rc = partd_dynlib_load(&p##_lib);                                                  \
        *why = p##_lib.err;                                                                    \
        return rc;                                                                             \
    }

/* function f's slot in p's table, as f's own type */
#define PARTD_DYNLIB_FN(p, f) ((__typeof__(&f))p##_fns[p##_##f])

#endif
