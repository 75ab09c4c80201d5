/*
 * sha256.h - SHA-256 (FIPS 180-4), self-contained.
 *
 * The library's content addresses (hash.h) need nothing else from a crypto
 * library, and OpenSSL 3 sets up its global state lazily on first use: an
 * allocation failure during that set-up leaves it dereferencing a NULL lock,
 * which would turn an out-of-memory into a crash. This unit never allocates
 * and never fails.
 *
 * Ownership: the context is the caller's (on the stack or inside a struct).
 */
#ifndef PARTD_SHA256_H
#define PARTD_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_SHA256_BYTES 32

typedef struct partd_sha256 {
    uint32_t h[8];
    uint64_t length;        /* bytes hashed so far */
    unsigned char block[64];
    size_t used;            /* bytes in block */
} partd_sha256;

void partd_sha256_init(partd_sha256 *c);
void partd_sha256_update(partd_sha256 *c, const void *data, size_t len);
void partd_sha256_final(partd_sha256 *c, unsigned char out[PARTD_SHA256_BYTES]);

#endif
