/* id.c - see id.h. */
#include "id.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "partd/partd.h"

int partd_id_new(char out[PARTD_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[PARTD_ID_LEN / 2];
    size_t got = 0;
    while (got < sizeof raw) {
        ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return PARTD_EIO;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[PARTD_ID_LEN] = '\0';
    return PARTD_OK;
}

int partd_id_valid(const char *s)
{
    size_t i;
    for (i = 0; s[i] != '\0'; i++) {
        if (i >= PARTD_ID_LEN)
            return 0;
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
    }
    return i == PARTD_ID_LEN;
}
