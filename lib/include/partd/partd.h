/*
 * partd.h - library-wide constants: version strings and error codes.
 *
 * The lib/ error convention: every lib/ function that can fail returns
 * PARTD_OK (0) or one of the negative PARTD_E* codes below, and, where the
 * caller needs the reason, fills a partd_problem (problem.h) with an RFC 9457
 * problem document. The exceptions, each stated in its header:
 *   - constructors and renderers returning a pointer (partd_plan_alloc,
 *     partd_result_to_json, partd_problem_to_json, ...) return NULL when,
 *     and only when, memory runs out (PARTD_ENOMEM);
 *   - partd_strtab_intern returns PARTD_STR_NONE when memory runs out;
 *   - predicates (partd_problem_full, partd__sac_fits, ...) return 1 or 0 and
 *     cannot fail.
 * Every lib/ header says in its opening comment how its errors come back.
 */
#ifndef PARTD_H
#define PARTD_H

#define PARTD_VERSION "0.1.0"
/* Bumped whenever a planner's output for the same request may change; part of
 * every cache_key so that an upgrade never serves a stale plan. */
#define PARTD_PLANNER_VERSION "partd-planner/2"

enum partd_status {
    PARTD_OK = 0,
    PARTD_ENOMEM = -1,      /* allocation failed */
    PARTD_EMALFORMED = -2,  /* not JSON at all (HTTP 400) */
    PARTD_EINVALID = -3,    /* JSON, but violates the contract (HTTP 422, exit 2) */
    PARTD_EINFEASIBLE = -4, /* valid, but no plan exists (exit 3) */
    PARTD_ECANCELLED = -5,  /* the job's cancel flag was raised */
    PARTD_ETIMEOUT = -6,    /* the job's deadline passed */
    PARTD_EINTERNAL = -7,   /* a bug or a library failure; never the client's fault */
    PARTD_EIO = -8,         /* reading or writing a file or the store failed */
    PARTD_ETOOBIG = -9      /* input over a configured size limit (HTTP 413/422) */
};

/* Static English text for a status code, never NULL. */
const char *partd_strerror(int status);

#endif
