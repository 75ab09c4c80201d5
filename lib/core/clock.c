/* clock.c - the monotonic clock; see clock.h. */
#include "partd/clock.h"

#include <time.h>

int64_t partd_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
