/* json_guard.c - sticky jansson allocation failures; see json_guard.h. */
#include "json_guard.h"

#include <jansson.h>
#include <stdlib.h>

static _Thread_local int guarded; /* inside a section on this thread */
static _Thread_local int failed;  /* an allocation failed in the section */

static void *guarded_malloc(size_t n)
{
    if (guarded && failed)
        return NULL;
    void *p = malloc(n);
    if (!p && guarded)
        failed = 1;
    return p;
}

__attribute__((constructor)) static void install(void)
{
    json_set_alloc_funcs(guarded_malloc, free);
}

void partd_json_guard_begin(void)
{
    guarded = 1;
    failed = 0;
}

int partd_json_guard_end(void)
{
    guarded = 0;
    return failed;
}
