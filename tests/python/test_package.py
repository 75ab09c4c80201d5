"""The Python package `partd` (python/partd): importable from the tree with
PYTHONPATH=python, runnable as `python -m partd.client` / `python -m
partd.exporter`, installable offline into a venv that sees Debian's torch,
and the old tools/ commands still work."""

import os
import shutil
import subprocess
import sys

import pytest

from partd_testlib import PYPKG, PYTHON, ROOT


def _run(args, env=None, cwd=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("module,prog", [("partd.client", "partd-client"),
                                         ("partd.exporter", "partd-export")])
def test_python_dash_m_runs_the_command_line(module, prog):
    proc = _run([PYTHON, "-m", module, "--help"], env={"PYTHONPATH": PYPKG})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {prog}")


@pytest.mark.parametrize("tool,prog", [("partd_client.py", "partd-client"),
                                       ("partd_export.py", "partd-export")])
def test_tools_wrappers_keep_working(tool, prog):
    proc = _run([PYTHON, os.path.join(ROOT, "tools", tool), "--help"], cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {prog}")


def test_the_client_needs_no_torch():
    code = "import sys, partd, partd.client; print('torch' in sys.modules)"
    proc = _run([PYTHON, "-c", code], env={"PYTHONPATH": PYPKG})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.slow
def test_installs_offline_into_a_venv_that_sees_debians_torch(tmp_path):
    if _run([PYTHON, "-c", "import venv, setuptools, pip"]).returncode != 0:
        pytest.fail("python3-venv, python3-setuptools and python3-pip are needed (make deps)")
    # a copy: building in place would leave build/ and *.egg-info in the tree
    src = tmp_path / "src"
    shutil.copytree(PYPKG, src, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    proc = _run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)])
    assert proc.returncode == 0, proc.stderr
    env = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""}
    proc = _run([str(venv / "bin" / "pip"), "install", "--no-build-isolation", str(src)],
                env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for script, prog in (("partd-client", "partd-client"), ("partd-export", "partd-export")):
        proc = _run([str(venv / "bin" / script), "--help"], env=env, cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: {prog}")
    code = ("import partd.apply, partd.runtime, partd.exporter, torch; "
            "print(partd.exporter.__file__); print(torch.__file__)")
    proc = _run([str(venv / "bin" / "python"), "-c", code], env=env, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    package_file, torch_file = proc.stdout.split()
    assert package_file.startswith(str(venv))  # the installed copy, not the tree's
    assert torch_file.startswith("/usr/lib/python3/dist-packages/")  # Debian's torch
    assert sys.version_info >= (3, 9)
