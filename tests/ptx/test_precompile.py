"""``python -m gdevd.tools.precompile``: modules compiled into the cache ahead of time are
loaded from it by the next process, as a daemon's first load would be."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import build
from gdevd.tools import precompile

ROOT = Path(__file__).resolve().parents[2]
MADD = ROOT / "kernels" / "madd.ptx"
only_jit = pytest.mark.parametrize("engine", ["jit"], indirect=True)


def _run(cache: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gdevd.tools.precompile", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "GDEV_JIT_CACHE": str(cache)})


@pytest.mark.skipif(build.compiler() is None, reason="no C compiler")
@only_jit
def test_a_precompiled_module_is_loaded_compiled_from_the_cache(tmp_path, monkeypatch):
    first = _run(tmp_path, str(MADD))
    assert first.returncode == 0 and "madd.ptx: compiled in" in first.stdout, first
    assert "madd.ptx: cached" in _run(tmp_path, str(MADD)).stdout
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    mod = load_module(MADD.read_text(), "madd")
    mod.start_compile(wait=True)
    assert mod.jit.status == "jit" and mod.jit.compiled.cached


@only_jit
def test_a_file_that_does_not_load_is_reported_and_the_rest_compiled(tmp_path):
    bad = tmp_path / "bad.ptx"
    bad.write_text(".version 7.0\n.target sm_75\n.entry broken( { bogus; }\n")
    with pytest.raises(ValueError, match="bad.ptx: not loaded"):
        precompile.compile_file(bad)
    if build.compiler() is None:
        return
    out = _run(tmp_path / "cache", str(bad), str(MADD))
    assert out.returncode == 1
    assert "bad.ptx: not loaded" in out.stderr and "madd.ptx: compiled in" in out.stdout
