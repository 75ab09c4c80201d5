/*
 * decode_internal.h - what the parts of the request decoder share (not a
 * public interface; see decode.h for that).
 *
 * The decoder is split by request part over one reading layer
 * (decode_stream.h, with decode_scan.h and decode_keys.h):
 *   decode_request.c  the root object, limits, the error order, the API;
 *   decode_graph.c    the graph object, and decode_node.c its nodes,
 *                     straight from parser events into the tables of
 *                     model.h (names interned once);
 *   decode_link.c     references, cycles, topological order and CSR;
 *   decode_devices.c  devices (a small jansson tree built from the events),
 *                     and the name-list helper the options share;
 *   decode_options.c  options (a small jansson tree, like devices);
 *   decode_training.c options.training;
 *   decode_aot.c      options.aot (mode aot_based);
 *   decode_state.c    the state all parts write to (partd_dec): problem,
 *                     out-of-memory flag, bounded sums, release;
 *   json_read.c       typed reading of the small parts' members;
 *   validate.c        the checks that need the whole request;
 *   hash.c            graph_hash and cache_key of the decoded request.
 *
 * Errors are collected per part in their own partd_problem and merged at
 * the end in the order a client has always seen them, whatever the order of
 * the members in the document: root, graph (unknown members, name, nodes,
 * modules), devices, references and cycles, options, then validation.
 */
#ifndef PARTD_DECODE_INTERNAL_H
#define PARTD_DECODE_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "json_read.h"
#include "partd/decode.h"
#include "partd/model.h"
#include "partd/problem.h"

/* Bounds proven here and relied on by the planners (contract: bytes and
 * every sum partd forms from them are at most 2^53):
 *   - each node's params add up to at most 2^53 (decode_graph.c);
 *   - the output_bytes and param_bytes of all nodes add up to at most 2^53
 *     (decode_link.c), so every partition's memory, parameters, received and
 *     boundary bytes, each a sum of distinct nodes' figures, fits too;
 *   - the devices' memory_bytes add up to at most 2^53 (decode_devices.c).
 * A planner that multiplies a sum by microbatches (<= PARTD_DECODE_MAX_MICROBATCHES) or
 * param_factor (<= PARTD_DECODE_MAX_PARAM_FACTOR) stays below 2^69 and computes it in
 * 128 bits (pipeline_model.h). Times: every latency is at most
 * PARTD_DECODE_MAX_LATENCY_MS, speeds lie in [PARTD_DECODE_MIN_SPEED, PARTD_DECODE_MAX_SPEED] and the transfer
 * rate is at least PARTD_DECODE_MIN_RATE, so a sum of 2^32 nodes' times divided by a
 * speed, and 1000 * 2^53 bytes / rate, stay far below DBL_MAX. */
#define PARTD_DECODE_MAX_MICROBATCHES 1024
#define PARTD_DECODE_MAX_PARAM_FACTOR 64.0
#define PARTD_DECODE_MAX_TIME_LIMIT_MS 86400000.0
#define PARTD_DECODE_MAX_LATENCY_MS 1e12
#define PARTD_DECODE_MIN_SPEED 1e-9
#define PARTD_DECODE_MAX_SPEED 1e9
#define PARTD_DECODE_MIN_RATE 1.0
#define PARTD_DECODE_MAX_RATE 1e18

/* The request being decoded and the request-order node lists that the
 * reference passes turn into the CSR arrays of model.h. */
typedef struct partd_dec {
    partd_request *req;
    partd_reader r; /* r.pb: the problem the current part reports into */
    uint32_t n;     /* the node being decoded */
    uint32_t *in_name_off;  /* n + 1 */
    uint32_t *in_name;      /* input name ids as given */
    uint32_t n_in_names;
    uint32_t *par_name_off; /* n + 1 */
    uint32_t *par_name;     /* param name ids */
    int64_t *par_bytes;
    uint32_t n_par_names;
    /* par_seen[string id] = node index + 1 of the last node that named the
     * parameter: the repeat check is one lookup per parameter. */
    uint32_t *par_seen;
    uint32_t par_seen_cap;
    char *modules_canonical;
} partd_dec;

/* Adds msg at ptr to the current part's problem. */
void partd__decode_add(partd_dec *d, const char *ptr, const char *msg);
/* An allocation failed: the request fails with ENOMEM (503, exit 1), never
 * with a 422 nor, worse, as a request decoded without the part that failed. */
void partd__decode_oom(partd_dec *d, const char *ptr);
/* *total += b; 1 when the sum passes 2^53 (the contract's bound on every
 * sum of bytes), leaving *total unspecified. */
int partd__decode_add_bytes(int64_t *total, int64_t b);

/* A list of names (cut_after, ac_units, fsdp_units): string ids in a new
 * array, duplicates reported. 0, or -1 when anything was reported. */
int partd__decode_name_list(partd_dec *d, json_t *v, const char *ptr, uint32_t max,
                        uint32_t **out, uint32_t *n_out);

void partd__decode_devices(partd_dec *d, json_t *devices, const partd_decode_limits *lim);
void partd__decode_options(partd_dec *d, json_t *o);
void partd__decode_options_set_defaults(partd_request *req);
/* options.aot against the linked graph and devices (decode_aot.c); only in
 * mode aot_based, where it is required (o NULL: absent). */
void partd__decode_aot_options(partd_dec *d, json_t *o);
/* The reference passes, once every node has decoded. */
void partd__decode_link(partd_dec *d);
void partd__decode_release(partd_dec *d);

/* ---- graph, straight from the parser's events (decode_graph.c) ---- */

#include "decode_stream.h"

typedef struct partd_gstream partd_gstream;

/* NULL on ENOMEM. Node errors go to a problem of the stream's own until
 * partd__decode_graph_report; names go to d->req->strings. */
partd_gstream *partd__decode_graph_new(partd_dec *d, const partd_decode_limits *lim);
void partd__decode_graph_free(partd_gstream *gs);
/* The value of the root member `graph` starts. */
partd_js_action partd__decode_graph_begin(partd_gstream *gs, const partd_scalar *v);
/* 1 while the graph object is open: events inside it go to these. */
int partd__decode_graph_active(const partd_gstream *gs);
partd_js_action partd__decode_graph_value(partd_gstream *gs, const partd_scalar *v);
int partd__decode_graph_key(partd_gstream *gs, const char *key, size_t len);
int partd__decode_graph_end(partd_gstream *gs);
int partd__decode_graph_built(partd_gstream *gs, json_t *v);
/* Estimated bytes of the decoded model, counted over every node of
 * graph.nodes whatever the limits (partd_request_model_bytes' estimate). */
uint64_t partd__decode_graph_estimate(const partd_gstream *gs);
/* At the end of the body: the graph's errors into d->r.pb in their order,
 * graph.n_nodes set, graph.modules decoded. */
void partd__decode_graph_report(partd_gstream *gs);

#endif
