/*
 * targets.h - the checks behind the fuzz drivers, shared with the replay test.
 *
 * Each target feeds one input to a unit of partd and checks the invariants
 * that must hold for *every* input, not just valid ones:
 *
 *   partd_fuzz_request  arbitrary bytes -> partd_request_decode (with limits),
 *                       and again fed in three pieces split where the input
 *                       says (its first and last bytes), which must decode
 *                       the same; a rejection is a well-formed problem document with a
 *                       4xx status; an accepted request that is small is
 *                       planned under a short deadline and its result renders
 *                       as JSON that parses back.
 *   partd_fuzz_modules  arbitrary bytes -> JSON -> partd_modules_decode; a
 *                       rejection names pointers under /graph/modules, an
 *                       accepted object has a canonical text that decodes to
 *                       the same canonical text (canonicalisation is a fixed
 *                       point).
 *
 * Both return NULL when every invariant held, otherwise a static sentence
 * naming the one that broke. The libFuzzer drivers (fuzz_*.c) turn a broken
 * invariant into a crash; tests/fuzz/test_regressions.c replays the corpus and
 * fails the test instead. Sanitizers catch the memory errors themselves.
 */
#ifndef PARTD_FUZZ_TARGETS_H
#define PARTD_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

const char *partd_fuzz_request(const uint8_t *data, size_t size);
const char *partd_fuzz_modules(const uint8_t *data, size_t size);

#endif
