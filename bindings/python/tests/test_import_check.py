"""`from concord_openhands import ConcordCondenser` where it cannot work says what to install
(issue 37: on Python 3.11 it failed with `No module named 'httpx'`). Stdlib only: it runs under
the 3.11 fallback venv too, where the first test is the real case."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import concord_openhands

PKG = Path(__file__).resolve().parents[1]
IMPORT = f"import sys; sys.path.insert(0, {str(PKG)!r}); from concord_openhands import ConcordCondenser"


def import_condenser(python: str) -> subprocess.CompletedProcess[str]:
    # -S: no site-packages, so no SDK and no httpx, whatever this machine has installed.
    return subprocess.run([python, "-S", "-c", IMPORT], capture_output=True, text=True, timeout=60)


def older_python() -> str | None:
    """An interpreter older than 3.12: this one, or python3.11 / 3.10 / 3.9 on PATH."""
    if sys.version_info < (3, 12):
        return sys.executable
    for cand in ("python3.11", "python3.10", "python3.9"):
        exe = shutil.which(cand)
        if exe and subprocess.run([exe, "-c", "import sys; sys.exit(sys.version_info >= (3, 12))"],
                                  capture_output=True).returncode == 0:
            return exe
    return None


def test_old_python_says_which_python_and_what_to_install():
    python = older_python()
    if python is None:
        pytest.skip("no Python older than 3.12 on this machine (python3.11, 3.10 or 3.9)")
    r = import_condenser(python)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: concord_openhands.ConcordCondenser needs Python 3.12 or newer"), r.stderr
    assert concord_openhands.SDK_PINS in last and "pip install" in last, last
    assert "httpx" not in r.stderr, r.stderr


def test_no_sdk_says_what_to_install():
    if sys.version_info < (3, 12):
        pytest.skip("the SDK's absence is the question on Python 3.12+ only")
    r = import_condenser(sys.executable)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert re.match(r"ImportError: concord_openhands\.ConcordCondenser needs the OpenHands SDK "
                    r"\(No module named '(httpx|pydantic|openhands)'\): pip install ", last), r.stderr
    assert last.endswith(concord_openhands.SDK_PINS), last


def test_the_stdlib_core_imports_anywhere():
    python = older_python() or sys.executable
    r = subprocess.run([python, "-S", "-c", f"import sys; sys.path.insert(0, {str(PKG)!r}); "
                        "from concord_openhands import ConcordSession, find_binary"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_hint_pins_are_the_tested_ones():
    pins = dict(line.split("==") for line in (PKG / "requirements-test.txt").read_text().split()
                if line.startswith("openhands-"))
    assert concord_openhands.SDK_PINS == f"openhands-sdk=={pins['openhands-sdk']} openhands-tools=={pins['openhands-tools']}"


def test_wheel_metadata_requires_the_python_the_sdk_needs():
    meta = (PKG / "pyproject.toml").read_text()
    assert re.search(r'^requires-python = ">=3\.12"$', meta, re.M), "requires-python must say 3.12 (the SDK's)"
