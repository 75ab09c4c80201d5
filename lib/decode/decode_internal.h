/*
 * decode_internal.h - what the parts of the request decoder share (not a
 * public interface; see decode.h for that).
 *
 * The decoder is split by request part over one reading layer
 * (decode_stream.h, with decode_scan.h and decode_keys.h, on the parts
 * declared at the end of this header: decode_yajl.c, decode_events.c,
 * decode_number.c, decode_token.c):
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

/* ---- the reading layer's parts (decode_stream.c stands on them) ---- */

#include <setjmp.h>
#include <yajl/yajl_parse.h>

#include "decode_keys.h"
#include "decode_scan.h"

/* The room for an error's words (partd__decode_stream_error). */
#define PARTD_DECODE_ERROR_CAP 256

/* decode_yajl.c: yajl behind an allocator that leaves a parse by longjmp
 * when memory runs out. Each call returns 0, or -1 when an allocation
 * failed inside (yajl's memory is freed then, and h is NULL). */
#define PARTD_DECODE_YAJL_BLOCKS 32 /* yajl holds about 7 blocks at a time */
typedef struct partd_yajl {
    yajl_handle h;
    void *blocks[PARTD_DECODE_YAJL_BLOCKS]; /* freed here after a jump */
    jmp_buf on_nomem;
} partd_yajl;
/* A parser whose callbacks get ctx; y must not move while it lives. */
int partd__decode_yajl_open(partd_yajl *y, const yajl_callbacks *cb, void *ctx);
/* yajl_parse of p[0, n), or yajl_complete_parse when n is 0; *st its status. */
int partd__decode_yajl_parse(partd_yajl *y, const char *p, size_t n, yajl_status *st);
/* yajl's words for its error in p[0, n), without "parse error: " and the
 * newline, into what (cap bytes). */
int partd__decode_yajl_error(partd_yajl *y, const char *p, size_t n, char *what, size_t cap);
void partd__decode_yajl_close(partd_yajl *y);

/* decode_number.c: the number yajl lexed, t[0, len), by jansson's rules
 * into *v (JSON_INTEGER or JSON_REAL): PARTD_OK, PARTD_EMALFORMED with
 * *bad saying why, or PARTD_ENOMEM. */
int partd__decode_number_read(const char *t, size_t len, partd_scalar *v, const char **bad);

/* decode_token.c: where the tokens at a chunk's edges start and end; each
 * answer an offset, SIZE_MAX for "past the chunk". */
typedef enum partd_jheld { PARTD_HELD_NONE, PARTD_HELD_STRING, PARTD_HELD_WORD } partd_jheld;
/* Bytes of the token left unfinished at the end of p[from, to), which
 * follows `open` bytes of a token yajl already held unfinished: a string
 * still open there (in_string; esc: a backslash left open by the chunk
 * before, when from is its start) or a trailing run of word bytes
 * (numbers and literals: yajl cannot tell they have ended). */
size_t partd__decode_token_open_after(const char *p, size_t from, size_t to, size_t open,
                                      int in_string, int esc);
/* Where in the chunk p[0, n) (scanned: scan) a held token of that kind
 * ends (just past it), or SIZE_MAX when it goes on past the chunk. */
size_t partd__decode_token_held_end(const partd_jscan *scan, partd_jheld held, const char *p,
                                    size_t n);
/* Where a token cut by the end of the chunk p[0, n) starts, at or after
 * `from` (where nothing is open); n when none is. *kind says which;
 * *in_string whether the chunk ends inside a string. */
size_t partd__decode_token_cut(const partd_jscan *scan, const char *p, size_t from, size_t n,
                               partd_jheld *kind, int *in_string);

/* decode_events.c: yajl's callbacks (ctx: a partd_jevents) -> the
 * handler's events. */
typedef enum partd_jmode { PARTD_JMODE_DELIVER, PARTD_JMODE_SKIP, PARTD_JMODE_BUILD } partd_jmode;
typedef struct partd_jframe {
    uint8_t is_object;
    uint8_t mode;        /* partd_jmode */
    uint8_t build_root;  /* the outermost container of a built value */
    partd_keyset keys;   /* of an object */
    json_t *json;        /* PARTD_JMODE_BUILD: the container being built */
} partd_jframe;
typedef struct partd_jevents {
    const partd_js_handler *h;
    void *ctx;
    /* How the parse stopped: PARTD_OK or the code every call returns, and
     * the words of partd__decode_stream_error. */
    int failed;
    char error[PARTD_DECODE_ERROR_CAP];
    const partd_cancel *cancel;
    uint32_t values;     /* since the last look at the cancel flag */
    partd_jframe *frames; /* the open containers */
    uint32_t depth;
    partd_keys keys;     /* of the open objects */
} partd_jevents;
extern const yajl_callbacks partd__decode_events_callbacks;
/* 0, or -1 when memory runs out (then partd__decode_events_free). */
int partd__decode_events_init(partd_jevents *ev, const partd_js_handler *h, void *ctx);
void partd__decode_events_free(partd_jevents *ev);
/* Records code unless a failure already is; returns 0 (yajl: stop). */
int partd__decode_events_fail(partd_jevents *ev, int code);
/* 0 to go on; else the cancel's code, recorded as the failure. */
int partd__decode_events_stopped(partd_jevents *ev);

#endif
