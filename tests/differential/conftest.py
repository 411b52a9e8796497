"""The differential tests need NVIDIA DALI 2.4 (CPU is enough): ``make test`` installs it in a site
dir of its own (requirements-dali.txt) and runs them; without DALI they are skipped.
``make differential`` runs only them and prints how many cases differ."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from _harness import HAVE_DALI, TALLY  # noqa: E402


def pytest_collection_modifyitems(items):
    skip = pytest.mark.skip(reason="NVIDIA DALI is not installed (pip install nvidia-dali-cuda130==2.4.0)")
    for item in items:
        if "differential" in str(item.fspath):
            item.add_marker(pytest.mark.dali)
            if not HAVE_DALI:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter):
    if TALLY["cases"]:
        terminalreporter.write_line(
            f"differential: {TALLY['cases']} cases compared with DALI 2.4, {TALLY['differ']} differ "
            f"({TALLY['known']} of them listed in tests/differential/known_differences.py)")
