#!/usr/bin/env python3
"""Runs `python -m partd.exporter` from the tree (the package is python/partd).

Kept so that `python3 tools/partd_export.py ...` goes on working; new code
imports `partd.exporter` (PYTHONPATH=python, or the installed package)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from partd.exporter import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
