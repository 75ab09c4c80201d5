/*
 * sha256.h - SHA-256 through OpenSSL's EVP interface (libcrypto), as the
 * library's content addresses (hash.h) use it: a context fed in pieces, and
 * its failures kept until the end.
 *
 * OpenSSL 3 sets up its global state lazily, on first use, and an allocation
 * failure during that set-up crashes it. So the set-up is done when the
 * library is loaded, before main (sha256.c); after that, every allocation
 * failure of a digest comes back as an error.
 *
 * Ownership: the context is the caller's; partd_sha256_final() releases
 * what init allocated, and partd_sha256_abort() does on an early exit.
 * Errors: init and final return PARTD_OK, or PARTD_ENOMEM when OpenSSL
 * could not allocate or failed (it reports no finer reason); a failed update
 * is remembered and returned by final.
 */
#ifndef PARTD_SHA256_H
#define PARTD_SHA256_H

#include <stddef.h>

#define PARTD_SHA256_BYTES 32

struct evp_md_ctx_st;

typedef struct partd_sha256 {
    struct evp_md_ctx_st *ctx;
    int failed;
} partd_sha256;

int partd_sha256_init(partd_sha256 *c);
void partd_sha256_update(partd_sha256 *c, const void *data, size_t len);
int partd_sha256_final(partd_sha256 *c, unsigned char out[PARTD_SHA256_BYTES]);
void partd_sha256_abort(partd_sha256 *c);

#endif
