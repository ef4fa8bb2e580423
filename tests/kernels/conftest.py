"""Fixtures for the kernel tests: a device per backend and a seeded random generator."""

import zlib

import numpy as np
import pytest

from .harness import CpuDevice, EngineDevice, JitDevice

# "cpu": the kernels' CUDA C on the host (an oracle independent of the engine);
# "engine": the committed PTX on the emulated GPU (gdevd.gpu.ptx), interpreted;
# "jit": the same PTX compiled to native code (gdevd.gpu.ptx.jit).
BACKENDS = {"cpu": CpuDevice, "engine": EngineDevice, "jit": JitDevice}


@pytest.fixture(params=sorted(BACKENDS))
def dev(request):
    """A fresh device of each backend."""
    return BACKENDS[request.param]()


@pytest.fixture
def rng(request):
    """A numpy Generator seeded from the test's name, so failures reproduce."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
