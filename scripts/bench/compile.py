"""The compiling engine's own costs (part of ``compute.py --engines``): the cold compile of
kernels/aes.ptx and its warm load, how soon a small kernel of a large module runs compiled
under the ``jit`` policy (its own compile, not the module's), and what a cold compile in the
background takes from kernels running beside it, at niceness 0 and at the default (ratios
within one run).
"""

from __future__ import annotations

import contextlib
import os
import resource
import tempfile
import threading
import time

import numpy as np

from gdevd.gpu.ptx import jit, load_module
from scripts.bench.engines import BENCH, KERNELS, Dev, modules, pack


@contextlib.contextmanager
def _empty_cache():
    """``$GDEV_JIT_CACHE`` pointing at a new empty directory for the block."""
    old = os.environ.get("GDEV_JIT_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GDEV_JIT_CACHE"] = tmp
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("GDEV_JIT_CACHE")
            else:
                os.environ["GDEV_JIT_CACHE"] = old


def bench_aes_compile() -> dict:
    """Cold compile of kernels/aes.ptx into an empty cache (wall seconds, as the background
    compiler runs it: niced, one job per core) and the compiler's CPU seconds (its work,
    which a loaded machine does not inflate as much), then the warm load from the cache."""
    text = (KERNELS / "aes.ptx").read_text()
    with _empty_cache():
        mod = load_module(text, "aes")
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        mod.start_compile(wait=True)
        cold = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        mod2 = load_module(text, "aes")
        t0 = time.perf_counter()
        mod2.start_compile(wait=True)
        warm = time.perf_counter() - t0
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return {"bench": "aes.ptx compile", "cold_s": round(cold, 2), "cc_cpu_s": round(cpu, 2),
            "cores": os.cpu_count(), "warm_ms": round(warm * 1e3, 1),
            "kernels_compiled": len(mod2.jit.compiled.kernels)}


def _large_module(kernels: int, chain: int) -> str:
    """PTX of ``kernels`` kernels of ``chain`` dependent multiply-adds each (distinct
    constants: no two are one object), then ``small``, a one-instruction kernel."""
    head = ".version 7.0\n.target sm_75\n.address_size 64\n"
    body = []
    for k in range(kernels):
        ops = "".join(f"\tmad.lo.u32 %r1, %r1, {3 + 2 * (k * chain + j)}, %r2;\n"
                      for j in range(chain))
        body.append(f".visible .entry big{k}(.param .u64 p, .param .u32 v)\n{{\n"
                    "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n"
                    "\tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [v];\n"
                    f"\tmov.u32 %r2, %tid.x;\n{ops}\tst.global.u32 [%rd1], %r1;\n\tret;\n}}\n")
    body.append(".visible .entry small(.param .u64 p)\n{\n\t.reg .b64 %rd<2>;\n"
                "\tld.param.u64 %rd1, [p];\n\tst.global.u32 [%rd1], 1;\n\tret;\n}\n")
    return head + "".join(body)


def bench_first_native_launch() -> dict:
    """Cold, under the ``jit`` policy: seconds until a launch of a small kernel of a large
    module runs compiled (it waits for its own compile only, ahead of the larger ones), and
    until the whole module is compiled; their ratio."""
    text = _large_module(3 * (os.cpu_count() or 1), 1500)
    old = jit.engine()
    jit.set_engine("jit")
    try:
        with _empty_cache():
            mod = load_module(text, "large")
            t0 = time.perf_counter()
            mod.start_compile()                 # as the daemon does at load
            native = mod.jit.runnable("small")
            first = time.perf_counter() - t0
            mod.jit.wait()
            whole = time.perf_counter() - t0
    finally:
        jit.set_engine(old)
    assert native is not None and mod.jit.status == "jit", mod.jit.error
    return {"bench": "first native launch, large module, jit policy", "kernels":
            len(mod.kernels), "first_s": round(first, 2), "whole_s": round(whole, 2),
            "whole_vs_first": round(whole / first, 1)}


def _madd_rate(comp, dev, params, until) -> float:
    """MADD 1024x1024 launches per second, run back to back until ``until()`` is true."""
    n, t0 = 0, time.perf_counter()
    while not until() or n == 0:
        launch = comp.launch("madd", (64, 64, 1), (16, 16, 1), params, dev.mmu, 0)
        while not launch.run(1 << 20):
            pass
        n += 1
    return n / (time.perf_counter() - t0)


def _beside_compile(comp, dev, params, nice: int) -> tuple[float, float]:
    """(MADD launches/s while aes.ptx compiles cold at ``nice``, the compile's seconds)."""
    old = jit.compile_nice()
    jit.set_compile_nice(nice)
    try:
        with _empty_cache():
            aes = load_module((KERNELS / "aes.ptx").read_text(), "aes")
            t0 = time.perf_counter()
            worker = threading.Thread(target=aes.start_compile, kwargs={"wait": True})
            worker.start()
            rate = _madd_rate(comp, dev, params, lambda: not worker.is_alive())
            return rate, time.perf_counter() - t0
    finally:
        jit.set_compile_nice(old)


def bench_compile_beside_kernels() -> dict:
    """What a cold compile takes from MADD launches on every engine thread: their rate
    while aes.ptx compiles at niceness 0 and at the default, over their rate alone."""
    _, comp = modules(BENCH, "bench")
    a = np.arange(1024 * 1024, dtype=np.uint32)
    dev = Dev(3 * a.nbytes + 8192)
    params = pack((dev.put(a), 8), (dev.put(a * 3), 8), (dev.put(np.zeros_like(a)), 8),
                  (1024, 4))
    start = time.perf_counter()
    alone = _madd_rate(comp, dev, params, lambda: time.perf_counter() - start > 2.0)
    row: dict = {"bench": "MADD beside a cold aes.ptx compile", "alone_per_s": round(alone)}
    for nice in (0, jit.compile_nice()):
        rate, seconds = _beside_compile(comp, dev, params, nice)
        row.update({f"nice{nice}_per_s": round(rate), f"nice{nice}_vs_alone":
                    round(rate / alone, 2), f"nice{nice}_compile_s": round(seconds, 2)})
    return row
