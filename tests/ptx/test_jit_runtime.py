"""The kernels' runtime object (gdevd/gpu/ptx/jit/runtime.py): built once per cache and
salt, checked against its summary (a damaged one is built again, never loaded), its code
no longer in the kernels' objects, and the compiled kernels running through it.  Real
compilers throughout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import runtime

from .helpers import Device

ROOT = Path(__file__).resolve().parents[2]
MADD = (ROOT / "kernels" / "madd.ptx").read_text()
# the scheduler's and the out-of-line translation's functions (scheduler.h, xlate_rt.h)
RUNTIME_ONLY = ("run_slots", "pick", "block_init", "live_lanes", "g_slow", "xlate_listed",
                "xlate_any", "xlate_each")
pytestmark = [pytest.mark.parametrize("engine", ["jit"], indirect=True),
              pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nm") is None,
                                 reason="needs a C compiler and nm")]


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """An empty cache root, and no runtime remembered by this process."""
    root = tmp_path / "cache"
    monkeypatch.setenv("GDEV_JIT_CACHE", str(root))
    monkeypatch.setattr(runtime, "_known", {})
    return root


def _madd_runs(text: str = MADD) -> None:
    mod = load_module(text, "madd")
    mod.start_compile(wait=True)
    assert mod.jit.engine_of("add") == "jit", mod.jit.compiled.rejected
    dev, n = Device(), 1024
    a, b = np.arange(n, dtype=np.uint32), np.arange(n, dtype=np.uint32) * 7
    pa, pb, pc = dev.put(a), dev.put(b), dev.alloc(4 * n)
    dev.launch(mod, "add", (n // 256,), (256,), pa, pb, pc, n)
    assert (dev.get(pc, n, np.uint32) == a + b).all()


def _symbols(so: Path) -> set[str]:
    out = subprocess.run(["nm", str(so)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split(".")[0] for line in out.splitlines() if line.strip()}


def test_built_once_and_not_in_the_kernels(cache_root):
    _madd_runs()
    (rt,) = cache_root.glob("rt/*/runtime.so")
    assert (rt.parent / "runtime.sum").exists()
    assert set(RUNTIME_ONLY) <= _symbols(rt) and "gdev_jit_runtime" in _symbols(rt)
    (obj,) = cache_root.glob("obj/*/*.so")
    assert not set(RUNTIME_ONLY) & _symbols(obj)
    made = rt.stat().st_mtime_ns
    _madd_runs(MADD + "\n// another module\n")            # a second build: no second runtime
    assert rt.stat().st_mtime_ns == made and len(list(cache_root.glob("rt/*"))) == 1


CHILD = """
import sys
from tests.ptx.test_jit_runtime import _madd_runs
from gdevd.gpu.ptx import jit
jit.set_engine("jit")
_madd_runs(sys.argv[1])
print("ran")
"""


def test_a_damaged_runtime_is_built_again_not_loaded(cache_root):
    _madd_runs()
    (rt,) = cache_root.glob("rt/*/runtime.so")
    good = rt.read_bytes()
    rt.unlink()         # (a new file: this process keeps the one it mapped)
    rt.write_bytes(good[:100] + bytes(len(good) - 100))   # its code zeroed: would crash
    rt.chmod(0o600)
    # the next process to start finds it damaged, builds it again and runs on that
    r = subprocess.run([sys.executable, "-c", CHILD, MADD + "\n// a third module\n"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "GDEV_JIT_CACHE": str(cache_root),
                            "GDEV_TEST_WARM_JIT": "0"})
    assert r.returncode == 0 and r.stdout.split() == ["ran"], r.stderr[-2000:]
    assert rt.read_bytes() == good
