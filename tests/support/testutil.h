/*
 * testutil.h - helpers shared by the cmocka tests: decode a request from JSON
 * text, look for an error by pointer, plan and render a request.
 */
#ifndef PARTD_TESTUTIL_H
#define PARTD_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "partd/decode.h"
#include "partd/plan.h"
#include "partd/problem.h"

/* Decodes text that must be valid; fails the test otherwise. */
partd_request *tu_decode_ok(const char *json);

/* Decodes text that must be rejected with `expected_rc`; returns the problem
 * (caller frees with partd_problem_free). */
void tu_decode_fail(const char *json, int expected_rc, partd_problem *pb);

/* Asserts the problem has an error at `pointer` whose message contains
 * `needle`. */
void tu_assert_error(const partd_problem *pb, const char *pointer, const char *needle);

/* The problem's integer extension member `name` (fails the test when it
 * has none). */
int64_t tu_problem_member(const partd_problem *pb, const char *name);

/* Plans and renders; returns the malloc'd result text, or NULL with *rc set
 * and the problem filled. */
char *tu_plan_json(const char *request_json, int *rc, partd_problem *pb);

#endif
