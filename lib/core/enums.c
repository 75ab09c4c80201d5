/* enums.c - the name tables of every named enumeration; see enums.h. */
#include "partd/enums.h"

#include <string.h>

#include "partd/partd.h"

#define PARTD_ENUM_NAME(id, name) name,

/* names[] is generated from the same list as the enum's constants, so
 * names[v] is the name of value v and the array has count + 1 entries. */
#define PARTD_ENUM_DEFINE(short, count, LIST, member)                         \
    static const char *const short##_names[] = {LIST(PARTD_ENUM_NAME) NULL};  \
    _Static_assert(sizeof short##_names / sizeof *short##_names == count + 1, \
                   #short ": one name per value");                            \
    const partd_enum_table partd_enums_##short##_table = {member, short##_names, count};

PARTD_ENUM_DEFINE(op, PARTD_OP_COUNT, PARTD_OP_LIST, "op")
PARTD_ENUM_DEFINE(mode, PARTD_MODE_COUNT, PARTD_MODE_LIST, "mode")
PARTD_ENUM_DEFINE(balance_by, PARTD_BALANCE_BY_COUNT, PARTD_BALANCE_BY_LIST, "balance_by")
PARTD_ENUM_DEFINE(schedule, PARTD_SCHEDULE_COUNT, PARTD_SCHEDULE_LIST, "schedule")
PARTD_ENUM_DEFINE(training_schedule, PARTD_TRAINING_SCHEDULE_COUNT,
                  PARTD_TRAINING_SCHEDULE_LIST, "schedule")
PARTD_ENUM_DEFINE(checkpoint, PARTD_CHECKPOINT_COUNT, PARTD_CHECKPOINT_LIST, "checkpoint")
PARTD_ENUM_DEFINE(device_order, PARTD_DEVICE_ORDER_COUNT, PARTD_DEVICE_ORDER_LIST,
                  "device_order")
PARTD_ENUM_DEFINE(result_detail, PARTD_RESULT_DETAIL_COUNT, PARTD_RESULT_DETAIL_LIST,
                  "detail")
PARTD_ENUM_DEFINE(sac_status, PARTD_SAC_STATUS_COUNT, PARTD_SAC_STATUS_LIST, "status")

const char *partd_enums_name(const partd_enum_table *t, int value)
{
    return value >= 0 && value < t->count ? t->names[value] : NULL;
}

int partd_enums_parse(const partd_enum_table *t, const char *name, int *out)
{
    if (!name)
        return PARTD_EINVALID;
    for (int i = 0; i < t->count; i++)
        if (strcmp(t->names[i], name) == 0) {
            *out = i;
            return PARTD_OK;
        }
    return PARTD_EINVALID;
}
