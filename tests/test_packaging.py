"""Installing gdev-py prints no warnings (setuptools' deprecations, editable-mode notices)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# pip's own notices about this machine's index configuration are not the project's.
MACHINE_NOTICES = ("Location 'file:",)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_editable_install_prints_no_warnings(tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--no-deps", "-e", str(ROOT)], capture_output=True, text=True,
                       timeout=540, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    assert r.returncode == 0, r.stderr
    lines = [line for line in (r.stdout + r.stderr).splitlines()
             if line.strip() and not any(n in line for n in MACHINE_NOTICES)]
    assert lines == [], "\n".join(lines)
