/* text.c - see text.h. */
#include "text.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>

#include "partd/partd.h"

static void sha256(const void *data, size_t len, unsigned char out[32])
{
    unsigned int outlen = 32;
    if (!EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL))
        memset(out, 0, 32);
}

int partd_text_secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    /* Hashing first makes the comparison length-independent; the length
     * check afterwards only guards against a (theoretical) collision. */
    unsigned char ha[32], hb[32];
    sha256(a, alen, ha);
    sha256(b, blen, hb);
    int same = CRYPTO_memcmp(ha, hb, 32) == 0;
    return same & (alen == blen);
}

int partd_text_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (s == NULL || *s == '\0')
        return PARTD_EINVALID;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return PARTD_EINVALID;
        unsigned d = (unsigned)(*p - '0');
        if (v > (max - d) / 10)
            return PARTD_EINVALID;
        v = v * 10 + d;
    }
    *out = v;
    return PARTD_OK;
}
