/*
 * request_dump.h - a decoded request as text, field by field, for tests
 * that compare two decodes of one body (chunked against whole, for one).
 *
 * Covers every table of model.h (the string table by id, so string ids
 * must match too), the devices, the options and both hashes. The text is
 * malloc'd (caller frees); NULL when memory runs out.
 */
#ifndef PARTD_TEST_REQUEST_DUMP_H
#define PARTD_TEST_REQUEST_DUMP_H

#include "partd/model.h"
#include "partd/problem.h"

char *tu_request_dump(const partd_request *r);

/* rc, and the problem document (or the request's dump when rc is 0).
 * For malformed JSON (400) the status and what is wrong, not where: yajl
 * reports a syntax error where it stopped, which for a token cut between
 * two chunks depends on the cut. */
char *tu_decode_outcome(int rc, const partd_request *r, const partd_problem *pb);

#endif
