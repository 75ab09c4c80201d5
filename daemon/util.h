/*
 * util.h - small helpers shared by the daemon's units: job ids, wall-clock
 * times in RFC 3339, constant-time secret comparison, strict number parsing,
 * and a chained string-keyed hash map.
 *
 * Nothing here keeps global state. Functions that can fail return PARTD_OK
 * or a negative PARTD_E* code (partd.h).
 */
#ifndef PARTD_DAEMON_UTIL_H
#define PARTD_DAEMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_ID_LEN 32 /* 128 bits as lowercase hex */

/* Fills out with 32 random hex digits + NUL from getrandom(2).
 * PARTD_OK or PARTD_EIO when the kernel refuses. */
int partd_id_new(char out[PARTD_ID_LEN + 1]);

/* 1 when s is exactly 32 lowercase hex digits. */
int partd_id_valid(const char *s);

/* Reads a whole file ("-" = standard input) into a new malloc'd buffer,
 * NUL-terminated after its *len bytes (caller frees). PARTD_OK; PARTD_EIO
 * when it cannot be opened or read, PARTD_ETOOBIG past max bytes,
 * PARTD_ENOMEM; errno says why in every case (EFBIG past max). */
int partd_read_file(const char *path, size_t max, char **buf, size_t *len);

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t partd_now_ms(void);

/* "2026-01-02T03:04:05.678Z" into out (at least 32 bytes). */
void partd_rfc3339(int64_t epoch_ms, char out[32]);

/* Compares two secrets in time independent of where they differ and of
 * their lengths (both are hashed first). 1 when equal. */
int partd_secret_equal(const char *a, size_t alen, const char *b, size_t blen);

/* Parses a decimal unsigned integer with no sign, no spaces, no junk and
 * no overflow past max. PARTD_OK or PARTD_EINVALID. */
int partd_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* The file system holding path: *avail bytes an unprivileged writer may
 * still use, *read_only 1 when it is mounted read-only (also after the
 * kernel remounted it so on an error). PARTD_OK or PARTD_EIO. */
int partd_fs_space(const char *path, uint64_t *avail, int *read_only);

/* A chained hash map from NUL-terminated string keys to pointers. The map
 * does not own keys or values; the caller keeps keys alive while mapped. */
typedef struct partd_map_entry {
    const char *key;
    void *value;
    struct partd_map_entry *next;
} partd_map_entry;

typedef struct partd_map {
    partd_map_entry **buckets;
    size_t n_buckets; /* power of two */
    size_t count;
} partd_map;

void partd_map_init(partd_map *m);
void partd_map_free(partd_map *m);
void *partd_map_get(const partd_map *m, const char *key);
/* Inserts or replaces. PARTD_OK or PARTD_ENOMEM. */
int partd_map_put(partd_map *m, const char *key, void *value);
/* Removes and returns the value, NULL when absent. */
void *partd_map_remove(partd_map *m, const char *key);

#endif
