/*
 * cancel.h - cooperative cancellation and deadlines for planners.
 *
 * A job owns one partd_cancel. Another thread raises `cancelled`; the planner
 * calls partd_cancel_check() at least every few milliseconds of work (every
 * few thousand nodes, every solver callback) and unwinds with the code it
 * returns. A NULL pointer means "never cancelled".
 *
 * Errors: partd_cancel_check() is the source of PARTD_ECANCELLED and
 * PARTD_ETIMEOUT (partd.h) for every planner; nothing here allocates.
 */
#ifndef PARTD_CANCEL_H
#define PARTD_CANCEL_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct partd_cancel {
    atomic_int cancelled;      /* set to 1 to cancel */
    int64_t deadline_ns;       /* CLOCK_MONOTONIC ns, 0 = none */
} partd_cancel;

void partd_cancel_init(partd_cancel *c, int64_t timeout_ms /* 0 = none */);

/* PARTD_OK, PARTD_ECANCELLED or PARTD_ETIMEOUT. */
int partd_cancel_check(const partd_cancel *c);

#endif
