"""Hypothesis-generated PTX programs (tests/ptx/differential.py) on both engines: the
compiled engine must leave the same memory (every register of every thread, the atomic
counters) and raise the same fault as the interpreter.

The default run is bounded (a C compile per example); ``GDEV_DIFF_EXAMPLES=N`` runs N, and
the slow-marked test runs more.  Under CI (``CI`` set) every run draws the same examples, so a
landing is judged on a reproducible suite; elsewhere the slow test draws new ones each run to
keep looking for disagreements (a failure prints the seed that reproduces it)."""

from __future__ import annotations

import os
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import executor, jit, load_module

from .differential import render, steps
from .helpers import Device

BLOCKS, THREADS = 2, 64
N = BLOCKS * THREADS
EXAMPLES = int(os.environ.get("GDEV_DIFF_EXAMPLES", "12"))
special = st.sampled_from([0, 1, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001,
                           0x3F800000, 0xBF800000, 0x42F60000, 0xFFFFFFFF, 0x5A, 7])


def _inputs(seed: int, picks: list[int]) -> np.ndarray:
    """Per-thread input words: random, with special values (NaN, inf, 1.0, ...) mixed in."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 1 << 32, 4 * N, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(0, 300, 4 * N).astype(np.uint32)
    x = np.where(rng.random(4 * N) < 0.3, small, x)
    where = rng.integers(0, 4 * N, len(picks))
    x[where] = np.array(picks, np.uint32)
    return x


def run(engine: str, text: str, inp: np.ndarray):
    """(output words, counters, fault text or None) of the kernel on ``engine``."""
    jit.set_engine(engine)
    mod = load_module(text, "diff")
    if engine == "jit":
        mod.start_compile(wait=True)
        assert mod.jit.engine_of("k") == "jit", mod.jit.compiled.rejected
    dev = Device(4 << 20)
    src, out, cnt = dev.put(inp), dev.put(np.zeros(12 * N, np.uint32)), \
        dev.put(np.arange(8 * 6, dtype=np.uint32) * np.uint32(0x01010101))
    fault = None
    # When several blocks fault, a launch reports the lowest faulting block's first fault:
    # the interpreter knows which that is only when it runs one block per wave.
    try:
        with patch.object(executor, "WAVE_THREADS", 1):
            dev.launch(mod, "k", (BLOCKS,), (THREADS,), src, out, cnt)
    except KernelFault as exc:
        fault = str(exc)
    return dev.get(out, 12 * N, np.uint32), dev.get(cnt, 8 * 6, np.uint32), fault


def _nan(words: np.ndarray) -> np.ndarray:
    """Float registers (words 8..11 of each thread) holding a NaN: any NaN counts as equal."""
    f = (np.arange(words.size) % 12) >= 8
    return f & ((words & 0x7F800000) == 0x7F800000) & ((words & 0x7FFFFF) != 0)


def check(prog, seed: int, picks: list[int]) -> None:
    """Run ``prog`` on both engines and require identical memory and faults."""
    text = render(prog)
    inp = _inputs(seed, picks)
    ref, got = run("interp", text, inp), run("jit", text, inp)
    assert got[2] == ref[2], text
    if ref[2] is None:
        bad = np.flatnonzero((got[0] != ref[0]) & ~(_nan(got[0]) & _nan(ref[0])))
        assert bad.size == 0, (f"thread {bad[0] // 12} word {bad[0] % 12}: interp "
                               f"{ref[0][bad[0]]:#x} jit {got[0][bad[0]]:#x}\n{text}")
        assert got[1].tolist() == ref[1].tolist(), text


def _given(examples: int):
    """hypothesis over (program, input seed, special values), ``examples`` of them."""
    fixed = examples <= 12 or bool(os.environ.get("CI"))
    conf = settings(max_examples=examples, deadline=None, derandomize=fixed,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])

    def deco(fn):
        return conf(given(steps(), st.integers(0, 1 << 30), st.lists(special, max_size=40))(fn))
    return deco


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@_given(EXAMPLES)
def test_random_programs_agree(engine, prog, seed, picks):
    check(prog, seed, picks)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("engine", ["jit"], indirect=True)
@_given(max(EXAMPLES, 40))
def test_many_random_programs_agree(engine, prog, seed, picks):
    check(prog, seed, picks)


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_a_planted_fault_is_reported_alike(engine):
    prog = [("int", "add.u32", 1, 1, 2), ("fault", 0, 0x5A), ("bar", 3, 1, 5)]
    inp = _inputs(1, [])
    inp[4 * 70] = 0x15A            # thread 70's %r0: its low byte selects the faulting store
    ref, got = run("interp", render(prog), inp), run("jit", render(prog), inp)
    assert ref[2] is not None and "0x10" in ref[2] and got[2] == ref[2]
