"""lib/'s include structure (architecture: lib/ is a DAG below daemon/).

- lib/ never includes a daemon/ header: every quoted include in lib/ names a
  file in lib/.
- The planners' headers take the plan's types from plan_types.h, never from
  plan.h (the dispatcher); only plan.c includes the mode planners.
- The include graph of lib/ headers has no cycle.
"""

import os
import re

from partd_testlib import ROOT

LIB = os.path.join(ROOT, "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MODE_PLANNERS = {"pipeline.h", "size_based.h", "training.h"}


def lib_files():
    return sorted(f for f in os.listdir(LIB) if f.endswith((".c", ".h")))


def includes(name):
    with open(os.path.join(LIB, name), encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def test_lib_includes_only_lib_headers():
    local = set(lib_files())
    bad = [(f, inc) for f in lib_files() for inc in includes(f) if inc not in local]
    assert bad == [], f"lib/ includes headers outside lib/: {bad}"


def test_no_lib_header_includes_the_dispatcher():
    bad = [f for f in lib_files() if f.endswith(".h") and "plan.h" in includes(f)]
    assert bad == [], f"headers including plan.h (use plan_types.h): {bad}"


def test_only_the_dispatcher_includes_the_mode_planners():
    bad = [(f, inc) for f in lib_files() for inc in includes(f)
           if inc in MODE_PLANNERS and f not in ("plan.c", inc.replace(".h", ".c"))]
    assert bad == [], f"mode planners included outside plan.c: {bad}"


def test_lib_header_graph_is_acyclic():
    graph = {f: [i for i in includes(f) if i.endswith(".h")]
             for f in lib_files() if f.endswith(".h")}
    state = {}

    def visit(node, path):
        if state.get(node) == "done":
            return
        assert state.get(node) != "open", f"include cycle: {' -> '.join(path + [node])}"
        state[node] = "open"
        for nxt in graph.get(node, []):
            visit(nxt, path + [node])
        state[node] = "done"

    for name in graph:
        visit(name, [])
