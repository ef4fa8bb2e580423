"""The repository's kernels (the paper's micro-benchmarks, the Rodinia ports of its Table 1,
divergence, reductions, atomics and the AES-256/XTS kernels of the encrypted file system) run
through the CUDA driver API on every binding: kcuda in a running runtime, libgdev.cuda
through a real gdevd mount, and in-process.

The kernel tests of ``tests/kernels`` (their host loops, inputs and numpy references, written
against a small device interface) are collected here again with ``dev`` bound to a
:class:`CudaDevice`: allocation, copies, module loading and launches all go through
``cuMemAlloc``/``cuMemcpy*``/``cuModuleLoad``/``cuLaunchKernel`` of the binding.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

# Re-collected here with this module's ``dev``: every binding runs the same host programs.
from tests.kernels.test_aes import (  # noqa: F401
    test_ecb_matches_cryptography,
    test_fips197_known_answer,
    test_ieee1619_vector_10,
    test_key_expansion_matches_fips197,
    test_xts_matches_cryptography,
)
from tests.kernels.test_diverge import (  # noqa: F401
    test_branchy,
    test_collatz,
    test_reverse_digits,
)
from tests.kernels.test_micro import (  # noqa: F401
    test_fmadd,
    test_fmmul,
    test_idle,
    test_loop_leaves_memory_past_size,
    test_madd,
    test_mmul,
)
from tests.kernels.test_reduce_histogram import (  # noqa: F401
    test_histogram_bytes_global,
    test_histogram_shared,
    test_reduce_stats_u32,
    test_reduce_sum_f32,
    test_reduce_sum_shfl_s32,
    test_scatter_atomics,
)
from tests.kernels.test_rodinia import (  # noqa: F401
    test_backprop,
    test_bfs,
    test_hotspot,
    test_lud,
    test_nn,
    test_nw,
    test_srad,
)

from .conftest import BINDINGS, KERNELS


class CudaDevice:
    """The kernel tests' device interface over one CUDA context of a binding's driver."""

    def __init__(self, drv: Any) -> None:
        self.drv = drv
        self.ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
        self.modules: dict[str, Any] = {}

    def alloc(self, nbytes: int) -> int:
        """cuMemAlloc."""
        return int(self.drv.cuMemAlloc(nbytes))

    def write(self, ptr: int, data: bytes) -> None:
        """cuMemcpyHtoD."""
        self.drv.cuMemcpyHtoD(ptr, data)

    def read(self, ptr: int, n: int) -> bytes:
        """cuMemcpyDtoH."""
        out = bytearray(n)
        self.drv.cuMemcpyDtoH(out, ptr)
        return bytes(out)

    def upload(self, array: np.ndarray) -> int:
        """A fresh device buffer holding ``array``."""
        data = np.ascontiguousarray(array)
        ptr = self.alloc(max(data.nbytes, 1))
        self.write(ptr, data)
        return ptr

    def zeros(self, nbytes: int) -> int:
        """A fresh zero-filled device buffer (cuMemsetD8)."""
        ptr = self.alloc(max(nbytes, 1))
        self.drv.cuMemsetD8(ptr, 0, max(nbytes, 1))
        return ptr

    def download(self, ptr: int, dtype: Any, shape: Any) -> np.ndarray:
        """Read an array of ``dtype`` and ``shape`` from ``ptr``."""
        out = np.zeros(shape, dtype)
        self.drv.cuMemcpyDtoH(out, ptr)
        return out

    def launch(self, file: str, kernel: str, grid: Any, block: Any, args: list[Any],
               shared_dynamic: int = 0) -> None:
        """cuModuleLoad (once per file) + cuModuleGetFunction + cuLaunchKernel."""
        if file not in self.modules:
            self.modules[file] = self.drv.cuModuleLoad(KERNELS / f"{file}.ptx")
        f = self.drv.cuModuleGetFunction(self.modules[file], kernel)
        values = [float(a) if isinstance(a, float | np.floating) else
                  a if isinstance(a, bytes | bytearray) else int(a) for a in args]
        self.drv.cuLaunchKernel(f, *_dim3(grid), *_dim3(block), shared_dynamic, None, values)

    def close(self) -> None:
        """Destroy the context and everything in it."""
        self.drv.cuCtxDestroy(self.ctx)


def _dim3(d: Any) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return tuple(int(v) for v in (d + (1, 1, 1))[:3])  # type: ignore[return-value]


@pytest.fixture(params=BINDINGS)
def dev(request: pytest.FixtureRequest) -> Iterator[CudaDevice]:
    """A fresh CUDA context on each binding, destroyed after the test."""
    d = CudaDevice(request.getfixturevalue(request.param))
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """Seeded from the test's name, as tests/kernels does."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
