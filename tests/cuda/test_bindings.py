"""The same programs through every binding: kcuda in a running runtime, libgdev.cuda through a
real gdevd mount, and the in-process runtime; each result equals numpy's and the others'."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kcuda
from libgdev.cuda import bind

from . import scenarios
from .conftest import KernelThread


def _daemon_fixture_module() -> Any:
    path = Path(__file__).resolve().parents[1] / "daemon" / "conftest.py"
    spec = importlib.util.spec_from_file_location("gdevd_mount_fixture", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def kcuda_driver() -> Iterator[Any]:
    """The real ``kcuda`` module attached to a runtime running on its own trio thread."""
    kt = KernelThread().start()
    kcuda.attach(kt.system, kt.token)
    try:
        kcuda.cuInit(0)
        yield kcuda.driver
        kcuda.detach()
        kt.fsck()
    finally:
        kcuda.detach()
        kt.stop()


@pytest.fixture(scope="module")
def libgdev_driver() -> Iterator[Any]:
    """``libgdev.cuda`` over a real gdevd mount (a separate daemon process)."""
    import libgdev

    mount = _daemon_fixture_module()
    d = mount.start_gdevd()
    try:
        drv = bind(lambda: _mounted(libgdev, d.mount))
        drv.cuInit(0)
        yield drv
        drv.shutdown()
    finally:
        mount.stop_gdevd(d)


def _mounted(libgdev: Any, mount: str) -> Any:
    from libgdev.cuda import ModuleBackend

    class Mounted:
        """libgdev's verbs on one mount point (not the $GDEV_MOUNT default)."""

        GdevKernel = libgdev.GdevKernel

        def __getattr__(self, name: str) -> Any:
            return getattr(libgdev, name)

        def gopen(self, minor: int) -> Any:
            return libgdev.gopen(minor, mount)

        def gdevice_count(self) -> int:
            return libgdev.gdevice_count(mount)

    return ModuleBackend(Mounted())


@pytest.fixture(scope="module")
def inprocess_driver() -> Iterator[Any]:
    """``libgdev.cuda.bind(gdevd.gdev)``: the driver over the in-process runtime facade."""
    from gdevd import gdev
    from gdevd.runtime import GdevConfig

    from .conftest import SMALL

    gdev.boot(GdevConfig(**SMALL))
    try:
        drv = bind(gdev)
        drv.cuInit(0)
        yield drv
        drv.shutdown()
        gdev.check_invariants()
    finally:
        gdev.shutdown()


BINDINGS = ["kcuda_driver", "libgdev_driver", "inprocess_driver"]


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
