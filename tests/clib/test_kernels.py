"""Every kernel of kernels/ run by C programs on a mounted gdevd, checked against the CPU
references of tests/kernels: the driver API (progs/drv_runner.c, gcc, libcuda.so.1) and the
runtime API (every kernels/*.cu built into one nvcc program, on libcudart.so.13 and on
NVIDIA's static runtime over libcuda.so.1).  Each case is
one of tests/kernels' own checks, called with the C runner as its device."""

from __future__ import annotations

import zlib
from functools import partial

import numpy as np
import pytest

from tests.clib.runner import RunnerDevice, nvcc
from tests.kernels import test_aes as aes
from tests.kernels import test_diverge as diverge
from tests.kernels import test_micro as micro
from tests.kernels import test_reduce_histogram as red
from tests.kernels import test_rodinia as rodinia

CASES = {
    "madd": partial(micro.test_madd, n=37),
    "fmadd": partial(micro.test_fmadd, n=37),
    "mmul": partial(micro.test_mmul, kernel="multiply_tiled", n=37),
    "fmmul": partial(micro.test_fmmul, kernel="multiply", n=16),
    "loop": lambda dev, rng: micro.test_loop_leaves_memory_past_size(dev),
    "idle": lambda dev, rng: micro.test_idle(dev, 1000),
    "aes-fips197": lambda dev, rng: aes.test_fips197_known_answer(dev),
    "aes-ecb": partial(aes.test_ecb_matches_cryptography, nblocks=100, block=64),
    "aes-xts": lambda dev, rng: aes.test_ieee1619_vector_10(dev),
    "collatz": partial(diverge.test_collatz, n=300, block=64),
    "branchy": partial(diverge.test_branchy, n=257, mul=-5, add=1000, shift=3),
    "reverse-digits": partial(diverge.test_reverse_digits, n=100, base=10),
    "reduce-f32": partial(red.test_reduce_sum_f32, n=1000, block=128),
    "reduce-shfl": partial(red.test_reduce_sum_shfl_s32, n=1000, block=64),
    "reduce-stats": partial(red.test_reduce_stats_u32, n=777, block=128, grid=3),
    "histogram": partial(red.test_histogram_shared, n=1000, grid=2, block=128, nbins=7),
    "histogram-bytes": partial(red.test_histogram_bytes_global, n=999, grid=3, block=64),
    "scatter": partial(red.test_scatter_atomics, n=500, nkeys=3),
    "hotspot": partial(rodinia.test_hotspot, rows=20, cols=33, iterations=5, pyramid=2),
    "nn": partial(rodinia.test_nn, n=300, grid=(2, 1)),
    "bfs": partial(rodinia.test_bfs, n=100, degree=2),
    "srad": partial(rodinia.test_srad, rows=16, cols=16, iterations=1),
    "srad_v1": partial(rodinia.test_srad_v1, nr=17, nc=23, iterations=2),
    "lud": partial(rodinia.test_lud, dim=16),
    "nw": partial(rodinia.test_nw, length=16, penalty=10),
    "backprop": partial(rodinia.test_backprop, n_in=16),
}


@pytest.fixture(params=["drv", "rt", "rt-static"])
def dev(request, gdevd):
    """A C runner (driver or runtime API) with its own context on the module's gdevd."""
    if request.param != "drv":
        nvcc()
    d = RunnerDevice(request.param, gdevd.mount)
    yield d
    d.close()


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_through_c(dev, case: str) -> None:
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    CASES[case](dev, rng)
