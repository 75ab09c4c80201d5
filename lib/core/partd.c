/* partd.c - status code texts; see partd.h. */
#include "partd/partd.h"

const char *partd_strerror(int status)
{
    switch (status) {
    case PARTD_OK: return "ok";
    case PARTD_ENOMEM: return "out of memory";
    case PARTD_EMALFORMED: return "malformed JSON";
    case PARTD_EINVALID: return "invalid request";
    case PARTD_EINFEASIBLE: return "no feasible plan";
    case PARTD_ECANCELLED: return "cancelled";
    case PARTD_ETIMEOUT: return "timed out";
    case PARTD_EINTERNAL: return "internal error";
    case PARTD_EIO: return "input/output error";
    case PARTD_ETOOBIG: return "request too large";
    }
    return "unknown error";
}
