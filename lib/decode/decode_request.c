/*
 * decode_request.c - the request decoder's entry points and root object;
 * see decode.h and decode_internal.h.
 *
 * Events of the root object are handled here; those inside `graph` go to
 * decode_graph.c, `devices` and `options` are built as small jansson trees.
 * Nothing is reported to the caller's problem before the body has ended:
 * each part collects its errors, and partd_request_decoder_finish merges them in
 * the fixed order of decode_internal.h, with the cap of
 * PARTD_PROBLEM_MAX_ERRORS and the count of dropped errors as if they had
 * been added one by one.
 */
#include "partd/decode.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "decode_stream.h"
#include "modules/modules.h"
#include "partd/hash.h"
#include "partd/partd.h"
#include "validate.h"

typedef enum root_member { R_UNKNOWN, R_GRAPH, R_DEVICES, R_OPTIONS, R_META } root_member;

struct partd_decoder {
    partd_problem *pb;
    partd_decode_limits lim;
    const partd_decode_limits *limp; /* &lim, or NULL */
    partd_jstream *js;
    partd_gstream *gs;
    partd_dec d;
    int failed;           /* PARTD_OK, or what every call returns */
    /* the root */
    json_type root_type;
    int root_seen, in_root, graph_seen;
    int result_seen; /* the root has `partitions`: a result given for a request */
    root_member next;
    partd_problem pb_root; /* unknown members and meta of the root */
    json_t *devices, *options;
    json_t **build_to;
};

/* ---- events of the root ------------------------------------------------- */

static partd_js_action on_value(void *ctx, const partd_scalar *v)
{
    partd_decoder *dec = ctx;
    if (partd__decode_graph_active(dec->gs))
        return partd__decode_graph_value(dec->gs, v);
    if (!dec->root_seen) {
        dec->root_seen = 1;
        dec->root_type = v->type;
        dec->in_root = v->type == JSON_OBJECT;
        return dec->in_root ? PARTD_JS_DESCEND : PARTD_JS_SKIP;
    }
    switch (dec->next) {
    case R_GRAPH:
        dec->graph_seen = 1;
        return partd__decode_graph_begin(dec->gs, v);
    case R_DEVICES:
        dec->build_to = &dec->devices;
        return PARTD_JS_BUILD;
    case R_OPTIONS:
        dec->build_to = &dec->options;
        return PARTD_JS_BUILD;
    case R_META:
        if (v->type != JSON_OBJECT) {
            partd_reader r = {.pb = &dec->pb_root, .strings = &dec->d.req->strings};
            partd__json_read_scalar_expect(&r, v, "/meta", JSON_OBJECT, "an object");
        }
        return PARTD_JS_SKIP;
    case R_UNKNOWN:
        break;
    }
    return PARTD_JS_SKIP;
}

static int on_key(void *ctx, const char *key, size_t len)
{
    partd_decoder *dec = ctx;
    if (partd__decode_graph_active(dec->gs))
        return partd__decode_graph_key(dec->gs, key, len);
    dec->next = strcmp(key, "graph") == 0     ? R_GRAPH
                : strcmp(key, "devices") == 0 ? R_DEVICES
                : strcmp(key, "options") == 0 ? R_OPTIONS
                : strcmp(key, "meta") == 0    ? R_META
                                              : R_UNKNOWN;
    if (dec->next == R_UNKNOWN && strcmp(key, "partitions") == 0)
        dec->result_seen = 1;
    if (dec->next == R_UNKNOWN) {
        static const char *const members[] = {"graph", "devices", "options", "meta", NULL};
        char ptr[PARTD_POINTER_CAP];
        partd_pointer_member(ptr, "", key);
        partd_json_read_unknown(&dec->pb_root, ptr, key, members);
    }
    return 0;
}

static int on_end(void *ctx)
{
    partd_decoder *dec = ctx;
    if (partd__decode_graph_active(dec->gs))
        return partd__decode_graph_end(dec->gs);
    dec->in_root = 0;
    return 0;
}

static int on_built(void *ctx, json_t *v)
{
    partd_decoder *dec = ctx;
    if (partd__decode_graph_active(dec->gs))
        return partd__decode_graph_built(dec->gs, v);
    json_decref(*dec->build_to);
    *dec->build_to = v;
    return 0;
}

static const partd_js_handler handler = {on_value, on_key, on_end, on_built};

/* ---- the decoder --------------------------------------------------------- */

static int set_nomem(partd_decoder *dec, const char *what)
{
    partd_problem_set(dec->pb, 503, "out-of-memory", "Out of memory",
                      "the server ran out of memory %s the request", what);
    dec->failed = PARTD_ENOMEM;
    return PARTD_ENOMEM;
}

/* The cancel of the limits stopped the decoder (rc says how). */
static int set_stopped(partd_decoder *dec, int rc)
{
    partd_problem_free(dec->pb); /* what the parts found so far is moot */
    partd_problem_init(dec->pb);
    if (rc == PARTD_ETIMEOUT)
        partd_problem_set(dec->pb, 408, "request-timeout", "Request timeout",
                          "the request was not decoded within its deadline");
    else
        partd_problem_set(dec->pb, 503, "request-cancelled", "Request cancelled",
                          "decoding the request was stopped");
    dec->failed = rc;
    return rc;
}

static const partd_cancel *cancel_of(const partd_decoder *dec)
{
    return dec->limp ? dec->limp->cancel : NULL;
}

partd_decoder *partd_request_decoder_new(const partd_decode_limits *limits, partd_problem *problem)
{
    partd_decoder *dec = calloc(1, sizeof *dec);
    if (!dec)
        return NULL;
    dec->pb = problem;
    if (limits) {
        dec->lim = *limits;
        dec->limp = &dec->lim;
    }
    partd_problem_init(&dec->pb_root);
    partd_request *req = calloc(1, sizeof *req);
    dec->d.req = req;
    if (req) {
        partd_strtab_init(&req->strings);
        partd__decode_options_set_defaults(req);
        req->graph.output_node = PARTD_NONE;
        dec->d.r.strings = &req->strings;
    }
    dec->gs = req ? partd__decode_graph_new(&dec->d, dec->limp) : NULL;
    dec->js = dec->gs ? partd__decode_stream_new(&handler, dec) : NULL;
    if (!dec->js) {
        partd_request_decoder_free(dec);
        return NULL;
    }
    partd__decode_stream_set_cancel(dec->js, cancel_of(dec));
    return dec;
}

void partd_request_decoder_free(partd_decoder *dec)
{
    if (!dec)
        return;
    partd__decode_stream_free(dec->js);
    partd__decode_graph_free(dec->gs);
    partd__decode_release(&dec->d);
    free(dec->d.modules_canonical);
    partd_request_free(dec->d.req);
    partd_problem_free(&dec->pb_root);
    json_decref(dec->devices);
    json_decref(dec->options);
    free(dec);
}

static int stream_failed(partd_decoder *dec, int rc)
{
    if (rc == PARTD_ENOMEM)
        return set_nomem(dec, "parsing");
    if (rc == PARTD_ECANCELLED || rc == PARTD_ETIMEOUT)
        return set_stopped(dec, rc);
    partd_problem_set(dec->pb, 400, "malformed-json", "Malformed JSON",
                      "the body is not valid JSON: %s", partd__decode_stream_error(dec->js));
    dec->failed = rc;
    return rc;
}

int partd_request_decoder_feed(partd_decoder *dec, const char *chunk, size_t len)
{
    if (dec->failed)
        return dec->failed;
    int rc = partd__decode_stream_feed(dec->js, chunk, len);
    return rc == PARTD_OK ? PARTD_OK : stream_failed(dec, rc);
}

/* The parts in their order once the body is complete; see decode_root of
 * the tree decoder this replaced. */
static int decode_parts(partd_decoder *dec)
{
    partd_dec *d = &dec->d;
    partd_problem *pb = dec->pb;
    d->r.pb = pb;
    if (dec->root_type != JSON_OBJECT) {
        partd_problem_add(pb, "", "the request must be a JSON object, not %s",
                          partd__json_read_type_word(dec->root_type));
        return PARTD_EINVALID;
    }
    const partd_decode_limits *lim = dec->limp;
    if (lim && lim->max_model_bytes) {
        uint64_t est = partd__decode_graph_estimate(dec->gs);
        if (est > lim->max_model_bytes) {
            char about[PARTD_PROBLEM_BYTES_CAP], most[PARTD_PROBLEM_BYTES_CAP];
            partd_problem_bytes(about, (double)est);
            partd_problem_set(pb, 422, "model-too-large", "Model too large",
                              "the decoded model would take about %s; this server takes at "
                              "most %s (--max-model-bytes %llu)",
                              about, partd_problem_bytes(most, (double)lim->max_model_bytes),
                              (unsigned long long)lim->max_model_bytes);
            partd_problem_add(pb, "/graph/nodes", "about %s when decoded", about);
            return PARTD_ETOOBIG;
        }
    }
    for (uint32_t k = 0; k < dec->pb_root.n_errors; k++)
        partd_problem_add(pb, dec->pb_root.errors[k].pointer, "%s",
                          dec->pb_root.errors[k].message);
    pb->dropped += dec->pb_root.dropped;
    const partd_cancel *cancel = cancel_of(dec);
    int rc;
    if (!dec->graph_seen && dec->result_seen)
        partd__decode_add(d, "/graph",
                          "is required: this is a result document (it has /partitions), which "
                          "`partd show` draws; a request has graph, devices and options");
    else if (!dec->graph_seen)
        partd__decode_add(d, "/graph", "is required");
    else
        partd__decode_graph_report(dec->gs);
    partd__decode_devices(d, dec->devices, lim);
    if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
        return rc;
    if (d->req->graph.n_nodes && !d->r.oom) /* a failed allocation leaves arrays NULL */
        partd__decode_link(d);
    partd__decode_options(d, dec->options);
    if (d->r.oom)
        return PARTD_ENOMEM;
    if (pb->n_errors || pb->dropped)
        return PARTD_EINVALID;
    if ((rc = partd_cancel_check(cancel)) != PARTD_OK)
        return rc;
    /* The request is well formed: the checks that need all of it. */
    return partd__validate_request(d->req, pb);
}

int partd_request_decoder_finish(partd_decoder *dec, partd_request **out)
{
    *out = NULL;
    if (dec->failed)
        return dec->failed;
    int rc = partd__decode_stream_finish(dec->js);
    if (rc != PARTD_OK)
        return stream_failed(dec, rc);
    partd_request *req = dec->d.req;
    partd_problem *pb = dec->pb;
    rc = partd_cancel_check(cancel_of(dec));
    if (rc == PARTD_OK)
        rc = decode_parts(dec);
    if (rc == PARTD_OK)
        rc = partd_hash_request(req, dec->d.modules_canonical, cancel_of(dec));
    if (rc == PARTD_ECANCELLED || rc == PARTD_ETIMEOUT)
        return set_stopped(dec, rc);
    if (rc != PARTD_OK) {
        if (rc == PARTD_EINVALID)
            partd_problem_set(pb, 422, "invalid-request", "Invalid request",
                              "the request has %u error%s%s", pb->n_errors + pb->dropped,
                              pb->n_errors + pb->dropped == 1 ? "" : "s",
                              pb->dropped ? " (the first 100 are listed)" : "");
        else if (rc == PARTD_ENOMEM)
            set_nomem(dec, "decoding");
        dec->failed = rc;
        return rc;
    }
    dec->d.req = NULL;
    dec->failed = PARTD_EINVALID; /* finish runs once */
    *out = req;
    return PARTD_OK;
}

int partd_request_decode(const char *body, size_t len, const partd_decode_limits *lim,
                         partd_request **out, partd_problem *pb)
{
    *out = NULL;
    partd_decoder *dec = partd_request_decoder_new(lim, pb);
    if (!dec) {
        partd_problem_set(pb, 503, "out-of-memory", "Out of memory",
                          "the server ran out of memory parsing the request");
        return PARTD_ENOMEM;
    }
    int rc = partd_request_decoder_feed(dec, body, len);
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, out);
    partd_request_decoder_free(dec);
    return rc;
}

/* ---- the request ---------------------------------------------------------- */

void partd_request_free(partd_request *req)
{
    if (!req)
        return;
    partd_graph *g = &req->graph;
    free(g->op);
    free(g->has_params);
    free(g->name);
    free(g->target);
    free(g->module);
    free(g->module_type);
    free(g->request_index);
    free(g->output_bytes);
    free(g->param_bytes);
    free(g->latency_ms);
    free(g->mem_latency_ms);
    free(g->backward_ms);
    free(g->has_backward);
    free(g->weight_grad_ms);
    free(g->has_weight_grad);
    free(g->in_off);
    free(g->in_idx);
    free(g->user_off);
    free(g->user_idx);
    free(g->par_off);
    free(g->par_idx);
    free(g->param_name);
    free(g->param_size);
    free(req->devices);
    free(req->options.pipeline.cut_after);
    free(req->options.sac.ac_units);
    free(req->options.sac.fsdp_units);
    free(req->options.aot.part_id);
    free(req->options.aot.part_of);
    free(req->options.aot.dev_off);
    free(req->options.aot.dev_idx);
    partd_modules_free(req->modules);
    partd_strtab_free(&req->strings);
    free(req->graph_name);
    free(req);
}

uint64_t partd_request_model_bytes(const partd_request *req)
{
    const partd_graph *g = &req->graph;
    uint64_t per_node = 4 + 5 * sizeof(uint32_t) + 6 * 8 + 3 * sizeof(uint32_t);
    return (uint64_t)g->n_nodes * per_node +
           (uint64_t)(g->in_off ? g->in_off[g->n_nodes] : 0) * 2 * sizeof(uint32_t) +
           (uint64_t)g->n_params * 12 + partd_strtab_bytes(&req->strings) +
           (uint64_t)req->n_devices * sizeof(partd_device);
}
