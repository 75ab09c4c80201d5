/*
 * solver_child.c - work in a child process under limits; see solver_child.h.
 *
 * fork() without exec: the child runs code of this process. After a fork in
 * a threaded process only async-signal-safe calls are guaranteed to work in
 * the child; glibc also makes malloc safe there (its fork resets the
 * allocator's locks), which is what the solver needs. Any other lock another
 * thread held at the fork (stdio, say) could hang the child: the parent's
 * wall-clock kill bounds that, so a hang costs the solve, never the process.
 * Under GCC 12's AddressSanitizer, which does not intercept fork(), ASan's
 * own allocator locks are among them (seen: a child waiting forever in
 * SizeClassAllocator64::GetFromAllocator when another thread was refilling
 * its cache at the fork). With stall_s set, such a child is recognised
 * early: asleep (state S) without using any CPU time for stall_s. It is
 * killed and run again (the lock is free in a new fork), at most
 * MAX_ATTEMPTS times within the same wall-clock limit.
 */
#define _GNU_SOURCE
#include "solver_child.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "partd/clock.h"
#include "partd/partd.h"

/* How often the parent looks at the cancel flag and the clock while the
 * child runs: a cancelled solve stops within about this. */
#define POLL_MS 5
/* How often the parent looks at a child's state and CPU time for a hang. */
#define STALL_SAMPLE_NS 100000000LL
/* Runs of a child that hangs before the caller gets an error. */
#define MAX_ATTEMPTS 3
/* partd__child_run's own code for "killed as hung, run it again". */
#define HUNG 1

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

int partd__child_can_limit_memory(void)
{
    return !UNDER_ASAN;
}

/* ---- the child ----------------------------------------------------------- */

int partd__child_write(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The parent's handlers (libuv's, the daemon's) and its blocked signals
 * mean nothing here: a crash must end the child the default way. */
static void reset_signals(void)
{
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* stdin/stdout on /dev/null (`partd plan` writes its result to stdout),
 * stderr kept for the solver's last words; every other descriptor closed
 * (the daemon's sockets, other jobs' answer pipes). The answer pipe is moved
 * above 2 first (a process started with those closed gets them from pipe2);
 * returns where it is now, or -1. */
static int isolate_descriptors(int fd)
{
    int was = fd;
    if (fd <= 2 && (fd = fcntl(fd, F_DUPFD, 3)) < 0)
        return -1;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (was == 2)
            dup2(null, 2);
    }
    if (fd > 3)
        close_range(3, (unsigned)fd - 1, 0);
    close_range((unsigned)fd + 1, ~0u, 0);
    return fd;
}

/* Lowers a limit to `soft`/`hard`; a lower limit already set stays. */
static void lower_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit now;
    if (getrlimit(resource, &now) != 0)
        return;
    struct rlimit r = { soft, hard };
    if (now.rlim_max != RLIM_INFINITY && now.rlim_max < r.rlim_max)
        r.rlim_max = now.rlim_max;
    if (now.rlim_cur != RLIM_INFINITY && now.rlim_cur < r.rlim_cur)
        r.rlim_cur = now.rlim_cur;
    if (r.rlim_cur > r.rlim_max)
        r.rlim_cur = r.rlim_max;
    setrlimit(resource, &r);
}

static void apply_limits(const partd_child_limits *lim, uint64_t base_as)
{
    lower_limit(RLIMIT_CORE, 0, 0); /* an abort must not fill the disk */
    if (lim->cpu_s > 0) {
        rlim_t cpu = (rlim_t)ceil(lim->cpu_s);
        lower_limit(RLIMIT_CPU, cpu, cpu + 1); /* SIGXCPU, then SIGKILL */
    }
    if (lim->memory_bytes > 0 && base_as > 0) {
        rlim_t as = (rlim_t)(base_as + lim->memory_bytes);
        lower_limit(RLIMIT_AS, as, as);
    }
}

static void child_main(partd_child_fn fn, void *arg, int fd,
                       const partd_child_limits *lim, uint64_t base_as, pid_t parent)
{
    reset_signals();
    /* Dies with the forking thread, so a killed daemon leaves no solver. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
    fd = isolate_descriptors(fd);
    if (fd < 0)
        _exit(125);
    apply_limits(lim, base_as);
    int code = fn(arg, fd);
    _exit(code & 0xff);
}

/* ---- the parent ---------------------------------------------------------- */

/* This process's address space in bytes (what RLIMIT_AS counts); 0 when
 * unknown, and then no memory limit is set. */
static uint64_t address_space_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return 0;
    unsigned long long pages = 0;
    if (fscanf(f, "%llu", &pages) != 1)
        pages = 0;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return (uint64_t)pages * (uint64_t)(page > 0 ? page : 4096);
}

typedef struct watch {
    pid_t pid;
    int fd;                /* read end, -1 once at end of file */
    int pidfd;             /* readable when the child exits; -1: unsupported */
    int64_t kill_at;       /* CLOCK_MONOTONIC ns */
    partd_child_answer *ans;
    int64_t stall_ns;      /* 0: no hang detection */
    int64_t next_sample, last_progress;
    unsigned long long last_cpu;
} watch;

/* The child's state letter and CPU time (clock ticks) from /proc; -1 when
 * they cannot be read. */
static int read_stat(pid_t pid, char *state, unsigned long long *cpu)
{
    char path[48], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold anything */
    unsigned long long utime, stime;
    if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                     state, &utime, &stime) != 3)
        return -1;
    *cpu = utime + stime;
    return 0;
}

/* 1 when the child has been asleep without using CPU time for stall_ns: a
 * solver computes or exits, so it waits for a lock it will never get. */
static int stalled(watch *w, int64_t now)
{
    if (w->stall_ns <= 0 || now < w->next_sample)
        return 0;
    w->next_sample = now + STALL_SAMPLE_NS;
    char state = '?';
    unsigned long long cpu = 0;
    if (read_stat(w->pid, &state, &cpu) != 0 || state != 'S' || cpu != w->last_cpu) {
        w->last_cpu = cpu;
        w->last_progress = now;
        return 0;
    }
    return now - w->last_progress >= w->stall_ns;
}

static int reap(pid_t pid, int *status)
{
    for (;;) {
        pid_t w = waitpid(pid, status, 0);
        if (w == pid)
            return 0;
        if (w < 0 && errno != EINTR)
            return -1;
    }
}

static int kill_and_reap(watch *w, int rc, const char *why)
{
    int status;
    kill(w->pid, SIGKILL);
    reap(w->pid, &status);
    snprintf(w->ans->why, sizeof w->ans->why, "%s", why);
    return rc;
}

/* Reads what the pipe holds: 1 more may come, 0 end of file, -1 the answer
 * is longer than the buffer. */
static int read_available(watch *w)
{
    partd_child_answer *a = w->ans;
    for (;;) {
        char spill;
        char *to = a->len < a->cap ? (char *)a->data + a->len : &spill;
        size_t room = a->len < a->cap ? a->cap - a->len : 1;
        ssize_t n = read(w->fd, to, room);
        if (n > 0 && to == &spill)
            return -1;
        if (n > 0) {
            a->len += (size_t)n;
            continue;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        return 1; /* EAGAIN: nothing more now */
    }
}

static int judge_exit(watch *w, int status)
{
    partd_child_answer *a = w->ans;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = sigabbrev_np(sig);
        snprintf(a->why, sizeof a->why, "signal %d (SIG%s)%s", sig,
                 abbrev ? abbrev : "?",
                 sig == SIGXCPU ? ", over its CPU time limit" : "");
        return PARTD_EINTERNAL;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(a->why, sizeof a->why, "exit status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return PARTD_EINTERNAL;
    }
    return PARTD_OK;
}

/* The process ignores SIGCHLD (a disposition inherited across exec from
 * whoever started it), so the kernel reaped the child and its exit status
 * is lost: what it wrote is all there is. An answer is passed on for the
 * caller to validate (milp.c checks its exact length and a magic number);
 * none at all is a crash. */
static int reaped_elsewhere(watch *w)
{
    if (w->fd >= 0 && read_available(w) < 0) {
        snprintf(w->ans->why, sizeof w->ans->why, "an answer longer than expected");
        return PARTD_EINTERNAL;
    }
    if (w->ans->len == 0) {
        snprintf(w->ans->why, sizeof w->ans->why,
                 "ended without an answer (exit status unknown: SIGCHLD is ignored)");
        return PARTD_EINTERNAL;
    }
    return PARTD_OK;
}

/* One step: waits up to POLL_MS for the answer or the child's end. */
static void wait_a_little(watch *w, int64_t now)
{
    struct pollfd p[2];
    nfds_t n = 0;
    if (w->fd >= 0)
        p[n++] = (struct pollfd){ w->fd, POLLIN, 0 };
    if (w->pidfd >= 0)
        p[n++] = (struct pollfd){ w->pidfd, POLLIN, 0 };
    int64_t left_ms = (w->kill_at - now) / 1000000 + 1;
    poll(p, n, left_ms < POLL_MS ? (int)left_ms : POLL_MS);
}

static int supervise(watch *w, const partd_child_limits *lim)
{
    for (;;) {
        int rc = partd_cancel_check(lim->cancel);
        if (rc != PARTD_OK)
            return kill_and_reap(w, rc, rc == PARTD_ECANCELLED
                                            ? "cancelled"
                                            : "the job's deadline passed");
        int64_t now = partd_clock_ns();
        if (now >= w->kill_at)
            return kill_and_reap(w, PARTD_ETIMEOUT, "still running at its time limit");
        if (stalled(w, now))
            return kill_and_reap(w, HUNG, "hung: asleep without using the CPU");
        wait_a_little(w, now);
        if (w->fd >= 0) {
            int more = read_available(w);
            if (more < 0)
                return kill_and_reap(w, PARTD_EINTERNAL, "an answer longer than expected");
            if (more == 0)
                w->fd = -1; /* closed by the caller */
        }
        int status;
        pid_t done = waitpid(w->pid, &status, WNOHANG);
        if (done == w->pid) {
            /* Another child forked meanwhile may hold our pipe's write end:
             * what the child wrote is in the pipe, end of file or not. */
            if (w->fd >= 0 && read_available(w) < 0) {
                snprintf(w->ans->why, sizeof w->ans->why, "an answer longer than expected");
                return PARTD_EINTERNAL;
            }
            return judge_exit(w, status);
        }
        if (done < 0 && errno == ECHILD)
            return reaped_elsewhere(w);
        if (done < 0 && errno != EINTR) {
            char why[96];
            snprintf(why, sizeof why, "waitpid: %s", strerror(errno));
            return kill_and_reap(w, PARTD_EINTERNAL, why);
        }
    }
}

static int run_once(partd_child_fn fn, void *arg, const partd_child_limits *lim,
                    int64_t start, partd_child_answer *answer)
{
    answer->len = 0;
    answer->why[0] = '\0';
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return PARTD_ENOMEM;
    uint64_t base_as = lim->memory_bytes && !UNDER_ASAN ? address_space_bytes() : 0;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return PARTD_ENOMEM;
    }
    if (pid == 0) {
        close(fds[0]);
        child_main(fn, arg, fds[1], lim, base_as, parent);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    int64_t now = partd_clock_ns();
    watch w = { pid, fds[0], pidfd_open(pid, 0), start + (int64_t)(lim->wall_s * 1e9),
                answer, (int64_t)(lim->stall_s * 1e9), now, now, 0 };
    int pipe_fd = fds[0], pidfd = w.pidfd;
    int rc = supervise(&w, lim);
    close(pipe_fd);
    if (pidfd >= 0)
        close(pidfd);
    return rc;
}

int partd__child_run(partd_child_fn fn, void *arg, const partd_child_limits *lim,
                    partd_child_answer *answer)
{
    answer->len = 0;
    answer->why[0] = '\0';
    int rc = partd_cancel_check(lim->cancel);
    if (rc != PARTD_OK) {
        snprintf(answer->why, sizeof answer->why, "%s", partd_strerror(rc));
        return rc;
    }
    int64_t start = partd_clock_ns();
    for (int attempt = 1;; attempt++) {
        rc = run_once(fn, arg, lim, start, answer);
        if (rc != HUNG)
            return rc;
        if (attempt == MAX_ATTEMPTS) {
            snprintf(answer->why, sizeof answer->why,
                     "hung %d times: asleep without using the CPU", attempt);
            return PARTD_EINTERNAL;
        }
    }
}
