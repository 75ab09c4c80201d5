/*
 * map.h - a chained hash map from NUL-terminated string keys to pointers
 * (job ids, cache keys), hashed with a key of its own that no client can
 * know, so no set of keys a client chooses lands in one bucket.
 *
 * The map does not own keys or values; the caller keeps keys alive while
 * they are mapped. partd_map_put returns PARTD_OK or PARTD_ENOMEM
 * (partd.h); the rest cannot fail.
 */
#ifndef PARTD_DAEMON_MAP_H
#define PARTD_DAEMON_MAP_H

#include <stddef.h>

typedef struct partd_map_entry {
    const char *key;
    void *value;
    struct partd_map_entry *next;
} partd_map_entry;

typedef struct partd_map {
    partd_map_entry **buckets;
    size_t n_buckets; /* power of two */
    size_t count;
    unsigned char key[16];     /* SipHash key, drawn by partd_map_init */
} partd_map;

/* An empty map with a key of its own. */
void partd_map_init(partd_map *m);
void partd_map_free(partd_map *m);
void *partd_map_get(const partd_map *m, const char *key);
/* Inserts or replaces. PARTD_OK or PARTD_ENOMEM. */
int partd_map_put(partd_map *m, const char *key, void *value);
/* Removes and returns the value, NULL when absent. */
void *partd_map_remove(partd_map *m, const char *key);

#endif
