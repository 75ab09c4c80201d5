/* sha256.c - SHA-256 on OpenSSL's EVP interface; see sha256.h. */
#include "partd/sha256.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "partd/partd.h"

/* OpenSSL's lazy global set-up, done once while the library loads: one
 * digest of nothing initialises the library, its default provider and the
 * SHA-256 method, so that later digests only allocate their own contexts. */
__attribute__((constructor)) static void sha256_setup(void)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL);
    EVP_Digest("", 0, md, &n, EVP_sha256(), NULL);
}

int partd_sha256_init(partd_sha256 *c)
{
    c->failed = 0;
    c->ctx = EVP_MD_CTX_new();
    if (!c->ctx || !EVP_DigestInit_ex(c->ctx, EVP_sha256(), NULL)) {
        partd_sha256_abort(c);
        return PARTD_ENOMEM;
    }
    return PARTD_OK;
}

void partd_sha256_update(partd_sha256 *c, const void *data, size_t len)
{
    if (!c->failed && (!c->ctx || !EVP_DigestUpdate(c->ctx, data, len)))
        c->failed = 1;
}

int partd_sha256_final(partd_sha256 *c, unsigned char out[PARTD_SHA256_BYTES])
{
    unsigned n = 0;
    unsigned char md[EVP_MAX_MD_SIZE];
    int ok = !c->failed && c->ctx && EVP_DigestFinal_ex(c->ctx, md, &n) &&
             n == PARTD_SHA256_BYTES;
    if (ok)
        for (unsigned i = 0; i < n; i++)
            out[i] = md[i];
    partd_sha256_abort(c);
    return ok ? PARTD_OK : PARTD_ENOMEM;
}

void partd_sha256_abort(partd_sha256 *c)
{
    EVP_MD_CTX_free(c->ctx);
    c->ctx = NULL;
}
