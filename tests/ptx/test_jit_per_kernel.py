"""Each kernel runs compiled as soon as its own compile ends, launched kernels compile first,
and a compiler failure costs only its kernel.

The real C compiler compiles; a wrapper holds back the compiles of chosen kernels (their C
holds a marker constant) until the test lets them go, so "still compiling" is a state the
test controls, not a race it hopes to win.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from gdevd.gpu.ptx import load_module

from .helpers import Device
from .test_jit_objects import HEADER, kernel

MARK = "0x12d68"            # in the C of every kernel that multiplies by 0x12d680..0x12d68f
# the wrapper: a compile whose C holds the marker waits for $OUT/go (or fails, with "fail")
HOLD = ('for a; do case $a in *.c) src=$a;; esac; done\n'
        'if grep -q {mark} "$src"; then\n'
        '  basename "$src" >> "$OUT/held"\n'
        '  {then}\n'
        'fi\n'
        'basename "$src" >> "$OUT/started"\n'
        'exec "$REAL" "$@"')
WAIT = 'while [ ! -e "$OUT/go" ]; do sleep 0.02; done'
BOUND = 300.0   # seconds: a bound on liveness (a launch that waits for a held kernel never ends)


def held(k: int, name: str) -> str:
    """A kernel whose compile the wrapper holds: out[t] = v * (0x12d680 + k) ** 3 (three
    instructions where ``poke`` has one: it is larger, so it compiles before ``poke`` unless
    a launch wants ``poke``)."""
    m = f"mul.lo.u32 %r1, %r1, {0x12d680 + k};"
    return kernel(name, f"{m}\n\t{m}\n\t{m}")


def poked(mod):
    """Launch ``poke`` (out[t] = 5 + t) on a thread: the launch, and whether it computed
    that; the test fails if the launch has not ended within BOUND (it waits for a held
    kernel, which only the test can let go)."""
    result: list = []

    def launch() -> None:
        dev = Device()
        out = dev.put(np.zeros(32, np.uint32))
        done = dev.launch(mod, "poke", (1,), (32,), out, 5)
        result.append((done, dev.get(out, 32, np.uint32).tolist() == [5 + t for t in range(32)]))

    t = threading.Thread(target=launch, daemon=True)
    t.start()
    t.join(BOUND)
    assert result, "the launch of poke waited for kernels it did not launch"
    return result[0]


@pytest.fixture
def hold(tmp_path, monkeypatch, wrapped_cc):
    """Install the holding wrapper; yields its output directory.  Held compiles are let go
    at teardown, so a failed test leaves no compiler waiting."""
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "cache"))
    out = wrapped_cc(HOLD.format(mark=MARK, then=WAIT))
    yield out
    (out / "go").touch()


@pytest.mark.parametrize("engine", ["auto", "jit"], indirect=True)
def test_a_kernel_runs_compiled_while_another_of_its_module_still_compiles(hold, engine):
    mod = load_module(HEADER + held(0, "slow") + kernel("poke"), "mixed")
    mod.start_compile()                                  # as the daemon does at load
    if engine == "auto":
        mod.jit.compiled.wait_for("poke")
    launch, right = poked(mod)
    assert type(launch).__name__ == "JitLaunch" and right
    assert mod.jit.status == "compiling" and mod.jit.engine_of("slow") == "interp"
    assert len(_lines(hold / "held")) == 1                   # slow's compile, still held
    (hold / "go").touch()
    assert mod.jit.wait(BOUND) and mod.jit.status == "jit", mod.jit.error
    assert mod.jit.engine_of("slow") == "jit"


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_a_launch_gets_its_kernel_compiled_while_every_core_compiles_larger_ones(hold):
    """More held kernels than cores take every compiler slot; the launch of ``poke`` under
    the jit policy must not wait for them (it would wait forever here)."""
    big = os.cpu_count() or 1
    mod = load_module(HEADER + "".join(held(k, f"big{k}") for k in range(big + 1)) +
                      kernel("poke"), "crowded")
    mod.start_compile()
    while len(_lines(hold / "held")) < big:                 # every core holds a big one
        threading.Event().wait(0.01)
    launch, right = poked(mod)
    assert type(launch).__name__ == "JitLaunch" and right
    assert len(_lines(hold / "held")) == big                 # the last big one never started
    (hold / "go").touch()
    assert mod.jit.wait(BOUND) and mod.jit.status == "jit", mod.jit.error


def _lines(path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize("engine", ["jit"], indirect=True)
def test_a_compiler_failure_leaves_only_its_kernel_on_the_interpreter(tmp_path, monkeypatch,
                                                                       wrapped_cc):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "cache"))
    wrapped_cc(HOLD.format(mark=MARK, then='echo "cc: planted failure" >&2; exit 1'))
    mod = load_module(HEADER + held(0, "bad") + kernel("poke"), "half")
    mod.start_compile(wait=True)
    assert mod.jit.status == "failed" and "planted failure" in mod.jit.error
    assert "planted failure" in mod.jit.compiled.rejected["bad"]
    launch, right = poked(mod)
    assert type(launch).__name__ == "JitLaunch" and right
    dev = Device()                                       # the failed one runs, interpreted
    out = dev.put(np.zeros(32, np.uint32))
    launch = dev.launch(mod, "bad", (1,), (32,), out, 1)
    assert type(launch).__name__ == "Launch"
    assert dev.get(out, 32, np.uint32).tolist() == [0x12d680 ** 3 % 2 ** 32] * 32
    assert not list((tmp_path / "cache").glob("??/*.json"))   # a failure is not cached
