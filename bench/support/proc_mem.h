/*
 * proc_mem.h - a process's memory figures for the benchmarks, from Linux's
 * /proc: resident size and its peak, and resetting the peak mark.
 * Nothing here fails loudly: a figure that cannot be read is 0, and a reset
 * that the kernel refuses returns -1.
 */
#ifndef PARTD_BENCH_PROC_MEM_H
#define PARTD_BENCH_PROC_MEM_H

#include <sys/types.h>

/* A line "Key:   123 kB" of /proc/<pid>/status (pid 0: this process), in
 * bytes; 0 when absent. Keys: "VmRSS", "VmHWM", ... */
double partd_bench_status_bytes(pid_t pid, const char *key);

/* Resets this process's VmHWM to its current RSS (Linux >= 4.0): 0 when it
 * worked. */
int partd_bench_reset_peak(void);

#endif
