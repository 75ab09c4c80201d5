/* time.c - see time.h. */
#include "time.h"

#include <stdio.h>
#include <time.h>

#include "partd/partd.h"

int64_t partd_time_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void partd_time_rfc3339(int64_t epoch_ms, char out[32])
{
    time_t secs = (time_t)(epoch_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(epoch_ms % 1000));
}
