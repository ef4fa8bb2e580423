"""Running a public-style CUDA program on both engines and comparing the outcomes.

A *program* is a host function ``host(gpu, mod) -> {name: array}``: it allocates device
memory on ``gpu`` (a :class:`Gpu`), launches kernels of the loaded module ``mod`` (host
loops included, as BFS or a global bitonic sort drive theirs) and returns what it read
back.  :func:`run_both` runs it once on the interpreter (the reference engine) and once
on the compiled engine (forced: the module compiles before its first launch, and every
kernel of the module must have been translated), and requires byte-identical results
except for the names given as ``unordered`` (float atomics whose order differs between
runs, compared by the caller against a tolerance instead).  NaN words match whatever
their sign and payload (docs/ptx-engine.md, Known gaps).
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module

from ..ptx.helpers import Device

HERE = Path(__file__).resolve().parent
CUDA, PTX = HERE / "cuda", HERE / "ptx"

# The nvcc flags of each committed variant (tests/programs/ptx/<file>.<variant>.ptx);
# `python -m tests.programs.runner` rebuilds them.  A variant is committed only where its
# PTX differs from sm75's (sm80 where the source has sm_80 paths, fast where
# -use_fast_math changes the arithmetic).
VARIANTS = {"sm75": ["-arch=sm_75", "-O3"], "fast": ["-arch=sm_75", "-O3", "-use_fast_math"],
            "sm80": ["-arch=sm_80", "-O3"], "sm90": ["-arch=sm_90", "-O3"],
            "debug": ["-arch=sm_75", "-G"]}
# -G builds of the math library are ~280 KB of PTX that take a minute to compile
NO_DEBUG = {"mathlib", "pipeline"}  # pipeline: 600 KB, minutes of cc
# mathlib's sm_90 PTX differs from sm_80's only in instruction order, at 20 s of cc a variant
NO_SM90 = {"mathlib"}
SLOW_STEMS = {"mathlib"}

Host = Callable[["Gpu", object], dict[str, np.ndarray]]


@functools.cache
def module(name: str):
    """tests/programs/ptx/<name>.ptx loaded once (both engines share the module)."""
    return load_module((PTX / f"{name}.ptx").read_text(), name)


def variants(stem: str) -> list[str]:
    """The committed variants of tests/programs/cuda/<stem>.cu, as module names."""
    return sorted(p.stem for p in PTX.glob(f"{stem}.*.ptx"))


def params(stem: str, debug: bool = True) -> list:
    """The variants of ``stem`` as pytest parameters (``debug=False``: without -G): sm75 and
    sm80 in the quick suite, the others marked slow (each module costs a cold C compile of
    several seconds; the math library's twenty)."""
    quick = {"sm75", "sm80", "sm90"} if stem not in SLOW_STEMS else set()
    return [v if v.split(".")[1] in quick else pytest.param(v, marks=pytest.mark.slow)
            for v in variants(stem) if debug or not v.endswith(".debug")]


class Gpu(Device):
    """The tests' device with the launch and symbol helpers programs need."""

    def __init__(self, mod) -> None:
        super().__init__(32 << 20)
        self.mod = mod
        self.data_base = self.load_data(mod)
        self.kernels: set[str] = set()

    def run(self, kernel: str, grid, block, *args, shared: int = 0) -> None:
        """Launch ``kernel`` (a prefix of a mangled name is enough) to completion."""
        name = kernel_name(self.mod, kernel)
        self.kernels.add(name)
        self.launch(self.mod, name, grid, block, *args, shared=shared,
                    data_base=self.data_base)

    def symbol(self, name: str) -> int:
        """Device address of module variable ``name`` (``__constant__``/``__device__``)."""
        return self.data_base + self.mod.data_layout().offsets[name]


def kernel_name(mod, prefix: str) -> str:
    """The one kernel of ``mod`` named ``prefix`` or whose mangled name contains it."""
    if prefix in mod.kernels:
        return prefix
    found = [k for k in mod.kernels if prefix in k]
    assert len(found) == 1, (prefix, found)
    return found[0]


def run_on(engine: str, name: str, host: Host) -> dict[str, np.ndarray]:
    """``host``'s results with module ``name`` on ``engine`` (``interp`` or ``jit``)."""
    old = jit.engine()
    jit.set_engine(engine)
    try:
        mod = module(name)
        if engine == "jit":
            mod.start_compile(wait=True)
            assert mod.jit.status == "jit", mod.jit.error
            assert not mod.jit.compiled.rejected, mod.jit.compiled.rejected
        gpu = Gpu(mod)
        out = host(gpu, mod)
        if engine == "jit":
            assert all(mod.jit.engine_of(k) == "jit" for k in gpu.kernels), gpu.kernels
        return out
    finally:
        jit.set_engine(old)


def _uint(a: np.ndarray) -> np.dtype:
    return np.dtype(f"u{a.dtype.itemsize}")


def run_both(name: str, host: Host, unordered: tuple[str, ...] = ()):
    """(interpreter results, compiled results) of ``host`` on module ``name``; every
    result not in ``unordered`` must be identical on both (see the module docstring)."""
    ref, got = run_on("interp", name, host), run_on("jit", name, host)
    assert ref.keys() == got.keys()
    for k in ref:
        if k not in unordered:
            bad = np.flatnonzero(~_equal_elems(ref[k], got[k]))
            assert bad.size == 0, (f"{name}: {k} differs between engines at "
                                   f"{bad[:8].tolist()}: interp {ref[k].ravel()[bad[:4]]} "
                                   f"jit {got[k].ravel()[bad[:4]]}")
    return ref, got


def _equal_elems(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element: the same bits (float NaNs: any NaN)."""
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    a, b = a.ravel(), b.ravel()
    if a.dtype.kind == "f":
        return (a.view(_uint(a)) == b.view(_uint(b))) | (np.isnan(a) & np.isnan(b))
    return a == b


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in units in the last place of ``got``'s float type (want rounded to it)."""
    g = np.asarray(got)
    w = np.asarray(want).astype(g.dtype)
    it = _uint(g)
    si = np.dtype(f"i{g.dtype.itemsize}")

    def ordered(x):
        v = x.view(si).astype(np.int64)
        return np.where(v < 0, np.iinfo(si).min - v, v)
    assert it.itemsize == g.dtype.itemsize
    return np.abs(ordered(g) - ordered(w))


def rebuild() -> None:
    """Regenerate the committed PTX of every program with nvcc (``VARIANTS``), dropping
    variants whose instructions equal those of a variant kept before them."""
    for cu in sorted(CUDA.glob("*.cu")):
        kept: list[list[str]] = []
        for var, flags in VARIANTS.items():
            if (var == "debug" and cu.stem in NO_DEBUG) or (var == "sm90" and cu.stem in NO_SM90):
                continue
            out = PTX / f"{cu.stem}.{var}.ptx"
            subprocess.run(["nvcc", "-ptx", *flags, "-o", str(out), str(cu)], check=True)
            body = [ln for ln in out.read_text().splitlines()
                    if not ln.startswith((".target", "//"))]
            if var != "debug" and body in kept:
                out.unlink()
            elif var != "debug":
                kept.append(body)


if __name__ == "__main__":
    rebuild()
