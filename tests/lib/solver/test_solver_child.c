/*
 * test_solver_child.c - work in a child process (lib/solver_child.c).
 *
 * - An answer comes back byte for byte; an answer longer than the buffer,
 *   a non-zero exit, an abort and a segmentation fault are PARTD_EINTERNAL
 *   with a sentence saying so, and this process carries on.
 * - A cancel raised while the child runs kills it: the child here raises the
 *   flag itself (in memory shared with the parent) and then waits forever,
 *   so the call can only return because the parent killed it.
 * - A child that never ends is killed at its wall-clock limit.
 * - The memory limit holds (a child cannot allocate past it), except under
 *   ASan where it cannot apply.
 * - A child asleep without using CPU time (a lock inherited held across
 *   fork) is killed and run again, at most three runs; a computing child is
 *   never taken for hung.
 * - Many threads running children at once each get their own answer (the
 *   pipes of one child are not held open by another's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "partd/cancel.h"
#include "partd/clock.h"
#include "partd/partd.h"
#include "solver/solver_child.h"

static int answer_words(void *arg, int fd)
{
    const char *text = arg;
    return partd__child_write(fd, text, strlen(text)) == 0 ? 0 : 1;
}

static int exit_three(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    return 3;
}

static int die_by_abort(void *arg, int fd)
{
    (void)arg;
    partd__child_write(fd, "half", 4);
    abort();
}

static int die_by_signal(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    raise(SIGKILL);
    return 0;
}

static int wait_forever(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    for (;;)
        pause();
    return 0; /* never reached */
}

/* Raises the parent's cancel flag (shared memory), then never ends. */
static int cancel_then_wait(void *arg, int fd)
{
    partd_cancel *shared = arg;
    atomic_store(&shared->cancelled, 1);
    return wait_forever(NULL, fd);
}

/* Allocates and touches 256 MiB; exit 0 when that worked, 2 when refused. */
static int allocate_a_lot(void *arg, int fd)
{
    (void)arg;
    size_t n = (size_t)256 << 20;
    char *p = malloc(n);
    if (!p)
        return partd__child_write(fd, "refused", 7) == 0 ? 2 : 1;
    memset(p, 1, n);
    return partd__child_write(fd, "granted", 7) == 0 ? 0 : 1;
}

static int run(partd_child_fn fn, void *arg, double wall_s, uint64_t memory,
               const partd_cancel *cancel, char *buf, size_t cap, partd_child_answer *a)
{
    partd_child_limits lim = { wall_s, 0, memory, cancel, 0 };
    *a = (partd_child_answer){ buf, cap, 0, "" };
    return partd__child_run(fn, arg, &lim, a);
}

static void test_answer_comes_back(void **state)
{
    (void)state;
    char buf[64];
    partd_child_answer a;
    assert_int_equal(run(answer_words, "forty-two", 3600, 0, NULL, buf, sizeof buf, &a),
                     PARTD_OK);
    assert_int_equal(a.len, 9);
    assert_memory_equal(buf, "forty-two", 9);
    assert_string_equal(a.why, "");
    /* exactly the buffer's size is fine, one byte more is not */
    assert_int_equal(run(answer_words, "forty-two", 3600, 0, NULL, buf, 9, &a), PARTD_OK);
    assert_int_equal(run(answer_words, "forty-two", 3600, 0, NULL, buf, 8, &a),
                     PARTD_EINTERNAL);
    assert_non_null(strstr(a.why, "longer"));
}

static void test_failures_cost_only_the_child(void **state)
{
    (void)state;
    char buf[64];
    partd_child_answer a;
    assert_int_equal(run(exit_three, NULL, 3600, 0, NULL, buf, sizeof buf, &a),
                     PARTD_EINTERNAL);
    assert_string_equal(a.why, "exit status 3");
    assert_int_equal(run(die_by_abort, NULL, 3600, 0, NULL, buf, sizeof buf, &a),
                     PARTD_EINTERNAL);
    assert_string_equal(a.why, "signal 6 (SIGABRT)");
    assert_int_equal(run(die_by_signal, NULL, 3600, 0, NULL, buf, sizeof buf, &a),
                     PARTD_EINTERNAL);
    assert_string_equal(a.why, "signal 9 (SIGKILL)");
    /* and this process goes on running children */
    assert_int_equal(run(answer_words, "still here", 3600, 0, NULL, buf, sizeof buf, &a),
                     PARTD_OK);
}

static void test_cancel_kills_a_running_child(void **state)
{
    (void)state;
    partd_cancel *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(shared != MAP_FAILED);
    partd_cancel_init(shared, 0);
    char buf[16];
    partd_child_answer a;
    /* An hour's limit: only the kill on cancel can end this call. */
    assert_int_equal(run(cancel_then_wait, shared, 3600, 0, shared, buf, sizeof buf, &a),
                     PARTD_ECANCELLED);
    assert_string_equal(a.why, "cancelled");
    munmap(shared, sizeof *shared);
}

static void test_cancel_before_the_start(void **state)
{
    (void)state;
    partd_cancel c;
    partd_cancel_init(&c, 0);
    atomic_store(&c.cancelled, 1);
    char buf[16];
    partd_child_answer a;
    assert_int_equal(run(wait_forever, NULL, 3600, 0, &c, buf, sizeof buf, &a),
                     PARTD_ECANCELLED);
}

static void test_wall_limit_kills_a_hung_child(void **state)
{
    (void)state;
    char buf[16];
    partd_child_answer a;
    assert_int_equal(run(wait_forever, NULL, 0.05, 0, NULL, buf, sizeof buf, &a),
                     PARTD_ETIMEOUT);
    assert_non_null(strstr(a.why, "time limit"));
}

static void test_memory_limit(void **state)
{
    (void)state;
    if (!partd__child_can_limit_memory())
        skip(); /* ASan reserves terabytes of address space: no RLIMIT_AS */
    char buf[16];
    partd_child_answer a;
    assert_int_equal(run(allocate_a_lot, NULL, 3600, (uint64_t)64 << 20, NULL, buf,
                         sizeof buf, &a),
                     PARTD_EINTERNAL);
    assert_string_equal(a.why, "exit status 2");
    assert_int_equal(run(allocate_a_lot, NULL, 3600, (uint64_t)1 << 30, NULL, buf,
                         sizeof buf, &a),
                     PARTD_OK);
    assert_memory_equal(buf, "granted", 7);
}

/* A process that ignores SIGCHLD (inherited from whoever started it) gets
 * no exit status: the answer stands on its own, and no answer is a crash. */
static void test_sigchld_ignored(void **state)
{
    (void)state;
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    assert_int_equal(sigaction(SIGCHLD, &ign, &old), 0);
    char buf[16];
    partd_child_answer a;
    int ok = run(answer_words, "seven", 3600, 0, NULL, buf, sizeof buf, &a);
    int ok_len = (int)a.len;
    int crash = run(die_by_signal, NULL, 3600, 0, NULL, buf, sizeof buf, &a);
    sigaction(SIGCHLD, &old, NULL);
    assert_int_equal(ok, PARTD_OK);
    assert_int_equal(ok_len, 5);
    assert_int_equal(crash, PARTD_EINTERNAL);
    assert_non_null(strstr(a.why, "without an answer"));
}

/* A process started with stdin and stdout closed gets its answer pipe as
 * descriptors 0 and 1; the child moves it before putting /dev/null there. */
static void test_standard_descriptors_closed(void **state)
{
    (void)state;
    int in = dup(0), out = dup(1);
    assert_true(in > 2 && out > 2);
    close(0);
    close(1);
    char buf[16];
    partd_child_answer a;
    int rc = run(answer_words, "moved", 3600, 0, NULL, buf, sizeof buf, &a);
    dup2(in, 0);
    dup2(out, 1);
    close(in);
    close(out);
    assert_int_equal(rc, PARTD_OK);
    assert_int_equal(a.len, 5);
    assert_memory_equal(buf, "moved", 5);
}

/* ---- hangs: a child asleep without using CPU time ----------------------- */

typedef struct attempts {
    atomic_int runs;
    int hang_runs; /* the first hang_runs runs hang */
} attempts;

static attempts *shared_attempts(int hang_runs)
{
    attempts *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(a != MAP_FAILED);
    atomic_init(&a->runs, 0);
    a->hang_runs = hang_runs;
    return a;
}

/* Hangs (as on a lock inherited held) in its first hang_runs runs. */
static int hang_at_first(void *arg, int fd)
{
    attempts *a = arg;
    if (atomic_fetch_add(&a->runs, 1) < a->hang_runs)
        return wait_forever(NULL, fd);
    return partd__child_write(fd, "late", 4) == 0 ? 0 : 1;
}

/* Computes for a while (state R, CPU time growing), then answers. */
static int compute_then_answer(void *arg, int fd)
{
    attempts *a = arg;
    atomic_fetch_add(&a->runs, 1);
    int64_t until = partd_clock_ns() + 600000000LL;
    volatile uint64_t x = 1;
    while (partd_clock_ns() < until)
        x = x * 6364136223846793005ULL + 1;
    return partd__child_write(fd, "done", 4) == 0 ? 0 : 1;
}

static int run_stall(partd_child_fn fn, attempts *at, char *buf, size_t cap,
                     partd_child_answer *a)
{
    partd_child_limits lim = { 3600, 0, 0, NULL, 0.2 };
    *a = (partd_child_answer){ buf, cap, 0, "" };
    return partd__child_run(fn, at, &lim, a);
}

static void test_hung_child_is_run_again(void **state)
{
    (void)state;
    char buf[16];
    partd_child_answer a;
    attempts *at = shared_attempts(2);
    assert_int_equal(run_stall(hang_at_first, at, buf, sizeof buf, &a), PARTD_OK);
    assert_int_equal(atomic_load(&at->runs), 3);
    assert_memory_equal(buf, "late", 4);
    munmap(at, sizeof *at);

    at = shared_attempts(1000); /* hangs every time: an error after 3 runs */
    assert_int_equal(run_stall(hang_at_first, at, buf, sizeof buf, &a), PARTD_EINTERNAL);
    assert_int_equal(atomic_load(&at->runs), 3);
    assert_non_null(strstr(a.why, "hung 3 times"));
    munmap(at, sizeof *at);
}

/* Computing is not hanging, however long it takes. */
static void test_busy_child_is_not_hung(void **state)
{
    (void)state;
    char buf[16];
    partd_child_answer a;
    attempts *at = shared_attempts(0);
    assert_int_equal(run_stall(compute_then_answer, at, buf, sizeof buf, &a), PARTD_OK);
    assert_int_equal(atomic_load(&at->runs), 1);
    munmap(at, sizeof *at);
}

typedef struct runner {
    char text[32];
    int rc, same;
} runner;

static void *run_many(void *arg)
{
    runner *r = arg;
    r->same = 1;
    for (int k = 0; k < 20; k++) {
        char buf[32];
        partd_child_answer a;
        r->rc = run(answer_words, r->text, 3600, 0, NULL, buf, sizeof buf, &a);
        if (r->rc != PARTD_OK)
            return NULL;
        r->same &= a.len == strlen(r->text) && memcmp(buf, r->text, a.len) == 0;
    }
    return NULL;
}

static void test_concurrent_children(void **state)
{
    (void)state;
    enum { N = 6 };
    pthread_t th[N];
    runner r[N];
    for (int i = 0; i < N; i++) {
        snprintf(r[i].text, sizeof r[i].text, "answer of thread %d", i);
        assert_int_equal(pthread_create(&th[i], NULL, run_many, &r[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].rc, PARTD_OK);
        assert_true(r[i].same);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer_comes_back),
        cmocka_unit_test(test_failures_cost_only_the_child),
        cmocka_unit_test(test_cancel_kills_a_running_child),
        cmocka_unit_test(test_cancel_before_the_start),
        cmocka_unit_test(test_wall_limit_kills_a_hung_child),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_sigchld_ignored),
        cmocka_unit_test(test_standard_descriptors_closed),
        cmocka_unit_test(test_hung_child_is_run_again),
        cmocka_unit_test(test_busy_child_is_not_hung),
        cmocka_unit_test(test_concurrent_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
