/*
 * solver_child.h - runs a piece of work in a forked child process, so that
 * its crash, abort, runaway allocation or hang costs only the caller's job,
 * never the process (the daemon) that asked for it.
 *
 * The caller prepares everything the work needs in memory; the child inherits
 * it (copy-on-write), runs `fn` under resource limits and writes its answer
 * to a pipe, then _exit()s. The parent reads the answer while it looks at the
 * cancel flag and the deadlines every few milliseconds, kills the child
 * (SIGKILL) when the job is cancelled or out of time, and always reaps it.
 *
 * In the child: signal dispositions are reset to their defaults and every
 * signal is unblocked, descriptors other than 0-2 and the answer pipe are
 * closed, the child dies with the thread that forked it (PR_SET_PDEATHSIG),
 * no core file is written, and RLIMIT_CPU and RLIMIT_AS bound it (RLIMIT_AS
 * as the address space the child had at the fork plus `memory_bytes`; it
 * cannot apply under AddressSanitizer, whose shadow memory needs terabytes of
 * address space: see partd__child_can_limit_memory()).
 *
 * Uses no globals; any number of threads may run children at once.
 *
 * When the process ignores SIGCHLD the kernel reaps the child and its exit
 * status is lost: then any answer counts as PARTD_OK and the caller must
 * validate it (a crash mid-answer leaves it short).
 *
 * Errors: PARTD_OK (the child exited 0 and its answer is in `answer`),
 * PARTD_ECANCELLED (the cancel flag), PARTD_ETIMEOUT (the cancel's deadline,
 * or the child still running after wall_s), PARTD_ENOMEM (no pipe or no
 * process could be made), PARTD_EINTERNAL (the child died by a signal, exited
 * non-zero, wrote more than answer_cap bytes, or hung three times). Every error but ENOMEM
 * leaves one sentence in `why` ("signal 6 (SIGABRT)").
 */
#ifndef PARTD_SOLVER_CHILD_H
#define PARTD_SOLVER_CHILD_H

#include <stddef.h>
#include <stdint.h>

#include "partd/cancel.h"

/* Runs in the child: writes the answer to fd (partd__child_write) and
 * returns the exit status, 0 on success. Must not return into the caller's
 * code paths in any other way (no longjmp out). */
typedef int (*partd_child_fn)(void *arg, int fd);

typedef struct partd_child_limits {
    double wall_s;              /* the child is killed after this (> 0) */
    double cpu_s;               /* RLIMIT_CPU, rounded up; 0: none */
    uint64_t memory_bytes;      /* RLIMIT_AS above the inherited size; 0: none */
    const partd_cancel *cancel; /* NULL: never cancelled, no deadline */
    double stall_s;             /* > 0: a child asleep without using CPU time
                                   this long is hung (a lock inherited held
                                   across fork()): killed and run again, up
                                   to 3 runs in all; 0: off (for work that
                                   may sleep) */
} partd_child_limits;

typedef struct partd_child_answer {
    void *data;                 /* caller's buffer */
    size_t cap;                 /* its size: a longer answer is an error */
    size_t len;                 /* bytes received */
    char why[128];              /* what went wrong, "" on PARTD_OK */
} partd_child_answer;

int partd__child_run(partd_child_fn fn, void *arg, const partd_child_limits *lim,
                    partd_child_answer *answer);

/* For fn: writes all of buf; 0, or -1 when the parent is gone. */
int partd__child_write(int fd, const void *buf, size_t len);

/* 1 when memory_bytes is enforced in this build (not under ASan). */
int partd__child_can_limit_memory(void);

#endif
