"""3D, layered and cubemap textures and surfaces in an nvcc-built application
(tests/programs/apps/tex3d_app.cu: simpleTexture3D's trilinear volume of normalised bytes,
simpleLayeredTexture's transformed layers, simpleCubemapTexture's every face and texel read
back through its direction, 1D layers clamped, a layered cubemap, surf3D/surf2DLayered/
surfCubemap writes, cudaMemcpy3D boxes of array slices), run unchanged on a mounted gdevd
through gdev-py's libcudart.so and libcuda.so.1 on each engine; the application checks every
value against its CPU reference of CUDA's sampling."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APP = Path(__file__).resolve().parent / "apps" / "tex3d_app.cu"


@pytest.fixture(scope="module")
def tex3d_app(tmp_path_factory) -> Path:
    return build_cuda(APP, tmp_path_factory.mktemp("tex3d") / "tex3d_app")


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_texture_samples_on_each_engine(gdevd, tex3d_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, tex3d_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == ["volume ok", "layered ok", "cubemap ok", "surfaces ok",
                                       "tex3d_app ok"], res.stdout + res.stderr
    if engine == "jit":      # all 7 kernels ran compiled: 4 sample textures, 3 write surfaces
        rows = module_rows(gdevd)
        assert any(r[4:6] == ["7", "7"] for r in rows), rows
