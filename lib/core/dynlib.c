/*
 * dynlib.c - a shared library loaded on first use (dynlib.h).
 *
 * RTLD_NOW: a missing function shows at the load, where the error can name
 * it, not at its first call. RTLD_LOCAL: the library's symbols serve only
 * the table, so nothing else resolves to them by accident. The library is
 * never closed: its functions may be called until the process ends.
 */
#include "partd/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "partd/partd.h"

_Static_assert(sizeof(void *) == sizeof(partd_dynlib_fn),
               "dlsym's object pointers hold function pointers (POSIX)");

static int load(partd_dynlib *lib)
{
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(lib->err, sizeof lib->err, "cannot load %s: %s", lib->soname,
                 why ? why : "not found");
        return PARTD_EINTERNAL;
    }
    for (size_t i = 0; i < lib->n; i++) {
        void *p = dlsym(h, lib->names[i]);
        if (!p) {
            snprintf(lib->err, sizeof lib->err, "%s has no function %s", lib->soname,
                     lib->names[i]);
            return PARTD_EINTERNAL;
        }
        memcpy(&lib->fns[i], &p, sizeof p);
    }
    return PARTD_OK;
}

int partd_dynlib_load(partd_dynlib *lib)
{
    pthread_mutex_lock(&lib->lock);
    if (!lib->state)
        lib->state = load(lib) + 1;
    int rc = lib->state - 1;
    pthread_mutex_unlock(&lib->lock);
    return rc;
}
