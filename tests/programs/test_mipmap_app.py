"""Mipmapped textures and gathers in nvcc-built applications (tests/programs/apps/
mipmap_app.cu: bindlessTexture's shape, a mipmapped array whose levels are written by surface
kernels and fetched with tex2DLod at fractional levels and with tex2DGrad; gather_app.cu:
tex2Dgather of every component from arrays and pitch memory), run unchanged on a mounted
gdevd through gdev-py's libcudart.so and libcuda.so.1 on each engine; the applications check
every value against their CPU references."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APPS = Path(__file__).resolve().parent / "apps"


@pytest.fixture(scope="module")
def mipmap_app(tmp_path_factory) -> Path:
    return build_cuda(APPS / "mipmap_app.cu", tmp_path_factory.mktemp("mip") / "mipmap_app")


@pytest.fixture(scope="module")
def gather_app(tmp_path_factory) -> Path:
    return build_cuda(APPS / "gather_app.cu", tmp_path_factory.mktemp("gather") / "gather_app")


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_mipmapped_texture_on_each_engine(gdevd, mipmap_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, mipmap_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == ["levels ok", "tex2DLod ok", "tex2DGrad ok",
                                       "mipmap_app ok"], res.stdout + res.stderr
    if engine == "jit":      # all 3 kernels ran compiled: 2 sample, 1 writes a surface
        rows = module_rows(gdevd)
        assert any(r[4:6] == ["3", "3"] for r in rows), rows


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_gather_on_each_engine(gdevd, gather_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, gather_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == ["float array ok", "int pitch ok", "byte array ok",
                                       "gather_app ok"], res.stdout + res.stderr
    if engine == "jit":      # both gather kernels ran compiled
        rows = module_rows(gdevd)
        assert any(r[4:6] == ["2", "2"] for r in rows), rows
