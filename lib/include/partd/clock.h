/*
 * clock.h - the monotonic clock that deadlines (cancel.h), durations in
 * logs and metrics, and timeouts are measured with.
 *
 * Cannot fail: CLOCK_MONOTONIC is always there on the systems partd runs on.
 */
#ifndef PARTD_CLOCK_H
#define PARTD_CLOCK_H

#include <stdint.h>

/* Nanoseconds since an arbitrary fixed point; never goes back. */
int64_t partd_clock_ns(void);

#endif
