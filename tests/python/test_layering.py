"""The shape of the tree, read from the build's objects and the sources.

The architecture (README, "Map of the tree"): lib/ is the planning library,
daemon/ the service; each is a folder per subsystem. These rules keep it so:

- No two object files use each other's symbols, directly or around a loop.
- lib/ never uses a symbol of daemon/, and the daemon uses only what the
  library's public headers (lib/include/partd/) declare.
- A `partd__` symbol is private to the folder that defines it.
- Every global symbol says where it lives: `partd_` or `partd__`, then the
  file's name, that name without its folder's prefix, or a folder's name.
- lib/ includes only lib/ headers, the daemon from lib/ only the public
  ones; a folder's internal header (`*_internal.h`) is included only in its
  folder; the public headers include only each other.
- No folder holds more than 20 C files.
- Every header that declares functions (other than an internal one) has a
  test of its own, where the tests mirror the source folders.

The objects are those of the build that made PARTD_BIN (build/ by default).
"""

import os
import re
import subprocess

import pytest

from partd_testlib import ROOT, partd_bin

LAYERS = ("lib", "daemon")
PUBLIC = os.path.join("lib", "include", "partd")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
MAX_C_FILES = 20


def build_dir():
    return os.path.dirname(os.path.abspath(partd_bin()))


def objects():
    """{'lib/decode/decode_node': path of its .o} for every source of lib/ and daemon/."""
    found = {}
    for layer in LAYERS:
        for d, _, files in os.walk(os.path.join(ROOT, layer)):
            for f in files:
                if f.endswith(".c"):
                    unit = os.path.relpath(os.path.join(d, f[:-2]), ROOT)
                    found[unit] = os.path.join(build_dir(), unit + ".o")
    missing = [u for u, o in found.items() if not os.path.exists(o)]
    if missing:
        pytest.skip(f"objects not built in {build_dir()} (make first): {missing[:3]}")
    return found


def nm(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[-1].startswith("__"):
            continue  # the compiler's and the sanitizers' own (__odr_asan.x, __tsan_*)
        if len(parts) == 3 and parts[1] in "TDBRCG":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


@pytest.fixture(scope="module")
def symbols():
    units = objects()
    table = {u: nm(o) for u, o in units.items()}
    owner = {}
    for unit, (defined, _) in table.items():
        for s in defined:
            owner[s] = unit
    return table, owner


def folder(unit):
    return os.path.dirname(unit)


def edges(symbols):
    table, owner = symbols
    graph = {}
    for unit, (_, used) in table.items():
        for s in used:
            other = owner.get(s)
            if other and other != unit:
                graph.setdefault(unit, {}).setdefault(other, set()).add(s)
    return graph


def test_no_two_files_use_each_other(symbols):
    graph = edges(symbols)
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(symbols[0]):
        if v not in index:
            visit(v)
    detail = []
    for comp in cycles:
        for a in comp:
            for b in comp:
                if b in graph.get(a, {}):
                    detail.append(f"{a} -> {b}: {sorted(graph[a][b])[:4]}")
    assert cycles == [], "files that use each other:\n" + "\n".join(detail)


def test_lib_never_uses_the_daemon(symbols):
    bad = [(a, b, sorted(s)[:3]) for a, out in edges(symbols).items() for b, s in out.items()
           if a.startswith("lib/") and b.startswith("daemon/")]
    assert bad == []


def public_declarations():
    names = set()
    for f in os.listdir(os.path.join(ROOT, PUBLIC)):
        with open(os.path.join(ROOT, PUBLIC, f), encoding="utf-8") as h:
            names.update(re.findall(r"\b(partd_\w+)\s*\(", h.read()))
            h.seek(0)
            names.update(re.findall(r"\bextern\s+const\s+\w+\s+(partd_\w+)", h.read()))
    return names


def test_the_daemon_uses_only_the_public_library(symbols):
    public = public_declarations()
    bad = sorted({s for a, out in edges(symbols).items() if a.startswith("daemon/")
                  for b, syms in out.items() if b.startswith("lib/") for s in syms
                  if s not in public and not s.startswith("partd_enums_")})
    assert bad == [], f"the daemon uses library symbols no public header declares: {bad}"


def test_private_symbols_stay_in_their_folder(symbols):
    bad = [(a, b, sorted(x for x in s if x.startswith("partd__")))
           for a, out in edges(symbols).items() for b, s in out.items()
           if folder(a) != folder(b) and any(x.startswith("partd__") for x in s)]
    assert bad == [], f"partd__ symbols used outside their folder: {bad}"


def allowed_prefixes(unit):
    parts = unit.split("/")[1:]          # without the layer
    stem, folders = parts[-1], parts[:-1]
    names = {stem} | set(folders)
    names |= {stem[len(f) + 1:] for f in folders if stem.startswith(f + "_")}
    return names


def says_where_it_lives(unit, sym):
    stem = unit.rsplit("/", 1)[1]
    if unit == "daemon/cmd/main" and sym == "main":
        return True
    m = re.match(r"partd__?(\w+)$", sym)
    if not m:
        return False
    if stem == "partd":                  # the library's own file: its error texts
        return True
    rest = m.group(1) + "_"
    return any(rest.startswith(p + "_") for p in allowed_prefixes(unit))


def test_names_say_where_they_live(symbols):
    table, _ = symbols
    bad = sorted(f"{u}: {s}" for u, (defined, _) in table.items() for s in defined
                 if not says_where_it_lives(u, s))
    assert bad == [], "global symbols that do not carry their file's or folder's name:\n" + \
        "\n".join(bad)


def sources():
    for layer in LAYERS:
        for d, _, files in os.walk(os.path.join(ROOT, layer)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def resolve(src, inc):
    """The header a quoted include of src names, as a path from ROOT (None
    for a system or generated header)."""
    here = os.path.join(os.path.dirname(src), inc)
    if os.path.exists(os.path.join(ROOT, here)):
        return os.path.normpath(here)
    layer = src.split("/")[0]
    roots = [os.path.join("lib", "include"), "lib"] if layer == "lib" else \
        [os.path.join("lib", "include"), "daemon"]
    for r in roots:
        if os.path.exists(os.path.join(ROOT, r, inc)):
            return os.path.normpath(os.path.join(r, inc))
    return None


def includes():
    for src in sources():
        with open(os.path.join(ROOT, src), encoding="utf-8") as f:
            for inc in INCLUDE.findall(f.read()):
                yield src, inc, resolve(src, inc)


def test_includes_follow_the_layers():
    bad = []
    for src, inc, path in includes():
        if path is None:
            bad.append(f"{src}: \"{inc}\" is not a header of its layer")
        elif src.startswith("lib/") and not path.startswith("lib/"):
            bad.append(f"{src}: {path}")
        elif src.startswith("daemon/") and path.startswith("lib/") and \
                not path.startswith(PUBLIC + "/"):
            bad.append(f"{src}: {path} is internal to the library")
        elif src.startswith(PUBLIC + "/") and not path.startswith(PUBLIC + "/"):
            bad.append(f"{src}: a public header includes {path}")
        elif path.endswith("_internal.h") and os.path.dirname(path) != os.path.dirname(src):
            bad.append(f"{src}: {path} is internal to its folder")
    assert bad == [], "\n".join(bad)


def test_no_folder_over_twenty_c_files():
    big = []
    for layer in LAYERS:
        for d, _, files in os.walk(os.path.join(ROOT, layer)):
            n = sum(f.endswith(".c") for f in files)
            if n > MAX_C_FILES:
                big.append((os.path.relpath(d, ROOT), n))
    assert big == []


def declares_functions(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    # a prototype at the top level (inline bodies are indented)
    return re.search(r"^(?!static|#|typedef|\s)[\w \*]*\bpartd_\w+\s*\(", text, re.M) is not None


def implementations(stem):
    """The lib/ files named after a public header: x.c or <folder>_x.c."""
    return [f[:-2] for d, _, files in os.walk(os.path.join(ROOT, "lib")) for f in files
            if f == f"{stem}.c" or f.endswith(f"_{stem}.c")]


def test_every_unit_has_a_test_of_its_own():
    tests = {}
    for top in ("lib", "daemon"):
        for d, _, files in os.walk(os.path.join(ROOT, "tests", top)):
            for f in files:
                tests.setdefault(f, []).append(os.path.relpath(d, os.path.join(ROOT, "tests")))
    missing = []
    for src in sources():
        if not src.endswith(".h") or src.endswith("_internal.h") or not declares_functions(src):
            continue
        stem = os.path.basename(src)[:-2]
        where = tests.get(f"test_{stem}.c", [])
        if src.startswith(PUBLIC + "/"):
            # named after the header or after the file that implements it
            where = where + [w for unit in implementations(stem)
                             for w in tests.get(f"test_{unit}.c", [])]
            ok = any(w.startswith("lib/") for w in where)
        else:
            ok = os.path.dirname(src) in where
        if not ok:
            missing.append(src)
    assert missing == [], f"units without a test of their own (tests/<folder>/test_<unit>.c): " \
        f"{missing}"
