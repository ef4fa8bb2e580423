"""The same programs through every binding: kcuda in a running runtime, libgdev.cuda through a
real gdevd mount, and the in-process runtime; each result equals numpy's and the others'."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

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
