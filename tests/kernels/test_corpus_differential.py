"""The survey corpus (scripts/ptx_corpus/*.cu, nvcc -ptx as docs/ptx-coverage.md says) on both
engines: every kernel runs interpreted and compiled on the same generated arguments and must
leave the same memory in every buffer and raise the same fault.

One block of 64 threads: float atomics from several blocks would meet in an order that
differs from run to run (engine threads), so only one block's lane order is compared.
Arguments are generic: each pointer parameter gets its own buffer of small float32 values
(so indices read from data are small), integers are 100, floats 1.25 / 0.75.  A kernel that
faults is compared by its fault text; one that does not finish within the step cap on the
interpreter is listed, not compared.  32-bit words that are NaN on both engines match
whatever their sign and payload (see docs/ptx-engine.md, Known gaps)."""

from __future__ import annotations

import importlib.util
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit, load_module

from ..ptx.helpers import Device

ROOT = Path(__file__).resolve().parents[2]
BUF = 64 << 10
STEPS, CAP = 20000, 400
# files the engines do not load, and kernels left to the interpreter by the compiler, with
# the reason (shrinks as coverage grows); "memory" loads since surfaces are supported
NOT_LOADED: set[str] = set()
NOT_COMPILED: dict[tuple[str, str], str] = {}

# kernels whose results depend on the clock (%clock64): only their faults are compared
CLOCKED = {("warp_sync", "warp_ops")}


@pytest.fixture(scope="module")
def corpus() -> list[Path]:
    """The corpus's PTX files, compiled by nvcc into build/ptx-corpus/."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: the survey corpus is compiled at test time")
    spec = importlib.util.spec_from_file_location("ptx_survey", ROOT / "scripts" / "ptx_survey.py")
    survey = importlib.util.module_from_spec(spec)
    sys.modules["ptx_survey"] = survey
    spec.loader.exec_module(survey)
    return survey.build_corpus()


def _params(info, dev: Device, rng) -> tuple[bytes, list[int]]:
    buf, ptrs = bytearray(info.param_size), []
    for p in info.params:
        if p.size == 8 and p.type in ("u64", "s64", "b64"):
            va = dev.put(rng.uniform(0, 4, BUF // 4).astype(np.float32))
            ptrs.append(va)
            raw = va.to_bytes(8, "little")
        elif p.type in ("f32", "f64"):
            raw = struct.pack("<f" if p.type == "f32" else "<d", 1.25 if p.size == 4 else 0.75)
        elif p.type in ("u32", "s32", "b32", "u16", "s16", "b16", "u8", "s8", "b8") and \
                p.size <= 4:
            raw = (100).to_bytes(p.size, "little") if p.size >= 2 else bytes(p.size)
        else:
            raw = bytes(p.size)
        buf[p.offset:p.offset + p.size] = raw
    return bytes(buf), ptrs


def _same(a: bytes, b: bytes) -> bool:
    """Equal bytes, except that 32-bit words NaN on both sides match whatever their sign and
    payload (two NaN operands meeting: see docs/ptx-engine.md, Known gaps)."""
    x, y = np.frombuffer(a, np.uint32), np.frombuffer(b, np.uint32)
    nan = ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0) & \
        ((y & 0x7F800000) == 0x7F800000) & ((y & 0x7FFFFF) != 0)
    return bool(((x == y) | nan).all())


def _run(engine: str, mod, kernel: str):
    """(buffers' bytes, fault text) after the launch, or None if it did not finish."""
    jit.set_engine(engine)
    dev = Device(16 << 20)
    params, ptrs = _params(mod.kernels[kernel], dev, np.random.default_rng(3))
    launch = mod.launch(kernel, (1,), (64,), params, dev.mmu, dev.load_data(mod),
                        shared_dynamic=4096)
    fault = None
    try:
        for _ in range(CAP):
            if launch.run(STEPS):
                break
        else:
            return None
    except KernelFault as exc:
        fault = str(exc)
    return [dev.mmu.read(va, BUF) for va in ptrs], fault


@pytest.fixture
def policy():
    """Restores the engine policy that _run changes."""
    old = jit.engine()
    yield
    jit.set_engine(old)


@pytest.mark.slow   # nvcc builds the corpus, cc compiles each module
def test_corpus_kernels_agree_on_both_engines(policy, corpus):
    loaded, unfinished = set(), []
    for path in corpus:
        name = path.name.removesuffix(".ptx")
        try:
            mod = load_module(path.read_text(), name)
        except OSError:
            continue
        loaded.add(name.split(".")[0])
        jit.set_engine("jit")
        mod.start_compile(wait=True)
        for kernel in mod.kernels:
            stem = name.split(".")[0]
            expect = "interp" if (stem, kernel) in NOT_COMPILED else "jit"
            assert mod.jit.engine_of(kernel) == expect, (name, mod.jit.compiled.rejected)
            ref = _run("interp", mod, kernel)
            if ref is None:
                unfinished.append((name, kernel))
                continue
            got = _run("jit", mod, kernel)
            assert got is not None and got[1] == ref[1], (name, kernel, ref[1], got)
            if (stem, kernel) in CLOCKED:
                continue
            for k, (a, b) in enumerate(zip(ref[0], got[0], strict=True)):
                assert _same(a, b), f"{name}:{kernel} buffer {k} differs"
    stems = {p.name.split(".")[0] for p in corpus}
    assert stems - loaded == NOT_LOADED
    assert len(unfinished) <= 2, unfinished
