"""What ``make run`` tells a newcomer to try in another terminal works, as printed, against a
real gdevd (the in-process demo line is run by its own test)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.mount


def _hints(mount: str) -> list[str]:
    spec = importlib.util.spec_from_file_location("gdev_run", ROOT / "scripts" / "run.py")
    assert spec is not None and spec.loader is not None
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run.hints(pathlib.Path(mount))
    return [line.strip() for line in out.getvalue().splitlines()[1:]]


def test_every_hint_runs(gdevd) -> None:
    lines = [line for line in _hints(gdevd.mount) if "demo_inprocess" not in line]
    assert any("compute_bandwidth" in line for line in lines)
    assert any("gdev-smi" in line for line in lines)
    try:
        for line in lines:
            r = subprocess.run(["bash", "-c", line], capture_output=True, text=True,
                               timeout=120, cwd=ROOT)
            assert r.returncode == 0 and not r.stderr, (line, r.stderr)
    finally:
        for vd in (0, 1):  # back to 25 %: vd0 down first, so the total never passes 100
            with open(gdevd.proc_path(f"vd{vd}", "compute_bandwidth"), "w") as f:
                f.write("25\n")
