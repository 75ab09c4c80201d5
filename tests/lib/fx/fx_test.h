/*
 * fx_test.h - what the tests of FX's modes share: plan a request text and
 * check a partition's nodes, devices and memory.
 */
#ifndef PARTD_TESTS_FX_TEST_H
#define PARTD_TESTS_FX_TEST_H

#include "testutil.h"

#include <string.h>

#include "partd/partd.h"
#include "partd/plan.h"

typedef struct planned {
    partd_request *req;
    partd_plan *plan;
    partd_problem pb;
    int rc;
} planned;

static inline planned plan_text(const char *json)
{
    planned p = {0};
    p.req = tu_decode_ok(json);
    partd_problem_init(&p.pb);
    p.rc = partd_plan_run(p.req, NULL, &p.plan, &p.pb);
    return p;
}

static inline void planned_free(planned *p)
{
    partd_plan_free(p->plan);
    partd_request_free(p->req);
    partd_problem_free(&p->pb);
}

/* Partition i holds exactly `nodes` on `devs` (names, space separated) with
 * `memory` bytes. */
static inline void expect_part(const planned *p, uint32_t i, const char *nodes, const char *devs,
                               int64_t memory)
{
    assert_true(i < p->plan->n_parts);
    const partd_part *pt = &p->plan->parts[i];
    char got[512] = "", gotd[256] = "";
    for (uint32_t k = 0; k < pt->n_nodes; k++) {
        strcat(got, k ? " " : "");
        strcat(got, partd_node_name(p->req, pt->nodes[k]));
    }
    for (uint32_t k = 0; k < pt->n_devices; k++) {
        strcat(gotd, k ? " " : "");
        strcat(gotd, partd_device_name(p->req, pt->devices[k]));
    }
    assert_string_equal(got, nodes);
    assert_string_equal(gotd, devs);
    assert_int_equal(pt->memory_bytes, memory);
}

#endif
