/*
 * strtab.h - interned strings.
 *
 * Names (nodes, devices, modules, parameters) are stored once in a string
 * table and referred to by a 32-bit id everywhere else, which keeps the model
 * compact and makes name comparison an integer comparison.
 *
 * Ownership: the table owns its bytes; ids stay valid until partd_strtab_free.
 * Errors: partd_strtab_intern returns PARTD_STR_NONE on allocation failure.
 */
#ifndef PARTD_STRTAB_H
#define PARTD_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_STR_NONE UINT32_MAX

typedef struct partd_strtab {
    char *bytes;        /* all strings, each NUL-terminated */
    size_t used, cap;
    uint32_t *offset;   /* id -> offset in bytes */
    uint32_t *length;   /* id -> length without the NUL */
    uint32_t count, offset_cap;
    uint32_t *slots;    /* open-addressing hash: id + 1, 0 = empty */
    uint32_t n_slots;   /* power of two */
} partd_strtab;

void partd_strtab_init(partd_strtab *t);
void partd_strtab_free(partd_strtab *t);

/* Returns the id of the string (len bytes, may contain no NUL), adding it if
 * new; PARTD_STR_NONE when out of memory. */
uint32_t partd_strtab_intern(partd_strtab *t, const char *s, size_t len);

/* Returns the id or PARTD_STR_NONE when the string was never interned. */
uint32_t partd_strtab_find(const partd_strtab *t, const char *s, size_t len);

static inline const char *partd_str(const partd_strtab *t, uint32_t id)
{
    return t->bytes + t->offset[id];
}

static inline uint32_t partd_strlen(const partd_strtab *t, uint32_t id)
{
    return t->length[id];
}

#endif
