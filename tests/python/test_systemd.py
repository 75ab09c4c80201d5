"""systemd/partd.service: `systemd-analyze verify` is clean and the
hardening the unit promises is in place (skipped where systemd-analyze is
missing). @BINDIR@ is substituted into a temporary copy, as `make install`
does."""

import os
import re
import shutil
import stat
import subprocess

import pytest

from partd_testlib import ROOT, partd_bin

UNIT = os.path.join(ROOT, "systemd", "partd.service")
ANALYZE = shutil.which("systemd-analyze")


def _directives(text):
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "[")) and "=" in line:
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


@pytest.fixture
def installed_unit(tmp_path):
    """The unit with @BINDIR@ pointing at an executable partd."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    binary = bindir / "partd"
    if os.path.exists(partd_bin()):
        shutil.copy(partd_bin(), binary)
    else:
        binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    with open(UNIT, encoding="utf-8") as f:
        text = f.read().replace("@BINDIR@", str(bindir))
    unit = tmp_path / "partd.service"
    unit.write_text(text)
    return unit


def test_unit_has_the_promised_settings():
    with open(UNIT, encoding="utf-8") as f:
        d = _directives(f.read())
    assert d["Type"] == ["notify"]
    assert d["ExecStart"][0].startswith("@BINDIR@/partd serve ")
    for key in ("WatchdogSec", "DynamicUser", "StateDirectory", "ProtectSystem",
                "NoNewPrivileges", "SystemCallFilter", "RestrictAddressFamilies",
                "LimitNOFILE"):
        assert key in d, key
    assert d["DynamicUser"] == ["yes"] and d["NoNewPrivileges"] == ["yes"]
    assert d["ProtectSystem"] == ["strict"] and d["StateDirectory"] == ["partd"]
    assert set(d["RestrictAddressFamilies"][0].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert "--data-dir ${STATE_DIRECTORY}" in d["ExecStart"][0]


def test_makefile_install_substitutes_bindir():
    with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
        makefile = f.read()
    assert "s|@BINDIR@|$(PREFIX)/bin|g' systemd/partd.service" in makefile


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed")
def test_systemd_analyze_verify_is_clean(installed_unit):
    proc = subprocess.run([ANALYZE, "verify", "--man=no", str(installed_unit)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    complaints = [l for l in (proc.stdout + proc.stderr).splitlines() if "partd.service" in l]
    assert complaints == []


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed")
def test_exposure_level_is_low(installed_unit):
    proc = subprocess.run([ANALYZE, "security", "--offline=yes", "--no-pager",
                           str(installed_unit)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "offline" in proc.stderr:
        pytest.skip("this systemd-analyze cannot analyse units offline")
    m = re.search(r"Overall exposure level for partd\.service: ([0-9.]+)", proc.stdout)
    assert m, proc.stdout[-2000:] + proc.stderr
    assert float(m.group(1)) <= 2.0
