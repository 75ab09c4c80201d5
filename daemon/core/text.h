/*
 * text.h - text that comes from outside: secrets compared in constant time,
 * strict decimal numbers.
 *
 * Nothing here allocates or keeps state. partd_text_parse_u64 returns
 * PARTD_OK or PARTD_EINVALID (partd.h).
 */
#ifndef PARTD_DAEMON_TEXT_H
#define PARTD_DAEMON_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Compares two secrets in time independent of where they differ and of
 * their lengths (both are hashed first). 1 when equal. */
int partd_text_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

/* Parses a decimal unsigned integer with no sign, no spaces, no junk and
 * no overflow past max. PARTD_OK or PARTD_EINVALID. */
int partd_text_parse_u64(const char *s, uint64_t max, uint64_t *out);

#endif
