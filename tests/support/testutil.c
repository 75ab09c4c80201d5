/* testutil.c - see testutil.h. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "partd/partd.h"
#include "partd/result.h"

partd_request *tu_decode_ok(const char *json)
{
    partd_problem pb;
    partd_problem_init(&pb);
    partd_request *req = NULL;
    int rc = partd_request_decode(json, strlen(json), NULL, &req, &pb);
    if (rc != PARTD_OK) {
        char *s = partd_problem_to_json(&pb, NULL);
        fprintf(stderr, "unexpected problem: %s\n", s ? s : "?");
        free(s);
    }
    partd_problem_free(&pb);
    assert_int_equal(rc, PARTD_OK);
    assert_non_null(req);
    return req;
}

void tu_decode_fail(const char *json, int expected_rc, partd_problem *pb)
{
    partd_problem_init(pb);
    partd_request *req = NULL;
    int rc = partd_request_decode(json, strlen(json), NULL, &req, pb);
    assert_null(req);
    assert_int_equal(rc, expected_rc);
}

void tu_assert_error(const partd_problem *pb, const char *pointer, const char *needle)
{
    for (uint32_t i = 0; i < pb->n_errors; i++)
        if (strcmp(pb->errors[i].pointer, pointer) == 0 &&
            strstr(pb->errors[i].message, needle))
            return;
    fprintf(stderr, "no error at '%s' containing '%s'; errors were:\n", pointer, needle);
    for (uint32_t i = 0; i < pb->n_errors; i++)
        fprintf(stderr, "  %s: %s\n", pb->errors[i].pointer, pb->errors[i].message);
    fail();
}

int64_t tu_problem_member(const partd_problem *pb, const char *name)
{
    for (uint32_t i = 0; i < pb->n_members; i++)
        if (strcmp(pb->members[i].name, name) == 0)
            return pb->members[i].value;
    fail_msg("the problem has no member %s", name);
    return -1;
}

char *tu_plan_json(const char *request_json, int *rc, partd_problem *pb)
{
    partd_problem_init(pb);
    partd_request *req = NULL;
    partd_plan *plan = NULL;
    char *out = NULL;
    *rc = partd_request_decode(request_json, strlen(request_json), NULL, &req, pb);
    if (*rc == PARTD_OK)
        *rc = partd_plan_run(req, NULL, &plan, pb);
    if (*rc == PARTD_OK) {
        out = partd_result_to_json(req, plan, NULL);
        assert_non_null(out);
    }
    partd_plan_free(plan);
    partd_request_free(req);
    return out;
}
