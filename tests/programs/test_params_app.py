"""Kernel parameters past the old 4 KiB limit (up to CUDA 12.1's 32764 bytes): apps/params_app.cu,
built by nvcc -cudart shared and run unchanged on a mounted gdevd through libcudart.so and
libcuda.so.1, once on each engine; it checks its own sums against host references."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "params_app.cu"


@pytest.fixture(scope="module")
def params_app(tmp_path_factory) -> Path:
    """The application, built once for the module."""
    return build_cuda(APP, tmp_path_factory.mktemp("params") / "params_app")


@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_large_parameter_buffers_on_each_engine(gdevd, params_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, params_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split() == ["params_8000", "ok", "params_32000", "ok",
                                  "params_graph", "ok"], res.stdout
