/*
 * failmalloc.c - an LD_PRELOAD shim that makes one allocation fail.
 *
 * Built into build/tests/libfailmalloc.so; used by
 * tests/cli/test_alloc_failure.py to check that every allocation failure in
 * a `partd plan` run comes back as an error (exit 1 with a message), never a
 * crash, a wrong exit code or a partial result.
 *
 * Counts the calls of malloc, calloc, realloc, posix_memalign,
 * aligned_alloc, memalign and valloc made once main() has started (glibc's
 * strdup, jansson and C++'s operator new all come through these), and
 * answers NULL (errno ENOMEM) to the one numbered PARTD_FAIL_AT (1-based;
 * unset or 0: none fails). Allocations before main (the loader, libraries'
 * constructors) are never counted: a failure there is not partd's to handle.
 *
 * Environment:
 *   PARTD_FAIL_AT=N          fail the Nth counted allocation
 *   PARTD_FAIL_COUNT_FILE=P  at exit, write the number of counted
 *                            allocations (decimal) to P
 *   PARTD_FAIL_TRACE=1       print a backtrace to stderr at the failure
 *
 * The real allocator is glibc's __libc_* entry points, so no dlsym is needed
 * inside malloc itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_int counting;           /* 1 once main has started */
static atomic_ulong calls;
static unsigned long fail_at;
static int trace;

/* 1 when this allocation must fail. */
static int should_fail(void)
{
    if (!atomic_load_explicit(&counting, memory_order_relaxed))
        return 0;
    unsigned long n = atomic_fetch_add(&calls, 1) + 1;
    if (fail_at == 0 || n != fail_at)
        return 0;
    if (trace) {
        void *frames[32];
        static const char msg[] = "failmalloc: failing this allocation\n";
        write(2, msg, sizeof msg - 1);
        backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    }
    errno = ENOMEM;
    return 1;
}

void *malloc(size_t n)
{
    return should_fail() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __libc_realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    return should_fail() ? NULL : __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
    return should_fail() ? NULL : __libc_memalign(align, n);
}

void *valloc(size_t n)
{
    return should_fail() ? NULL : __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    if (should_fail())
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static void write_count(void)
{
    const char *path = getenv("PARTD_FAIL_COUNT_FILE");
    if (!path)
        return;
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%lu\n", atomic_load(&calls));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    if (write(fd, buf, (size_t)len) != len)
        (void)0; /* the test sees a short file */
    close(fd);
}

/* Counting starts at main: __libc_start_main is wrapped so that the
 * program's main runs through start(). */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int start(int argc, char **argv, char **envp)
{
    const char *at = getenv("PARTD_FAIL_AT");
    fail_at = at ? strtoul(at, NULL, 10) : 0;
    trace = getenv("PARTD_FAIL_TRACE") != NULL;
    if (trace) {
        void *frames[1];
        backtrace(frames, 1); /* loads libgcc now, not at the failure */
    }
    atexit(write_count);
    atomic_store(&counting, 1);
    return real_main(argc, argv, envp);
}

typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                             void (*)(void), void *);

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    start_main_fn next = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    real_main = main;
    return next(start, argc, argv, init, fini, rtld_fini, stack_end);
}
