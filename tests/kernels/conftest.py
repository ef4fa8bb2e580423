"""Fixtures for the kernel tests: a device per backend and a seeded random generator."""

import zlib

import numpy as np
import pytest

from .harness import CpuDevice

# The PTX engine joins as a backend once it runs these kernels (see kernels/README.md).
BACKENDS = {"cpu": CpuDevice}


@pytest.fixture(params=sorted(BACKENDS))
def dev(request):
    """A fresh device of each backend."""
    return BACKENDS[request.param]()


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's name, so failures reproduce."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
