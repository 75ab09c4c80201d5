/* cancel.c - cooperative cancellation; see cancel.h. */
#include "partd/cancel.h"

#include "partd/clock.h"
#include "partd/partd.h"

void partd_cancel_init(partd_cancel *c, int64_t timeout_ms)
{
    atomic_init(&c->cancelled, 0);
    c->deadline_ns = timeout_ms > 0 ? partd_clock_ns() + timeout_ms * 1000000 : 0;
}

int partd_cancel_check(const partd_cancel *c)
{
    if (!c)
        return PARTD_OK;
    if (atomic_load_explicit(&((partd_cancel *)c)->cancelled, memory_order_relaxed))
        return PARTD_ECANCELLED;
    if (c->deadline_ns && partd_clock_ns() >= c->deadline_ns)
        return PARTD_ETIMEOUT;
    return PARTD_OK;
}
