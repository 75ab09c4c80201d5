"""Fixtures of the Python tool tests (helpers: partd_testlib.py).

Tests that need the partd binary skip when it is missing or cannot plan
yet, and fail when `partd plan` breaks.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from partd_testlib import TINY_REQUEST, partd_bin, run_plan  # noqa: E402


@pytest.fixture(scope="session")
def partd_plan_bin():
    """The partd binary; skips when it is not built or cannot plan size_based
    yet, fails when `partd plan` breaks on a tiny request."""
    binary = partd_bin()
    if not os.path.exists(binary):
        pytest.skip(f"partd binary not built ({binary}); set PARTD_BIN")
    status, result, problem, stderr = run_plan(binary, TINY_REQUEST)
    if status == 2 and problem and problem.get("type", "").endswith("unsupported-mode"):
        pytest.skip("this partd build cannot plan size_based yet")
    if status != 0 or result is None:
        pytest.fail(f"`partd plan` failed on a tiny request (exit {status}: {stderr.strip()[:500]})")
    return binary
