"""tests/programs/cuda/pipeline.cu on both engines: a double-buffered GEMM whose tiles
arrive by asynchronous copies (``cp.async`` and its commit/wait groups on sm_80, plain
copies on sm_75), and 16-byte staged copies whose last chunk is zero-filled past the end
of the array (cp.async with a smaller src-size), against numpy (exact)."""

from __future__ import annotations

import numpy as np
import pytest

from .runner import params, run_both

ALL = params("pipeline")


@pytest.mark.parametrize("variant", ALL)
def test_double_buffered_gemm(variant):
    n = 48
    rng = np.random.default_rng(1)
    a = rng.integers(-8, 8, (n, n)).astype(np.float32)
    b = rng.integers(-8, 8, (n, n)).astype(np.float32)

    def host(gpu, mod):
        pa, pb, pc = gpu.put(a), gpu.put(b), gpu.alloc(n * n * 4)
        gpu.run("gemm_double_buffered", (n // 16, n // 16), (16, 16), pa, pb, pc, n)
        return {"c": gpu.get(pc, n * n, np.float32).reshape(n, n)}
    ref, got = run_both(variant, host)
    assert np.array_equal(got["c"], a @ b)        # small integers: exact


@pytest.mark.parametrize("variant", ALL)
@pytest.mark.parametrize("n", [512, 509, 510, 511])
def test_staged_copy_zero_fills_the_tail(variant, n):
    x = np.arange(1, 513, dtype=np.float32)
    x[n:] = np.nan                      # past the end: must not be copied

    def host(gpu, mod):
        pi, po = gpu.put(x), gpu.put(np.full(512, 7, np.float32))
        gpu.run("staged_copy", (1,), (128,), pi, po, n)
        return {"out": gpu.get(po, 512, np.float32)}
    ref, got = run_both(variant, host)
    want = np.where(np.arange(512) < n, x, 0).astype(np.float32)
    assert np.array_equal(got["out"], want)
