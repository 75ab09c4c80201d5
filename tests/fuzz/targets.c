/*
 * targets.c - invariants checked on every fuzz input; see targets.h.
 *
 * The limits and the planning deadline keep one input's cost bounded (a few
 * hundred milliseconds at most under ASan), so that a fuzzer spends its time
 * on many inputs rather than on one large model.
 */
#include "targets.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "modules/modules.h"
#include "partd/cancel.h"
#include "partd/decode.h"
#include "partd/partd.h"
#include "partd/plan.h"
#include "partd/problem.h"
#include "partd/result.h"
#include "partd/strtab.h"
#include "request_dump.h"

/* Requests up to this size are planned; larger ones are only decoded. */
#define FUZZ_PLAN_MAX_NODES 2000
#define FUZZ_PLAN_DEADLINE_MS 250

/* A problem document must render as a JSON object whose status is the one
 * in the struct (a 4xx for anything the client sent) and whose error
 * pointers are JSON Pointers. */
static const char *check_problem(const partd_problem *pb, int want_errors)
{
    if (pb->status < 400 || pb->status > 499)
        return "a rejection carries a status outside 4xx";
    if (want_errors && pb->n_errors == 0)
        return "an invalid request was rejected without any error entry";
    size_t len = 0;
    char *text = partd_problem_to_json(pb, &len);
    if (!text)
        return "partd_problem_to_json returned NULL";
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    const char *bad = NULL;
    json_t *errors = doc ? json_object_get(doc, "errors") : NULL;
    if (!json_is_object(doc))
        bad = "the problem document is not a JSON object";
    else if (json_integer_value(json_object_get(doc, "status")) != pb->status)
        bad = "the problem document's status differs from the struct's";
    else if (!json_is_string(json_object_get(doc, "title")) ||
             !json_is_string(json_object_get(doc, "detail")))
        bad = "the problem document lacks a title or detail";
    else if (!json_is_array(errors) || json_array_size(errors) != pb->n_errors)
        bad = "the problem document's errors differ from the struct's";
    for (size_t i = 0; !bad && i < json_array_size(errors); i++) {
        const char *ptr = json_string_value(json_object_get(json_array_get(errors, i), "pointer"));
        if (!ptr || (ptr[0] != '\0' && ptr[0] != '/'))
            bad = "an error's pointer is not a JSON Pointer";
    }
    json_decref(doc);
    return bad;
}

/* Every operation node in exactly one partition, nothing else in any. */
static const char *check_plan(const partd_request *req, const partd_plan *plan)
{
    const partd_graph *g = &req->graph;
    uint8_t *seen = calloc(g->n_nodes ? g->n_nodes : 1, 1);
    if (!seen)
        return NULL; /* out of memory in the checker is not a finding */
    const char *bad = NULL;
    for (uint32_t p = 0; !bad && p < plan->n_parts; p++) {
        const partd_part *part = &plan->parts[p];
        for (uint32_t k = 0; !bad && k < part->n_nodes; k++) {
            uint32_t v = part->nodes[k];
            if (v >= g->n_nodes)
                bad = "a partition names a node that does not exist";
            else if (!partd_op_is_operation((partd_op)g->op[v]))
                bad = "a partition holds a node that is not an operation";
            else if (seen[v]++)
                bad = "an operation node is in two partitions";
            else if (k > 0 && part->nodes[k - 1] >= v)
                bad = "a partition's nodes are not ascending";
        }
        for (uint32_t k = 0; !bad && k < part->n_devices; k++)
            if (part->devices[k] >= req->n_devices)
                bad = "a partition names a device that does not exist";
    }
    for (uint32_t v = 0; !bad && v < g->n_nodes; v++)
        if (partd_op_is_operation((partd_op)g->op[v]) && !seen[v])
            bad = "an operation node is in no partition";
    free(seen);
    return bad;
}

static const char *check_result_text(const partd_plan *plan, const char *text, size_t len)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *bad = NULL;
    if (!json_is_object(doc))
        bad = "the result document does not parse as a JSON object";
    else if (json_array_size(json_object_get(doc, "partitions")) != plan->n_parts)
        bad = "the result document's partitions differ from the plan's";
    json_decref(doc);
    return bad;
}

static const char *plan_and_render(const partd_request *req)
{
    partd_cancel cancel;
    partd_cancel_init(&cancel, FUZZ_PLAN_DEADLINE_MS);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_plan *plan = NULL;
    const char *bad = NULL;
    int rc = partd_plan_run(req, &cancel, &plan, &pb);
    if (rc == PARTD_OK) {
        bad = check_plan(req, plan);
        size_t len = 0;
        char *text = bad ? NULL : partd_result_to_json(req, plan, &len);
        if (text)
            bad = check_result_text(plan, text, len);
        free(text);
    } else if (rc == PARTD_EINVALID || rc == PARTD_EINFEASIBLE || rc == PARTD_ETOOBIG) {
        /* ETOOBIG: a search limit (training's exact search), a 422. */
        bad = check_problem(&pb, 0);
    } else if (rc != PARTD_ETIMEOUT && rc != PARTD_ENOMEM) {
        bad = "the planner failed with an internal error on a valid request";
    }
    partd_plan_free(plan);
    partd_problem_free(&pb);
    return bad;
}

static int valid_hash(const char *h)
{
    if (strncmp(h, "sha256:", 7) != 0 || strlen(h) != 71)
        return 0;
    for (const char *p = h + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* The same body fed in three pieces, split at points the input chooses
 * (its first and last bytes): the same code, problem document (positions
 * included) and request as fed whole. */
static const char *check_chunked(const uint8_t *data, size_t size,
                                 const partd_decode_limits *lim, int rc0,
                                 const partd_request *req0, const partd_problem *pb0)
{
    size_t a = size ? ((size_t)data[0] * 131 + data[size - 1]) % (size + 1) : 0;
    size_t b = a + (size - a) / 2;
    size_t cut[4] = {0, a, b, size};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_decoder *dec = partd_request_decoder_new(lim, &pb);
    if (!dec)
        return NULL; /* out of memory: nothing to compare */
    int rc = PARTD_OK;
    for (int k = 0; k < 3 && rc == PARTD_OK; k++)
        rc = partd_request_decoder_feed(dec, (const char *)data + cut[k], cut[k + 1] - cut[k]);
    partd_request *req = NULL;
    if (rc == PARTD_OK)
        rc = partd_request_decoder_finish(dec, &req);
    const char *bad = NULL;
    if (rc != rc0 && rc != PARTD_ENOMEM && rc0 != PARTD_ENOMEM)
        bad = "a body fed in pieces decodes to another code than fed whole";
    else if (rc == rc0) {
        char *x = tu_decode_outcome(rc0, req0, pb0), *y = tu_decode_outcome(rc, req, &pb);
        if (x && y && strcmp(x, y) != 0)
            bad = "a body fed in pieces decodes differently from the body fed whole";
        free(x);
        free(y);
    }
    partd_request_free(req);
    partd_request_decoder_free(dec);
    partd_problem_free(&pb);
    return bad;
}

const char *partd_fuzz_request(const uint8_t *data, size_t size)
{
    /* The daemon's kind of limits, scaled down so that no input is slow. */
    partd_decode_limits lim = {.max_nodes = 100000, .max_devices = 1024,
                               .max_model_bytes = 64u << 20};
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    const char *bad = NULL;
    int rc = partd_request_decode((const char *)data, size, &lim, &req, &pb);
    const char *chunked = check_chunked(data, size, &lim, rc, req, &pb);
    switch (rc) {
    case PARTD_OK:
        if (!req)
            bad = "decode succeeded without a request";
        else if (!valid_hash(req->graph_hash) || !valid_hash(req->cache_key))
            bad = "graph_hash or cache_key is not sha256:<64 hex>";
        else if (req->graph.n_ops == 0 || req->n_devices == 0)
            bad = "a request without operations or devices was accepted";
        else if (req->graph.n_nodes <= FUZZ_PLAN_MAX_NODES)
            bad = plan_and_render(req);
        break;
    case PARTD_EMALFORMED:
        bad = pb.status != 400 ? "malformed JSON is not a 400" : check_problem(&pb, 0);
        break;
    case PARTD_EINVALID:
        bad = pb.status != 422 ? "an invalid request is not a 422" : check_problem(&pb, 1);
        break;
    case PARTD_ETOOBIG:
        bad = check_problem(&pb, 0);
        break;
    case PARTD_ENOMEM:
        break;
    default:
        bad = "decode returned a code it does not document";
    }
    if (rc != PARTD_OK && req)
        bad = "decode failed but still returned a request";
    if (!bad)
        bad = chunked;
    partd_request_free(req);
    partd_problem_free(&pb);
    return bad;
}

/* Decodes one modules object; *canonical gets its canonical text (or NULL
 * when rejected). */
static const char *decode_modules(json_t *obj, char **canonical, uint32_t *n_modules)
{
    partd_strtab strings;
    partd_strtab_init(&strings);
    partd_problem pb;
    partd_problem_init(&pb);
    partd_modules *m = NULL;
    const char *bad = NULL;
    int rc = partd_modules_decode(obj, &strings, &pb, &m, canonical);
    if (rc == PARTD_OK) {
        if (!m || !*canonical || m->n == 0)
            bad = "modules accepted without a model or canonical text";
        else if (m->mods[0].parent != PARTD_NONE)
            bad = "the first module in fw_pre_order has a parent";
        for (uint32_t i = 1; !bad && i < m->n; i++)
            if (m->mods[i].parent != PARTD_NONE && m->mods[i].parent >= m->n)
                bad = "a module's parent is out of range";
        *n_modules = m ? m->n : 0;
    } else if (rc == PARTD_EINVALID) {
        if (m || *canonical)
            bad = "modules rejected but a model or canonical text came back";
        else
            bad = check_problem(&pb, 1);
        for (uint32_t i = 0; !bad && i < pb.n_errors; i++)
            if (strncmp(pb.errors[i].pointer, "/graph/modules", 14) != 0)
                bad = "a modules error points outside /graph/modules";
    } else if (rc != PARTD_ENOMEM) {
        bad = "partd_modules_decode returned a code it does not document";
    }
    partd_modules_free(m);
    partd_strtab_free(&strings);
    partd_problem_free(&pb);
    return bad;
}

const char *partd_fuzz_modules(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *obj = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                             &jerr);
    if (!obj)
        return NULL; /* the JSON parser is jansson's; the request target covers 400s */
    char *canonical = NULL, *again = NULL;
    uint32_t n1 = 0, n2 = 0;
    const char *bad = decode_modules(obj, &canonical, &n1);
    json_decref(obj);
    if (!bad && canonical) {
        json_t *back = json_loads(canonical, JSON_REJECT_DUPLICATES, &jerr);
        if (!back)
            bad = "the canonical text of accepted modules is not JSON";
        else
            bad = decode_modules(back, &again, &n2);
        json_decref(back);
        if (!bad && (!again || strcmp(canonical, again) != 0))
            bad = "canonicalising the canonical text changes it";
        else if (!bad && n1 != n2)
            bad = "the canonical text decodes to a different number of modules";
    }
    free(canonical);
    free(again);
    return bad;
}
