"""The C enum tables (lib/enums.h) name exactly what the contract's schemas
(api/schemas) allow, so the decoder, the cache key and the result can never
accept or print a name the contract does not have, or miss one it has."""

import json
import os
import re

from partd_testlib import ROOT

LISTS = {  # X-macro list in lib/enums.h -> schema property holding the enum
    "PARTD_OP_LIST": "op",
    "PARTD_MODE_LIST": "mode",
    "PARTD_BALANCE_BY_LIST": "balance_by",
    "PARTD_SCHEDULE_LIST": "schedule",
    "PARTD_CHECKPOINT_LIST": "checkpoint",
    "PARTD_DEVICE_ORDER_LIST": "device_order",
    "PARTD_RESULT_DETAIL_LIST": "detail",
}


def c_lists():
    with open(os.path.join(ROOT, "lib", "include", "partd", "enums.h"), encoding="utf-8") as f:
        text = f.read()
    lists = {}
    for m in re.finditer(r"#define (PARTD_\w+_LIST)\(X\)((?:[^\n]*\\\n)*[^\n]*)", text):
        lists[m.group(1)] = re.findall(r'X\(\w+, "([^"]+)"\)', m.group(2))
    return lists


def schema_enums(name, prop):
    """Every `enum` of a property named `prop` anywhere in the schema."""
    with open(os.path.join(ROOT, "api", "schemas", name), encoding="utf-8") as f:
        doc = json.load(f)
    found = []

    def walk(node):
        if isinstance(node, dict):
            props = node.get("properties", {})
            if isinstance(props, dict) and isinstance(props.get(prop), dict) \
                    and "enum" in props[prop]:
                found.append(props[prop]["enum"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


def test_every_list_parses():
    lists = c_lists()
    for name in list(LISTS) + ["PARTD_SAC_STATUS_LIST"]:
        assert lists.get(name), f"{name} not found in lib/enums.h"
        assert len(set(lists[name])) == len(lists[name]), f"{name} repeats a name"


def test_request_enums_match_the_contract():
    lists = c_lists()
    for c_name, prop in LISTS.items():
        enums = schema_enums("request.json", prop)
        assert enums, f"no enum for {prop} in request.json"
        for e in enums:
            assert e == lists[c_name], f"{prop}: schema {e} != lib/enums.h {lists[c_name]}"


def test_training_schedules_match_the_contract():
    """options.training.schedule takes PyTorch's names (lib/enums.h's
    training schedules), v2's two and auto; a result names PyTorch's."""
    names = c_lists()["PARTD_TRAINING_SCHEDULE_LIST"]
    assert names == ["GPipe", "1F1B", "LoopedBFS", "Interleaved1F1B", "InterleavedZeroBubble",
                     "ZBVZeroBubble", "DualPipeV"]
    with open(os.path.join(ROOT, "api", "schemas", "request.json"), encoding="utf-8") as f:
        one, many = json.load(f)["$defs"]["training_options"]["properties"]["schedule"]["oneOf"]
    assert one["enum"] == names + ["gpipe", "1f1b", "auto"]
    assert many["items"]["enum"] == names + ["gpipe", "1f1b"]
    # summary.schedule: a pipeline plan's (extension) or a training plan's
    assert schema_enums("result.json", "schedule") == [c_lists()["PARTD_SCHEDULE_LIST"] + names]


def test_result_mode_matches_the_contract():
    assert schema_enums("result.json", "mode") == [c_lists()["PARTD_MODE_LIST"]]


def test_sac_statuses_match_the_contract():
    names = set(c_lists()["PARTD_SAC_STATUS_LIST"])
    used = set()
    for e in schema_enums("result.json", "status"):
        used |= set(e)
    # "infeasible" is the planner's own state: it fails the plan (a problem
    # document with min_peak_memory_bytes) and never reaches a result.
    assert "infeasible" in names
    assert used == names - {"infeasible"}
