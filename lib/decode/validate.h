/*
 * validate.h - the checks that need the whole decoded request.
 *
 * The contract answers every check that depends on the request alone with a
 * 422 before a job is accepted. Most are made while decoding (decode_*.c);
 * this unit owns the ones that need the graph linked and the options read
 * together: cut_after names against the graph (mode pipeline), options.sac
 * against graph.modules (modules present, ac_units and fsdp_units naming
 * modules, the root an FSDP unit, the SAC model's byte figures within
 * 2^53). partd_request_decode runs it last, so the
 * daemon's POST path and `partd plan` both refuse such a request up front;
 * the planners keep their own checks only as a guard.
 *
 * Errors: PARTD_OK; PARTD_EINVALID with every violation added to the problem
 * (the same pointers and messages the planners use); PARTD_ENOMEM.
 * Nothing is allocated that outlives the call.
 */
#ifndef PARTD_VALIDATE_H
#define PARTD_VALIDATE_H

#include "partd/model.h"
#include "partd/problem.h"

int partd__validate_request(const partd_request *req, partd_problem *pb);

#endif
