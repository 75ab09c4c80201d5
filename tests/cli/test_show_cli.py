"""`partd show` as a user runs it: every example result drawn as SVG and as
a table, stdin and -o, exit codes 1 (I/O) and 2 (not a result document), and
the picture rendered to pixels when rsvg-convert is installed.

Training plans made by partd's own planner for each of PyTorch's seven
schedules (and at 8 ranks x 4 stages each x 32 microbatches): one block per
action of the result's schedule.actions with its kind, rank, stage and
microbatch, every block inside the picture, each where a step simulator
written from the contract's words (tests/python/training_reference.py)
puts it, the last ending at step_ms, recomputation inside its B or I; the
table with its ranks and each rank's order."""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PARTD = os.environ.get("PARTD_BIN", os.path.join(ROOT, "build", "partd"))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "result.json")))
SVG_NS = "{http://www.w3.org/2000/svg}"
X0 = 206.0  # where the timeline's time 0 is

sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
import training_reference as ref  # noqa: E402
from test_export_cli import llm_request as export_llm_request  # noqa: E402


def run(args, stdin=None):
    return subprocess.run([PARTD] + args, input=stdin, capture_output=True)


def llm_request(schedule, ranks, microbatches, layers, memory_mib, virtual_stages=None):
    """The decoder-only model of test_export_cli (named as torchtitan names
    its modules) on `ranks` devices, every other one twice as fast, over a
    link slow enough to cost time."""
    req = export_llm_request(schedule, memory_mib << 20, virtual_stages, ranks=ranks,
                             layers=layers, microbatches=microbatches)
    for i, dev in enumerate(req["devices"]):
        if i % 2:
            dev["speed"] = 2.0
    req["options"]["transfer_bytes_per_sec"] = 2e10
    return req


def planned(tmp_path, *args, **kwargs):
    """The result partd's planner writes for llm_request(*args)."""
    req = tmp_path / "request.json"
    req.write_text(json.dumps(llm_request(*args, **kwargs)))
    out = tmp_path / "result.json"
    p = run(["plan", str(req), "-o", str(out)])
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def training_result(stages=4, microbatches=8, schedule="1f1b"):
    """A training result of contract v2 (no schedule.actions), shaped as
    that contract described it."""
    parts = []
    for s in range(stages):
        f = 1.0 + 0.25 * (s % 3)
        rc = 0.5 * f if s % 2 == 0 else 0.0
        parts.append({
            "id": s, "device": "gpu%d" % s, "logical_ids": [s], "nodes": ["n%d" % s],
            "memory_bytes": (3 + s % 4) << 30, "device_memory_bytes": 8 << 30,
            "param_bytes": 1 << 29, "compute_ms": 3 * f * microbatches,
            "transfer_in_bytes": (1 << 26) if s else 0, "time_ms": 3 * f + rc + 0.25,
            "inputs": [], "outputs": [], "parents": [], "children": [],
            "units": ["layers.%d" % (3 * s + k) for k in range(3)],
            "checkpointed": ["layers.%d" % (3 * s)] if rc else [],
            "in_flight": min(microbatches, stages - s) if schedule == "1f1b" else microbatches,
            "forward_ms": f, "backward_ms": 2 * f, "recompute_ms": rc, "comm_ms": 0.25})
    times = [p["time_ms"] for p in parts]
    step = sum(times) + (microbatches - 1) * max(times)
    return {"mode": "training", "partitions": parts, "tied_params": [],
            "summary": {"partitions": stages, "bottleneck_ms": max(times), "total_ms": step,
                        "transfer_bytes": 0, "peak_memory_bytes": 6 << 30, "optimal": True,
                        "step_ms": step, "bubble_fraction": 1 - microbatches * sum(times) / (stages * step),
                        "stages": stages, "microbatches": microbatches, "schedule": schedule,
                        "checkpoint": "auto", "unit_depth": 2}}


def assert_self_contained_svg(data):
    root = ET.fromstring(data)  # well-formed XML, or this raises
    assert root.tag == SVG_NS + "svg"
    for el in root.iter():
        assert el.tag != SVG_NS + "script"
        for name in el.attrib:
            assert "href" not in name and not name.startswith("on")
    assert b"url(" not in data and b"@import" not in data
    return root


def test_examples_draw_as_svg():
    assert EXAMPLES
    for path in EXAMPLES:
        r = run(["show", path])
        assert r.returncode == 0, (path, r.stderr)
        assert r.stderr == b""
        root = assert_self_contained_svg(r.stdout)
        result = json.load(open(path))
        texts = "".join(t.text or "" for t in root.iter(SVG_NS + "text"))
        for p in result["partitions"]:
            assert p["device"] in texts
        assert "memory (" in texts and "(ms)" in texts
        assert run(["show", path]).stdout == r.stdout  # same bytes every time


def test_examples_draw_as_text():
    for path in EXAMPLES:
        r = run(["show", path, "--format", "text"])
        assert r.returncode == 0, (path, r.stderr)
        lines = r.stdout.decode().splitlines()
        result = json.load(open(path))
        header = next(i for i, l in enumerate(lines) if l.split()[:2] in (["stage", "device"], ["part", "device"]))
        rows = lines[header + 1: header + 1 + len(result["partitions"])]
        # The time column: after stage, device, nodes, memory (two cells) and
        # % device; training tables carry more columns after it.
        for p, row in zip(result["partitions"], rows):
            cells = row.split()
            assert cells[0] == str(p["id"]) and cells[1] == p["device"]
            assert cells[2] == str(len(p["nodes"]))
            assert float(cells[6]) == pytest.approx(p["time_ms"], abs=5e-4)
        if "sac" in result:
            assert "activation checkpointing (SAC)" in r.stdout.decode()


def reference_ends(doc):
    """Every action's (start, end), by (stage, kind, microbatch), as the
    reference simulator written from the contract times the result's own
    figures."""
    parts, summary = doc["partitions"], doc["summary"]
    M = summary["microbatches"]
    c = {"never": 0, "except_last": M - 1}.get(summary["checkpoint"], M)
    lists = [[(int(j), k, int(m)) for j, k, m in (_split(a) for a in lst)]
             for lst in doc["schedule"]["actions"]]

    def dur(a):
        j, k, m = a
        p = parts[j]
        rec = p["recompute_ms"] if m < c else 0.0
        return {"F": p["forward_ms"], "B": p["backward_ms"] + rec,
                "I": p["input_grad_ms"] + rec, "W": p["weight_grad_ms"]}[k]

    end = ref.simulate(lists, len(parts), dur, [p["send_ms"] for p in parts])
    return {a: (e - dur(a), e) for a, e in end.items()}, c


def _split(action):
    for i, ch in enumerate(action):
        if ch in "FBIW":
            return action[:i], ch, action[i + 1:]
    raise AssertionError(action)


def check_picture(doc, svg):
    """The timeline of a v3 result against its own actions and the
    reference step model."""
    root = assert_self_contained_svg(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    rects = list(root.iter(SVG_NS + "rect"))
    for el in rects:  # every rect inside the picture
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        w, h = el.get("width"), el.get("height")
        if w.endswith("%"):
            continue
        assert 0 <= x and x + float(w) <= width + 0.05 and 0 <= y and y + float(h) <= height
    blocks = [el for el in rects if "data-rank" in el.attrib]
    at = {}
    for b in blocks:
        key = "%s%s%s" % (b.get("data-stage"), b.get("class"), b.get("data-microbatch"))
        assert b.get("class") in ("F", "B", "I", "W") and key not in at
        at[key] = b
    lists = doc["schedule"]["actions"]
    # one block per action, on its rank
    assert sorted(at) == sorted(a for lst in lists for a in lst)
    for r, lst in enumerate(lists):
        assert all(at[a].get("data-rank") == str(r) for a in lst)
    times, c = reference_ends(doc)
    step = doc["summary"]["step_ms"]
    assert max(e for _, e in times.values()) == pytest.approx(step, rel=1e-12)
    mark = float([el for el in root.iter(SVG_NS + "line") if el.get("class") == "mark"][-1].get("x1"))
    scale = (mark - X0) / step
    last = 0.0
    for key, b in at.items():
        j, k, m = _split(key)
        start, end = times[(int(j), k, int(m))]
        x, w = float(b.get("x")), float(b.get("width"))
        assert x == pytest.approx(X0 + start * scale, abs=0.11), key
        assert x + w == pytest.approx(X0 + end * scale, abs=0.11), key
        last = max(last, x + w)
    assert last == pytest.approx(mark, abs=0.051)  # the last block ends at step_ms
    # recomputation inside the B or I of a checkpointed microbatch
    bands = [el for el in rects if el.get("class") == "recomp"][1:]  # after the legend's
    want = [a for lst in lists for a in lst if _split(a)[1] in "BI" and int(_split(a)[2]) < c
            and doc["partitions"][int(_split(a)[0])]["recompute_ms"] * scale >= 0.3]
    assert len(bands) == len(want)
    for band in bands:
        x, w, y = float(band.get("x")), float(band.get("width")), band.get("y")
        assert any(b.get("x") == band.get("x") and b.get("y") == y and w <= float(b.get("width"))
                   and b.get("class") in "BI" for b in blocks)
    return root


@pytest.mark.parametrize("schedule,v,M,memory", [
    ("GPipe", None, 6, 3072), ("1F1B", None, 8, 3072), ("1F1B", None, 8, 800),
    ("LoopedBFS", 2, 4, 3072), ("Interleaved1F1B", 2, 8, 3072),
    ("InterleavedZeroBubble", 2, 8, 3072), ("ZBVZeroBubble", None, 8, 3072),
    ("DualPipeV", None, 8, 3072), ("DualPipeV", None, 8, 800)])
def test_training_timeline_of_every_schedule(schedule, v, M, memory, tmp_path):
    doc = planned(tmp_path, schedule, 4, M, 12, memory, v)
    assert doc["schedule"]["name"] == schedule
    if memory < 1000:  # tight enough that the planner checkpoints
        assert any(p["recompute_ms"] > 0 for p in doc["partitions"])
    out = tmp_path / "plan.svg"
    r = run(["show", str(tmp_path / "result.json"), "-o", str(out)])
    assert r.returncode == 0 and r.stdout == b"", r.stderr
    root = check_picture(doc, out.read_bytes())
    texts = " ".join("".join(t.itertext()) for t in root.iter(SVG_NS + "text"))
    assert "One training step: %s" % schedule in texts and "the result's step_ms" in texts
    assert "Memory and busy time per rank" in texts
    for rank in doc["ranks"]:
        assert rank["device"] in texts
    if shutil.which("rsvg-convert"):
        png = tmp_path / "plan.png"
        subprocess.run(["rsvg-convert", "-o", str(png), str(out)], check=True)
        assert png_pixels(png.read_bytes())[0] == 960


def test_training_timeline_at_8_ranks_4_stages_32_microbatches(tmp_path):
    doc = planned(tmp_path, "Interleaved1F1B", 8, 32, 40, 1300, 4)
    assert (doc["summary"]["stages"], doc["summary"]["virtual_stages"]) == (8, 4)
    assert any(p["checkpointed"] for p in doc["partitions"])
    r = run(["show", str(tmp_path / "result.json")])
    assert r.returncode == 0, r.stderr
    root = check_picture(doc, r.stdout)
    assert len(r.stdout) < 1_000_000
    # a lane per stage: each rank's stages labelled at their lanes' left
    labels = [t.text for t in root.iter(SVG_NS + "text")]
    for j in range(32):
        assert str(j) in labels


def test_training_table_of_a_planned_result(tmp_path):
    doc = planned(tmp_path, "ZBVZeroBubble", 4, 8, 12, 3072)
    r = run(["show", str(tmp_path / "result.json"), "--format", "text"])
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    lines = text.splitlines()
    assert lines[0] == "partd plan: training, 8 stages on 4 ranks"
    assert "ZBVZeroBubble, 2 stages per rank, 8 microbatches" in lines[1]
    assert "ms, the result's step_ms" in lines[2]
    assert "%.3f" % doc["summary"]["step_ms"] in lines[1]
    head = lines.index(next(l for l in lines if l.split()[:2] == ["rank", "device"]))
    for rank, row in zip(doc["ranks"], lines[head + 1:head + 5]):
        cells = row.split()
        assert cells[0] == str(rank["rank"]) and cells[1] == rank["device"]
        assert float(cells[7]) == pytest.approx(rank["busy_ms"], abs=5e-4)
        assert cells[9:] == [str(j) for j in rank["stages"]]
    # each rank's order, expanded back from its runs
    orders = []
    for l in lines[next(i for i, l in enumerate(lines) if l.startswith("  rank 0:")):]:
        if l.startswith("  rank "):
            orders.append(l.split(":", 1)[1].split())
        elif l.startswith("   "):  # a long order goes on, indented, on the next lines
            assert len(l) <= 100
            orders[-1] += l.split()
        else:
            break
    assert len(orders) == 4
    for lst, runs in zip(doc["schedule"]["actions"], orders):
        expanded = []
        for run_ in runs:
            j, k, m = _split(run_)
            if "-" in m:
                a, b = map(int, m.split("-"))
                step = 1 if b >= a else -1
                expanded += ["%s%s%d" % (j, k, i) for i in range(a, b + step, step)]
            else:
                expanded.append(run_)
        assert expanded == lst


def test_training_table_lists_checkpointed_units():
    r = run(["show", "--format", "text"], stdin=json.dumps(training_result()).encode())
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert "1f1b, 8 microbatches" in text
    assert "1/3: layers.0" in text and "37.5%" in text
    # a v2 result: no schedule.actions, no timeline
    svg = run(["show"], stdin=json.dumps(training_result()).encode()).stdout
    assert b"data-microbatch" not in svg and b"no schedule.actions" in svg


def test_fx_mode_result_shows_partitions_and_fx_cost():
    # FX's partitions form a DAG, not a line of stages; the table says so and
    # prints summary.latency_ms, FX's own cost of them.
    nodes = [{"name": "x", "op": "placeholder", "output_bytes": 8}]
    for i, name in enumerate("abc"):
        nodes.append({"name": name, "op": "call_function", "inputs": [nodes[-1]["name"]],
                      "output_bytes": 8, "latency_ms": 1.0 + i})
    nodes.append({"name": "out", "op": "output", "inputs": ["c"]})
    request = {"graph": {"name": "chain", "nodes": nodes},
               "devices": [{"name": "d0", "memory_bytes": 20}, {"name": "d1", "memory_bytes": 20},
                           {"name": "d2", "memory_bytes": 20}],
               "options": {"mode": "sparse_nn", "transfer_bytes_per_sec": 8000}}
    planned = run(["plan", "-"], json.dumps(request).encode())
    assert planned.returncode == 0, planned.stderr
    result = json.loads(planned.stdout)
    r = run(["show", "-", "--format", "text"], planned.stdout)
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    n = len(result["partitions"])
    assert text.startswith("partd plan: sparse_nn, %d partition%s\n" % (n, "s" * (n != 1)))
    assert "get_latency_of_partitioned_graph): %.3f ms" % result["summary"]["latency_ms"] in text
    assert any(line.split()[:2] == ["part", "device"] for line in text.splitlines())


def test_missing_file_exits_1(tmp_path):
    r = run(["show", str(tmp_path / "nope.json")])
    assert r.returncode == 1
    assert b"cannot read" in r.stderr


def test_unwritable_output_exits_1(tmp_path):
    r = run(["show", EXAMPLES[0], "-o", str(tmp_path / "no" / "such" / "plan.svg")])
    assert r.returncode == 1
    assert b"cannot write" in r.stderr


@pytest.mark.parametrize("body, says", [
    (b"{not json", b"not JSON"),
    (b"[1, 2]", b"must be a JSON object"),
    (json.dumps({"graph": {"nodes": []}, "devices": []}).encode(),
     b"not a result document: this is a request (it has /graph); `partd plan REQUEST.json` "
     b"makes a result from it"),
    (json.dumps({"devices": []}).encode(), b"/mode is missing"),
    (json.dumps(dict(training_result(), summary={"bottleneck_ms": 1, "peak_memory_bytes": 1})).encode(),
     b"/summary/microbatches is missing"),
])
def test_not_a_result_exits_2_with_one_line(body, says):
    r = run(["show"], stdin=body)
    assert r.returncode == 2
    assert r.stdout == b""
    assert says in r.stderr
    assert r.stderr.startswith(b"partd show: ") and r.stderr.count(b"\n") == 1


def test_bad_format_is_a_usage_error():
    r = run(["show", EXAMPLES[0], "--format", "png"])
    assert r.returncode == 1
    assert b"--format" in r.stderr


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def png_pixels(data):
    """Decodes an 8-bit RGB or RGBA PNG into (width, height, rows of bytes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    assert depth == 8 and ctype in (2, 6)
    bpp = 4 if ctype == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            line[i] = (line[i] + [0, a, b, (a + b) // 2, paeth(a, b, c)][f]) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="rsvg-convert (librsvg2-bin) not installed")
def test_picture_is_not_blank(tmp_path):
    svg = tmp_path / "plan.svg"
    png = tmp_path / "plan.png"
    planned(tmp_path, "Interleaved1F1B", 4, 8, 12, 3072, 2)
    assert run(["show", str(tmp_path / "result.json"), "-o", str(svg)]).returncode == 0
    subprocess.run(["rsvg-convert", "-o", str(png), str(svg)], check=True)
    width, height, bpp, rows = png_pixels(png.read_bytes())
    assert width == 960 and height > 400
    colours, inked = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != b"\xff\xff\xff"
    assert inked > 0.05 * (len(rows[::4]) * width // 4)
    assert len(colours) > 8


def summary_detail(result):
    """The result as options.result.detail "summary" gives it."""
    doc = json.loads(json.dumps(result))
    for p in doc["partitions"]:
        for k in ("nodes", "inputs", "outputs"):
            p.pop(k, None)
    for b in doc.get("boundaries", []):
        b.pop("tensors", None)
    return doc


def test_summary_detail_results_draw():
    """A result without node lists is drawn (the node counts are left out)."""
    docs = [summary_detail(json.load(open(p))) for p in EXAMPLES]
    docs.append(summary_detail(training_result(3, 4)))
    for doc in docs:
        body = json.dumps(doc).encode()
        r = run(["show", "-"], stdin=body)
        assert r.returncode == 0, r.stderr
        root = assert_self_contained_svg(r.stdout)
        texts = "".join(t.text or "" for t in root.iter(SVG_NS + "text"))
        for p in doc["partitions"]:
            assert p["device"] in texts
        t = run(["show", "-", "--format", "text"], stdin=body)
        assert t.returncode == 0, t.stderr
        for p in doc["partitions"]:
            assert p["device"] in t.stdout.decode()
