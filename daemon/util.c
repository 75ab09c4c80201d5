/*
 * util.c - ids, times, secret comparison, number parsing, hash map.
 * See util.h.
 */
#include "util.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>

#include "partd.h"

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

int partd_read_file(const char *path, size_t max, char **buf, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return PARTD_EIO;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    int rc = b ? PARTD_OK : PARTD_ENOMEM;
    while (rc == PARTD_OK) {
        if (n + 1 == cap) { /* always room for the NUL */
            char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                rc = PARTD_ENOMEM;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n - 1, f);
        n += got;
        if (n > max)
            rc = PARTD_ETOOBIG;
        else if (got == 0 && ferror(f))
            rc = PARTD_EIO;
        else if (got == 0)
            break;
    }
    int saved = rc == PARTD_ETOOBIG ? EFBIG : rc == PARTD_ENOMEM ? ENOMEM : errno;
    if (f != stdin)
        fclose(f);
    if (rc != PARTD_OK) {
        free(b);
        errno = saved;
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return PARTD_OK;
}

int64_t partd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void partd_rfc3339(int64_t epoch_ms, char out[32])
{
    time_t secs = (time_t)(epoch_ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(epoch_ms % 1000));
}

static void sha256(const void *data, size_t len, unsigned char out[32])
{
    unsigned int outlen = 32;
    if (!EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL))
        memset(out, 0, 32);
}

int partd_secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
    /* Hashing first makes the comparison length-independent; the length
     * check afterwards only guards against a (theoretical) collision. */
    unsigned char ha[32], hb[32];
    sha256(a, alen, ha);
    sha256(b, blen, hb);
    int same = CRYPTO_memcmp(ha, hb, 32) == 0;
    return same & (alen == blen);
}

int partd_parse_u64(const char *s, uint64_t max, uint64_t *out)
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

/* ---- hash map ---------------------------------------------------------- */

static size_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return (size_t)h;
}

void partd_map_init(partd_map *m)
{
    memset(m, 0, sizeof *m);
}

void partd_map_free(partd_map *m)
{
    for (size_t i = 0; i < m->n_buckets; i++) {
        partd_map_entry *e = m->buckets[i];
        while (e) {
            partd_map_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    memset(m, 0, sizeof *m);
}

static partd_map_entry **find_slot(const partd_map *m, const char *key)
{
    if (m->n_buckets == 0)
        return NULL;
    partd_map_entry **slot = &m->buckets[hash_key(key) & (m->n_buckets - 1)];
    while (*slot && strcmp((*slot)->key, key) != 0)
        slot = &(*slot)->next;
    return slot;
}

void *partd_map_get(const partd_map *m, const char *key)
{
    partd_map_entry **slot = find_slot(m, key);
    return slot && *slot ? (*slot)->value : NULL;
}

static int grow(partd_map *m)
{
    size_t n = m->n_buckets ? m->n_buckets * 2 : 64;
    partd_map_entry **b = calloc(n, sizeof *b);
    if (!b)
        return PARTD_ENOMEM;
    for (size_t i = 0; i < m->n_buckets; i++) {
        partd_map_entry *e = m->buckets[i];
        while (e) {
            partd_map_entry *next = e->next;
            size_t j = hash_key(e->key) & (n - 1);
            e->next = b[j];
            b[j] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = n;
    return PARTD_OK;
}

int partd_map_put(partd_map *m, const char *key, void *value)
{
    partd_map_entry **slot = find_slot(m, key);
    if (slot && *slot) {
        (*slot)->key = key;
        (*slot)->value = value;
        return PARTD_OK;
    }
    if (m->count + 1 > m->n_buckets) {
        if (grow(m) != PARTD_OK)
            return PARTD_ENOMEM;
        slot = find_slot(m, key);
    }
    partd_map_entry *e = malloc(sizeof *e);
    if (!e)
        return PARTD_ENOMEM;
    e->key = key;
    e->value = value;
    e->next = NULL;
    *slot = e;
    m->count++;
    return PARTD_OK;
}

void *partd_map_remove(partd_map *m, const char *key)
{
    partd_map_entry **slot = find_slot(m, key);
    if (!slot || !*slot)
        return NULL;
    partd_map_entry *e = *slot;
    void *v = e->value;
    *slot = e->next;
    free(e);
    m->count--;
    return v;
}

int partd_fs_space(const char *path, uint64_t *avail, int *read_only)
{
    struct statvfs vfs;
    if (statvfs(path, &vfs) != 0)
        return PARTD_EIO;
    *avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    *read_only = (vfs.f_flag & ST_RDONLY) != 0;
    return PARTD_OK;
}
