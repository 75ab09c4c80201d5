"""`partd show` as a user runs it: every example result drawn as SVG and as
a table, stdin and -o, exit codes 1 (I/O) and 2 (not a result document), and
the picture rendered to pixels when rsvg-convert is installed."""
import glob
import json
import os
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PARTD = os.environ.get("PARTD_BIN", os.path.join(ROOT, "build", "partd"))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "*", "result.json")))
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(args, stdin=None):
    return subprocess.run([PARTD] + args, input=stdin, capture_output=True)


def training_result(stages=4, microbatches=8, schedule="1f1b"):
    """A training result shaped as the contract describes it."""
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


def test_training_timeline_from_stdin_to_file(tmp_path):
    out = tmp_path / "plan.svg"
    doc = training_result(4, 6, "gpipe")
    r = run(["show", "-", "-o", str(out)], stdin=json.dumps(doc).encode())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    root = assert_self_contained_svg(out.read_bytes())
    blocks = [el for el in root.iter(SVG_NS + "rect") if "data-stage" in el.attrib]
    assert len([b for b in blocks if b.get("class") == "fwd"]) == 4 * 6
    assert len([b for b in blocks if b.get("class") == "bwd"]) == 4 * 6
    pairs = {(b.get("class"), int(b.get("data-stage")), int(b.get("data-microbatch"))) for b in blocks}
    assert len(pairs) == 2 * 4 * 6
    # gpipe: on every stage all forwards come before the first backward
    for s in range(4):
        lane = sorted((float(b.get("x")), b.get("class")) for b in blocks if b.get("data-stage") == str(s))
        assert [c for _, c in lane] == ["fwd"] * 6 + ["bwd"] * 6


def test_training_table_lists_checkpointed_units():
    r = run(["show", "--format", "text"], stdin=json.dumps(training_result()).encode())
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert "1f1b, 8 microbatches" in text
    assert "1/3: layers.0" in text and "37.5%" in text


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
    (json.dumps({"graph": {"nodes": []}, "devices": []}).encode(), b"/mode is missing"),
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
    assert run(["show", "-", "-o", str(svg)], stdin=json.dumps(training_result()).encode()).returncode == 0
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
