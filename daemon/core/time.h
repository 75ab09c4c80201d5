/*
 * time.h - wall-clock time: milliseconds since the Unix epoch and their
 * RFC 3339 text, as job documents show them. (Durations and deadlines use
 * the monotonic clock, partd/clock.h.)
 *
 * Cannot fail.
 */
#ifndef PARTD_DAEMON_TIME_H
#define PARTD_DAEMON_TIME_H

#include <stdint.h>

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t partd_time_now_ms(void);

/* "2026-01-02T03:04:05.678Z" into out (at least 32 bytes). */
void partd_time_rfc3339(int64_t epoch_ms, char out[32]);

#endif
