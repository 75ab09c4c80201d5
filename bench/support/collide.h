/*
 * collide.h - names crafted to collide under FNV-1a (32-bit), the hash the
 * name tables used before they were keyed: what a client could send to
 * turn every lookup into a scan. The benchmarks time a request made of
 * them and the tests count the work of interning them.
 *
 * The low k bits of FNV-1a's state after a byte depend only on the low k
 * bits of the state before it, so two 5-letter blocks that collide from
 * one state (a birthday search among a few hundred thousand blocks) leave
 * any continuation colliding too: b such pairs, one after the other,
 * give 2^b names of 5b letters whose hashes agree in their low 24 bits,
 * which is all a table of up to 2^24 slots looks at. (Five letters have
 * too few values to collide in all 32 bits.)
 *
 * Nothing here allocates beyond the caller's buffer and a scratch array
 * freed before return; -1 when that array cannot be had.
 */
#ifndef PARTD_BENCH_COLLIDE_H
#define PARTD_BENCH_COLLIDE_H

#include <stddef.h>
#include <stdint.h>

#define PARTD_COLLIDE_BLOCK 5
#define PARTD_COLLIDE_MASK 0xffffffu /* the bits the names agree in */

/* FNV-1a (32-bit) of s[0, len). */
uint32_t partd_collide_fnv1a(const char *s, size_t len);

/* Fills pairs[2 * b] (5 letters each, no NUL) for blocks b < n_blocks so
 * that every name made of one block of each pair has the same FNV-1a
 * hash in the bits of PARTD_COLLIDE_MASK. 0, or -1 out of memory. */
int partd_collide_pairs(uint32_t n_blocks, char (*pairs)[PARTD_COLLIDE_BLOCK]);

/* Writes name number i (i < 2^n_blocks) to out: 5 * n_blocks letters and
 * a NUL. */
void partd_collide_name(char (*pairs)[PARTD_COLLIDE_BLOCK], uint32_t n_blocks, uint64_t i,
                        char *out);

/* An ordinary name of the same length for comparison: "n" and i in
 * decimal, padded with 'x' to 5 * n_blocks letters, and a NUL. */
void partd_collide_plain_name(uint32_t n_blocks, uint64_t i, char *out);

#endif
