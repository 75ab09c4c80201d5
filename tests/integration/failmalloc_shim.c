/*
 * failmalloc_shim.c - test-only LD_PRELOAD library for `partd serve`: fails
 * chosen allocations of a running daemon (test_faults_memory.py builds it
 * with `cc -shared -fPIC`; it is not part of any partd binary).
 *
 * Armed by SIGUSR2: the handler reads "N K" from the file named by
 * PARTD_FAILMALLOC_FILE, and from then on the Nth call to malloc, calloc
 * or realloc (counted over every thread) and the K-1 after it return NULL
 * with errno ENOMEM; every other call is glibc's. "0 0" disarms.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static atomic_long calls;      /* allocations since armed */
static atomic_long first_fail; /* 0: disarmed */
static atomic_long n_fail;
static atomic_long failed;     /* allocations failed so far, ever */
static char control[512];      /* PARTD_FAILMALLOC_FILE, read at load */

static int should_fail(void)
{
    long first = atomic_load(&first_fail);
    if (!first)
        return 0;
    long n = atomic_fetch_add(&calls, 1) + 1;
    if (n < first || n >= first + atomic_load(&n_fail))
        return 0;
    atomic_fetch_add(&failed, 1);
    errno = ENOMEM;
    return 1;
}

void *malloc(size_t size)
{
    return should_fail() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
    return should_fail() ? NULL : __libc_realloc(p, size);
}

static long parse(const char **s)
{
    long v = 0;
    while (**s == ' ')
        (*s)++;
    while (**s >= '0' && **s <= '9')
        v = v * 10 + (*(*s)++ - '0');
    return v;
}

/* Async-signal-safe: open, read and close only. */
static void on_arm(int sig)
{
    (void)sig;
    int saved = errno;
    char buf[64] = "";
    int fd = control[0] ? open(control, O_RDONLY) : -1;
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        buf[n > 0 ? n : 0] = '\0';
        close(fd);
    }
    const char *p = buf;
    long first = parse(&p), count = parse(&p);
    atomic_store(&first_fail, 0);
    atomic_store(&calls, 0);
    atomic_store(&n_fail, count);
    atomic_store(&first_fail, first);
    errno = saved;
}

__attribute__((constructor)) static void install(void)
{
    const char *path = getenv("PARTD_FAILMALLOC_FILE");
    if (path && strlen(path) < sizeof control)
        strcpy(control, path);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_arm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
}
