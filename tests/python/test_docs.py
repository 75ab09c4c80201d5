"""README.md says what partd does: every JSON block in it parses;
every `options` fragment, put into the examples/gpt2-sac request, validates
against the request schema and `partd plan` plans it; the device and node
fragments validate; the commands it shows exist."""

import copy
import json
import os
import re
import subprocess

import pytest

jsonschema = pytest.importorskip("jsonschema")

from partd import client as partd_client  # noqa: E402
from partd import exporter as partd_export  # noqa: E402
from partd_testlib import PYPKG, PYTHON, ROOT, reads_v3, run_plan  # noqa: E402

TOUR = os.path.join(ROOT, "README.md")
EXAMPLE = os.path.join(ROOT, "examples", "gpt2-sac", "request.json")
OPTION_KEYS = {"mode", "transfer_bytes_per_sec", "pipeline", "sac", "training", "result"}


def _blocks(lang):
    with open(TOUR, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


def _json_blocks():
    out = []
    for block in _blocks("json"):
        try:
            out.append(json.loads(block))
        except ValueError:
            out.append(json.loads("{" + block + "}"))  # a few members of a document
    return out


def _option_fragments():
    return [b for b in _json_blocks() if set(b) <= OPTION_KEYS]


def _whole_requests():
    """Blocks that are whole requests (graph, devices and options)."""
    return [b for b in _json_blocks() if {"graph", "devices", "options"} <= set(b)]


@pytest.fixture(scope="module")
def request_validator():
    with open(os.path.join(ROOT, "api", "schemas", "request.json")) as f:
        return jsonschema.Draft202012Validator(json.load(f))


@pytest.fixture(scope="module")
def example():
    with open(EXAMPLE) as f:
        return json.load(f)


def test_every_json_block_parses():
    assert len(_json_blocks()) >= 12


def test_option_fragments_cover_every_option():
    seen = set()
    for frag in _option_fragments() + [r["options"] for r in _whole_requests()]:
        for key, value in frag.items():
            seen.add(key)
            if isinstance(value, dict):
                seen |= {f"{key}.{k}" for k in value}
    with open(os.path.join(ROOT, "api", "schemas", "request.json")) as f:
        defs = json.load(f)["$defs"]
    every = set(defs["options"]["properties"])
    every |= {f"pipeline.{k}" for k in defs["pipeline_options"]["properties"]}
    every |= {f"sac.{k}" for k in defs["sac_options"]["properties"]}
    every |= {f"training.{k}" for k in defs["training_options"]["properties"]}
    every |= {f"result.{k}" for k in defs["options"]["properties"]["result"]["properties"]}
    assert every <= seen, every - seen


@pytest.mark.parametrize("index", range(len(_option_fragments())))
def test_option_fragment_plans(index, example, request_validator, partd_plan_bin):
    fragment = _option_fragments()[index]
    request = copy.deepcopy(example)
    request["options"] = fragment
    errors = [e.message for e in request_validator.iter_errors(request)]
    assert errors == [], fragment
    status, result, problem, stderr = run_plan(partd_plan_bin, request)
    if status == 2 and problem and problem.get("type", "").endswith("unsupported-mode"):
        pytest.skip("this partd build lacks the mode")
    assert status == 0, f"{fragment}: {stderr[:500]}"
    if "sac" in fragment:
        assert "sac" in result


@pytest.mark.parametrize("index", range(len(_whole_requests())))
def test_whole_requests_plan(index, request_validator, partd_plan_bin):
    request = _whole_requests()[index]
    errors = [e.message for e in request_validator.iter_errors(request)]
    assert errors == [], request["options"]
    status, result, problem, stderr = run_plan(partd_plan_bin, request)
    assert status == 0, stderr[:500]
    assert result["mode"] == request["options"].get("mode", "pipeline")


def test_tables_shown_are_what_partd_show_prints(partd_plan_bin):
    """A `partd show --format text` table in the README is what partd show
    prints today for one of the examples (a `% device` of - where the
    example gives device memory was not)."""
    import glob
    import subprocess
    with open(TOUR, encoding="utf-8") as f:
        fenced = re.split(r"^```[a-z]*\n", f.read(), flags=re.M)[1::2]  # inside the fences
    tables = [b for b in fenced if b.startswith("partd plan: ")]
    assert tables
    printed = []
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*", "result.json"))):
        proc = subprocess.run([partd_plan_bin, "show", "--format", "text", path],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        printed.append(proc.stdout)
    for table in tables:
        assert table in printed, table


def test_device_and_node_fragments_validate(example, request_validator):
    blocks = _json_blocks()
    device = next(b for b in blocks if "memory_bytes" in b and "name" in b)
    node = next(b for b in blocks if b.get("op") == "call_module")
    request = copy.deepcopy(example)
    request["devices"] = [device]
    request["graph"]["nodes"].insert(1, dict(node, name="tour_node", inputs=[]))
    assert [e.message for e in request_validator.iter_errors(request)] == []


def test_device_spec_in_the_tour():
    assert [(d["name"], d.get("speed")) for d in partd_export.parse_devices(
        "a100=80GiB,2x24GiB@0.5")] == [("a100", None), ("gpu1", 0.5), ("gpu2", 0.5)]


def test_client_commands_in_the_tour_exist():
    parser = partd_client.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for cmd in ("submit", "status", "wait", "result", "cancel", "list", "health", "version"):
        assert cmd in sub.choices


@pytest.mark.slow
def test_the_training_run_example_runs(partd_plan_bin):
    """examples/training-run/split_step.py, as the README runs it."""
    if not reads_v3(partd_plan_bin):
        pytest.skip("this partd build does not read contract v3's graph.batch_size and "
                    "weight_grad_ms, which the exporter writes")
    proc = subprocess.run([PYTHON, os.path.join(ROOT, "examples", "training-run", "split_step.py"),
                           partd_plan_bin], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": PYPKG}, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stage_2 on" in proc.stdout and "split: losses" in proc.stdout
