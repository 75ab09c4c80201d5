/*
 * http_harness.h - drives the real daemon's HTTP routes with fuzz inputs.
 *
 * The daemon's handlers read everything through libmicrohttpd's connection
 * object, so they cannot be called without a connection. The harness
 * therefore runs the whole of `partd serve` (partd_serve_main) on a thread of
 * this process, on a free loopback port with a temporary data directory and
 * a bearer token, and sends each input as one HTTP/1.1 request over a fresh
 * loopback connection ("Connection: close"), reading the answer to EOF.
 * Sanitizers see the daemon's code because it runs in this process.
 *
 * Input format (text, so that seeds are readable):
 *
 *   METHOD SP TARGET [SP "chunked"] LF
 *   Name: value LF           (any number of header lines)
 *   LF
 *   body bytes (the rest, sent as is)
 *
 * The harness keeps the request well framed, so that every input gets an
 * answer: it drops CR, NUL and control bytes from the head, replaces
 * Content-Length, Transfer-Encoding, Connection and Host with its own, and
 * sends the body with a correct Content-Length or as valid chunks. In TARGET
 * and header values "{id}" becomes the id of a finished job, "{etag}" its
 * result's quoted ETag and "{token}" the bearer token, so that inputs reach
 * the job routes and the authenticated paths.
 *
 * Invariants checked per input: the daemon answers within a bound with a
 * status from the contract's list; JSON and problem bodies parse, and a
 * problem's "status" is the HTTP status; that the daemon still accepts
 * connections is checked by the next input's connect. Returns NULL or a
 * sentence (static, or the harness's own buffer until the next call).
 */
#ifndef PARTD_FUZZ_HTTP_HARNESS_H
#define PARTD_FUZZ_HTTP_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* Starts the daemon (once per process) and submits the job behind "{id}".
 * 0, or -1 with the reason on stderr. The data directory is the value of
 * PARTD_FUZZ_DATA_DIR when set, else a new directory under /tmp that is
 * removed at exit. */
int partd_fuzz_http_start(void);

const char *partd_fuzz_http_one(const uint8_t *data, size_t size);

/* Stops the daemon through its SIGTERM path and joins its thread. Only for
 * callers that own SIGTERM (not under libFuzzer, whose handler takes it). */
void partd_fuzz_http_stop(void);

#endif
