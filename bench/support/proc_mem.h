/*
 * proc_mem.h - a process's memory figures for the benchmarks, from Linux's
 * /proc: resident size and its peak, and resetting the peak mark; and
 * running a measurement in a child process, so that it starts from a fresh
 * heap and its peak is its own.
 * Nothing here fails loudly: a figure that cannot be read is 0, and a reset
 * that the kernel refuses returns -1.
 */
#ifndef PARTD_BENCH_PROC_MEM_H
#define PARTD_BENCH_PROC_MEM_H

#include <stddef.h>
#include <sys/types.h>

/* A line "Key:   123 kB" of /proc/<pid>/status (pid 0: this process), in
 * bytes; 0 when absent. Keys: "VmRSS", "VmHWM", ... */
double partd_bench_status_bytes(pid_t pid, const char *key);

/* Resets this process's VmHWM to its current RSS (Linux >= 4.0): 0 when it
 * worked. */
int partd_bench_reset_peak(void);

/* Runs fn(ctx, out) in a forked child; its figures (out_size bytes of out)
 * come back through a pipe. 0 when fn returned 0 and the figures arrived,
 * else -1. */
typedef int (*partd_bench_fn)(void *ctx, void *out);
int partd_bench_in_child(partd_bench_fn fn, void *ctx, void *out, size_t out_size);

#endif
