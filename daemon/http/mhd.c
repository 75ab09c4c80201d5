/*
 * mhd.c - libmicrohttpd loaded when the server starts (http_internal.h,
 * partd/dynlib.h): the offline commands never load it or its TLS stack.
 */
#include "http_internal.h"

PARTD_DYNLIB_DEFINE(partd__http_mhd, PARTD_MHD_SONAME, PARTD__HTTP_MHD_FUNCTIONS)
