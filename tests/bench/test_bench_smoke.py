"""The copy and ioctl benchmarks run end to end in their short modes and write their section.

Numbers are never asserted (docs/benchmarks.md holds them, measured on a quiet machine); what
is checked is that each script still runs against the current code and reports every figure
its issue asks for.  The sections go to a scratch file (``GDEV_BENCH_DOC``), never to docs/.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from tests.daemon.conftest import _can_mount as can_mount

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def run_bench(tmp_path: pathlib.Path, script: str, *args: str) -> str:
    """Run scripts/bench/``script`` with ``args``; the section it wrote."""
    doc = tmp_path / "benchmarks.md"
    env = {**os.environ, "GDEV_BENCH_DOC": str(doc)}
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench" / script), *args,
                          "--write-docs"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=200)
    assert res.returncode == 0, f"{script} exited {res.returncode}:\n{res.stdout}{res.stderr}"
    text = doc.read_text()
    assert f"<!-- BEGIN {script} -->" in text and f"<!-- END {script} -->" in text
    return text


def test_memcpy_engine_reports_its_targets(tmp_path: pathlib.Path) -> None:
    text = run_bench(tmp_path, "memcpy_engine.py", "--size", "16", "--repeat", "1",
                     "--addresses", "65536")
    for figure in ("translate_v:", "htod: best pipelined", "dtoh: best pipelined"):
        assert figure in text


def test_a_benchmark_writes_nothing_unless_asked(tmp_path: pathlib.Path) -> None:
    doc = tmp_path / "benchmarks.md"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench" / "memcpy_engine.py"),
                        "--size", "16", "--repeat", "1", "--addresses", "65536"], cwd=ROOT,
                       env={**os.environ, "GDEV_BENCH_DOC": str(doc)}, capture_output=True,
                       text=True, timeout=200)
    assert r.returncode == 0, r.stderr
    assert "translate_v" in r.stdout and not doc.exists()


def test_memcpy_reports_cpy_and_translation(tmp_path: pathlib.Path) -> None:
    text = run_bench(tmp_path, "memcpy.py", "--size-mib", "16", "--reps", "1",
                     "--skip-sweeps")
    for figure in ("| pipelined |", "| unpipelined (pipeline 1) |", "| plain numpy copy |",
                   "- HtoD: pipelined takes", "- DtoH: pipelined takes",
                   "### Vector translation"):
        assert figure in text


def test_ioctl_reports_latency_spin_matrix_and_copies(tmp_path: pathlib.Path) -> None:
    if reason := can_mount():
        pytest.skip(f"ioctl.py mounts gdevd: {reason}")
    text = run_bench(tmp_path, "ioctl.py", "--size", "8", "--calls", "300")
    for figure in ("gquery latency: median", "calls/s with 4 client", "256-byte HtoD",
                   "256-byte DtoH", "pageable HtoD",
                   "pinned DtoH", "open + HELLO + close", "compute-bound kernel"):
        assert figure in text
    rows = [line for line in text.splitlines() if line.startswith("  | o")]
    assert len(rows) == (4 if os.geteuid() == 0 else 2), rows


def test_ecryptfs_reports_the_figures_and_where_a_read_goes(tmp_path: pathlib.Path) -> None:
    if reason := can_mount():
        pytest.skip(f"ecryptfs.py mounts gdevd: {reason}")
    text = run_bench(tmp_path, "ecryptfs.py", "--max-size", "8K", "--repeat", "1",
                     "--competitors", "1", "--loop-n", "200", "--fig10-size", "8K")
    for figure in ("### Fig. 8: read throughput", "### Fig. 9: write throughput",
                   "### Fig. 10: kcuda write throughput", "| priorities (40 vs 20) |",
                   "### Where a 1 MiB read goes"):
        assert figure in text
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in text.splitlines()
            if line.startswith("| cpu |") or line.startswith("| gpu (kcuda) |")}
    assert set(rows) == {"cpu", "gpu (kcuda)"}
    assert float(rows["gpu (kcuda)"][3]) > 0 and rows["cpu"][3].strip() == "", rows


def test_control_latency_reports_both_nicenesses(tmp_path: pathlib.Path) -> None:
    if reason := can_mount():
        pytest.skip(f"control_latency.py mounts gdevd: {reason}")
    text = run_bench(tmp_path, "control_latency.py", "--calls", "10", "--rounds", "1")
    rows = [line.split("|")[1].strip() for line in text.splitlines()
            if line.startswith("| ") and line[2].isdigit()]
    assert rows == ["5", "0"], text
