"""The same programs through every binding: kcuda in a running runtime, libgdev.cuda through a
real gdevd mount, and the in-process runtime; each result equals numpy's and the others'."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from libgdev.cuda import CudaError, bind

from . import scenarios
from .conftest import BINDINGS


@pytest.fixture(params=BINDINGS)
def any_driver(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def test_device_queries(any_driver) -> None:
    assert any_driver.cuDeviceGetCount() == 4
    assert any_driver.cuDeviceGetName(0) == "Gdev Emulated GPU"
    assert any_driver.cuDeviceComputeCapability(0) == (7, 5)
    assert any_driver.cuDeviceTotalMem(0) > 0


def test_memory_round_trip(any_driver) -> None:
    assert scenarios.memory_round_trip(any_driver) == scenarios.expected_memory_round_trip()


KERNEL_PROGRAMS = {
    "madd": (scenarios.madd, scenarios.expected_madd),
    "loop_legacy": (scenarios.loop_legacy, scenarios.expected_loop),
    "mmul_tiled": (scenarios.mmul_tiled, scenarios.expected_mmul),
    "histogram": (scenarios.histogram, scenarios.expected_histogram),
    "nn": (scenarios.nn, scenarios.expected_nn),
}
_results: dict[str, dict[str, np.ndarray]] = {}


@pytest.mark.parametrize("program", sorted(KERNEL_PROGRAMS))
def test_kernels_agree_across_bindings(any_driver, request, program: str) -> None:
    run, expected = KERNEL_PROGRAMS[program]
    got = run(any_driver)
    want = expected()
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6)
    else:
        assert np.array_equal(got, want)
    binding = request.node.callspec.params["any_driver"]
    seen = _results.setdefault(program, {})
    for other, value in seen.items():  # bit for bit what the other bindings computed
        assert np.array_equal(value, got), (binding, other)
    seen[binding] = got


CLIENT = """
import numpy as np
from libgdev import cuda
cuda.cuInit(0)
ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(cuda.cuDeviceGetCount() - 1))
f = cuda.cuModuleGetFunction(cuda.cuModuleLoad(KERNELS + "/madd.ptx"), "add")
a = np.arange(64 * 64, dtype=np.uint32).reshape(64, 64)
d = [cuda.cuMemAlloc(a.nbytes) for _ in range(3)]
cuda.cuMemcpyHtoD(d[0], a)
cuda.cuMemcpyHtoD(d[1], a)
cuda.cuLaunchKernel(f, 4, 4, 1, 16, 16, 1, 0, None, [*d, 64])
c = np.zeros_like(a)
cuda.cuMemcpyDtoH(c, d[2])
assert (c == 2 * a).all()
try:
    cuda.cuMemAlloc(1 << 40)
except cuda.CudaError as e:
    print(e.name)
"""


def test_a_user_program_with_the_module_level_api(libgdev_driver) -> None:
    """A separate process uses ``from libgdev import cuda`` as is, found through GDEV_MOUNT."""
    env = {**os.environ, "GDEV_MOUNT": libgdev_driver.mount}
    code = f"KERNELS = {str(scenarios.KERNELS)!r}\n" + CLIENT
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CUDA_ERROR_OUT_OF_MEMORY"]


def test_no_daemon_is_no_device(tmp_path) -> None:
    import libgdev

    drv = bind(lambda: _unmounted(libgdev, str(tmp_path)))
    with pytest.raises(CudaError, match="CUDA_ERROR_NO_DEVICE"):
        drv.cuInit(0)


def _unmounted(libgdev: Any, mount: str) -> Any:
    from libgdev.cuda import ModuleBackend

    class Nowhere:
        GdevKernel = libgdev.GdevKernel

        def __getattr__(self, name: str) -> Any:
            return getattr(libgdev, name)

        def gdevice_count(self) -> int:
            return libgdev.gdevice_count(mount)

    return ModuleBackend(Nowhere())


def test_the_daemons_reason_reaches_the_cuda_error(libgdev_driver) -> None:
    drv = libgdev_driver
    ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
    try:
        with pytest.raises(CudaError) as info:
            drv.cuMemAlloc(1 << 40)
    finally:
        drv.cuCtxDestroy(ctx)
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
    assert "GMALLOC" in str(info.value) and "exceed vGPU" in str(info.value), str(info.value)
