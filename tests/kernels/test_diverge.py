"""Divergent control flow and device-function calls: data-dependent loops, early exits, a
switch over a classifier, a by-value struct parameter, local arrays."""

import struct

import numpy as np
import pytest

from . import reference as ref
from .harness import cdiv


@pytest.mark.parametrize("n,block", [(1, 32), (300, 64), (1025, 256)])
def test_collatz(dev, rng, n, block):
    x = rng.integers(0, 100000, size=n).astype(np.uint32)
    x[0] = 0
    if n > 2:
        x[1], x[2] = 1, 0xFFFFFFFF  # already done; a value that overflows 32 bits
    pin, pout = dev.upload(x), dev.zeros(4 * n)
    dev.launch("diverge", "collatz", cdiv(n, block), block, [pin, pout, n, 500])
    np.testing.assert_array_equal(dev.download(pout, np.uint32, n), ref.collatz(x, 500))


@pytest.mark.parametrize("mul,add,shift", [(3, -7, 0), (-5, 1000, 3), (65537, 1, 31)])
@pytest.mark.parametrize("n", [1, 257, 1000])
def test_branchy(dev, rng, n, mul, add, shift):
    x = rng.integers(-3000, 3000, size=n).astype(np.int32)
    x[:: 7] = 0
    x[1:: 11] = rng.integers(-(2**31), 2**31, size=len(x[1:: 11]))
    f = struct.pack("<iii", mul, add, shift)
    pin, pout = dev.upload(x), dev.zeros(4 * n)
    dev.launch("diverge", "branchy", cdiv(n, 128), 128, [pin, pout, n, f])
    np.testing.assert_array_equal(dev.download(pout, np.int32, n), ref.branchy(x, mul, add, shift))


@pytest.mark.parametrize("base", [2, 3, 10, 16])
@pytest.mark.parametrize("n", [1, 100, 513])
def test_reverse_digits(dev, rng, n, base):
    x = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    x[0] = 0
    pin, pout = dev.upload(x), dev.zeros(4 * n)
    dev.launch("diverge", "reverse_digits", cdiv(n, 64), 64, [pin, pout, n, base])
    np.testing.assert_array_equal(dev.download(pout, np.uint32, n), ref.reverse_digits(x, base))
