/* export_results.c - see export_results.h. */
#include "export_results.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "export/export_internal.h"
#include "partd/partd.h"

/* "a b c" -> ["a", "b", "c"] */
static json_t *names(const char *list)
{
    json_t *a = json_array();
    char *copy = strdup(list ? list : ""), *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
        json_array_append_new(a, json_string(t));
    free(copy);
    return a;
}

static json_t *stage(const tu_training_spec *s, uint32_t j, uint32_t rank)
{
    json_t *units = names(s->units[j]);
    json_t *nodes = json_array();
    for (size_t i = 0; i < json_array_size(units); i++) {
        char n[256];
        snprintf(n, sizeof n, "n_%s", json_string_value(json_array_get(units, i)));
        json_array_append_new(nodes, json_string(n));
    }
    char device[32];
    snprintf(device, sizeof device, "gpu%u", rank);
    return json_pack("{s:i, s:s, s:[i], s:o, s:i, s:i, s:i, s:f, s:i, s:f, s:[], s:[], s:[], s:[],"
                     " s:i, s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:f}",
                     "id", j, "device", device, "logical_ids", rank, "nodes", nodes,
                     "memory_bytes", 1 << 20, "device_memory_bytes", 1 << 30, "param_bytes",
                     1 << 10, "compute_ms", 1.0, "transfer_in_bytes", 0, "time_ms", 1.5,
                     "inputs", "outputs", "parents", "children", "rank", rank, "units", units,
                     "checkpointed", names(s->checkpointed ? s->checkpointed[j] : NULL),
                     "forward_ms", 0.5, "backward_ms", 1.0, "input_grad_ms", 0.5,
                     "weight_grad_ms", 0.5, "recompute_ms", 0.0, "send_ms", 0.0);
}

/* Every rank's list as the planner builds it for the class. */
static json_t *actions(const tu_training_spec *s, partd_training_schedule sched)
{
    partd_training_lists l;
    assert_true(partd_training_schedule_allows(sched, s->ranks, s->v, s->microbatches));
    assert_int_equal(partd_training_schedule_build(sched, s->ranks, s->v, s->microbatches, &l),
                     PARTD_OK);
    json_t *all = json_array();
    for (uint32_t r = 0; r < s->ranks; r++) {
        json_t *row = json_array();
        for (uint32_t i = l.off[r]; i < l.off[r + 1]; i++) {
            char a[24];
            partd_training_action_name(&l.act[i], a, sizeof a);
            json_array_append_new(row, json_string(a));
        }
        json_array_append_new(all, row);
    }
    partd_training_lists_free(&l);
    return all;
}

json_t *tu_training_result(const tu_training_spec *s)
{
    partd_training_schedule sched;
    assert_int_equal(partd__export_sched_parse(s->schedule, &sched), PARTD_OK);
    uint32_t n = s->ranks * s->v;
    json_t *parts = json_array(), *ranks = json_array();
    for (uint32_t j = 0; j < n; j++)
        json_array_append_new(parts, stage(s, j, partd_training_schedule_rank(sched, s->ranks, j)));
    for (uint32_t r = 0; r < s->ranks; r++) {
        json_t *st = json_array();
        for (uint32_t j = 0; j < n; j++)
            if (partd_training_schedule_rank(sched, s->ranks, j) == r)
                json_array_append_new(st, json_integer(j));
        char device[32];
        snprintf(device, sizeof device, "gpu%u", r);
        json_array_append_new(ranks, json_pack("{s:i, s:s, s:o, s:i, s:i, s:f}", "rank", r,
                                               "device", device, "stages", st, "memory_bytes",
                                               1 << 20, "device_memory_bytes", 1 << 30,
                                               "busy_ms", 1.0));
    }
    json_t *sch = json_pack("{s:s, s:i}", "name", s->schedule, "virtual_stages", s->v);
    if (!s->no_actions)
        json_object_set_new(sch, "actions", actions(s, sched));
    json_t *summary = json_pack(
        "{s:i, s:f, s:i, s:i, s:b, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:s, s:i, s:f, s:f}",
        "partitions", n, "total_ms", 10.0, "transfer_bytes", 0, "peak_memory_bytes", 1 << 20,
        "optimal", 1, "step_ms", 10.0, "bottleneck_ms", 5.0, "bubble_fraction", 0.1, "stages",
        s->ranks, "virtual_stages", s->v, "microbatches", s->microbatches, "schedule",
        s->schedule, "checkpoint", s->checkpoint ? s->checkpoint : "auto", "unit_depth", 2,
        "gap", 0.0, "lower_bound_ms", 10.0);
    json_t *doc = json_pack("{s:s, s:o, s:[], s:[], s:o, s:o, s:o}", "mode", "training",
                            "partitions", parts, "boundaries", "tied_params", "ranks", ranks,
                            "schedule", sch, "summary", summary);
    assert_non_null(doc);
    return doc;
}

char *tu_training_result_text(const tu_training_spec *s)
{
    json_t *doc = tu_training_result(s);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(doc);
    assert_non_null(text);
    return text;
}

char *tu_export_expect(const char *doc_text, partd_export_format f, unsigned flags,
                       int expected_rc, partd_problem *pb)
{
    partd_problem_init(pb);
    char *out = NULL;
    size_t len = 0;
    int rc = partd_export(doc_text, strlen(doc_text), f, flags, &out, &len, pb);
    if (rc != expected_rc) {
        char *s = partd_problem_to_json(pb, NULL);
        fprintf(stderr, "export: rc %d, problem %s\n", rc, s ? s : "-");
        free(s);
    }
    assert_int_equal(rc, expected_rc);
    if (rc == PARTD_OK) {
        assert_non_null(out);
        assert_int_equal(strlen(out), len);
    } else {
        assert_null(out);
    }
    return out;
}

char *tu_export_doc(json_t *doc, partd_export_format f, unsigned flags, int expected_rc,
                    partd_problem *pb)
{
    char *text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    assert_non_null(text);
    char *out = tu_export_expect(text, f, flags, expected_rc, pb);
    free(text);
    return out;
}

json_t *tu_export_spec_json(const tu_training_spec *s, partd_export_format f, unsigned flags,
                            int expected_rc, partd_problem *pb)
{
    char *text = tu_training_result_text(s);
    char *out = tu_export_expect(text, f, flags, expected_rc, pb);
    free(text);
    json_t *doc = out ? json_loads(out, 0, NULL) : NULL;
    free(out);
    assert_true(!out || doc);
    return doc;
}
