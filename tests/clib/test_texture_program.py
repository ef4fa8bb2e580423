"""An unmodified nvcc-built program using texture objects (progs/rt_texture.cu: a pitched
float image sampled with linear filtering, normalised coordinates and wrap; a tex1Dfetch of
uchar4 texels read as normalised floats; a CUDA array filled by cudaMemcpy2DToArray and
point-sampled, as CUDA's simpleTexture does; a surface over an array read and written by
surf2Dread/surf2Dwrite, as simpleSurfaceWrite does) runs on gdevd through gdev-py's libcudart.so.13
and libcuda.so.1; every sample it prints equals CUDA's documented sampling."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from tests.clib.cbuild import PROGS, ROOT, clib_dir
from tests.clib.runner import need_cuda_h, nvcc
from tests.ptx.test_texture import Ref

GDEV_RUN = ROOT / "scripts" / "gdev-run"


@pytest.fixture(scope="module")
def rt_texture(tmp_path_factory) -> str:
    need_cuda_h()
    clib_dir()
    out = tmp_path_factory.mktemp("rt") / "rt_texture"
    subprocess.run([nvcc(), "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(out), str(PROGS / "rt_texture.cu")], check=True,
                   capture_output=True)
    return str(out)


def _floats(line: str) -> list[float]:
    return [float.fromhex(t) for t in line.split()]


def test_texture_program_through_gdev_run(gdevd, rt_texture) -> None:
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, rt_texture],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == "rt_texture ok", res.stdout
    assert lines[0] == "desc 3 13 7 32 2"       # pitch2D, 13x7, 32-bit float channels
    w, h, n = map(int, lines[1].split()[1:])
    img = np.array([_floats(x)[0] for x in lines[2:2 + w * h]], np.float32).reshape(h, w, 1)
    ref = Ref(img, "wrap", normalized=True, linear=True)
    for line in lines[2 + w * h:2 + w * h + n]:
        u, v, got = _floats(line)
        assert got == pytest.approx(ref.sample([u, v])[0], rel=1e-6, abs=1e-6), line
    k = 2 + w * h + n
    assert lines[k] == "fetch 10"
    got = np.array([_floats(x) for x in lines[k + 1:k + 11]], np.float32)
    pix = np.array([[j * 40, 255 - j, j, 128] for j in range(6)], np.float32) / 255
    np.testing.assert_array_equal(got[2:8], pix.astype(np.float32))
    np.testing.assert_array_equal(got[[0, 1, 8, 9]], 0)     # outside the buffer: zeros
    assert lines[k + 11] == "destroy again cudaErrorInvalidValue"
    # the array: (0.5,0.5) (5.5,3.5) (2.2,1.9) (-3,2.5) (9,9) (3.99,0.01), clamped points
    assert lines[k + 12] == "array info 32 6 4 back equal samples 0 35 12 20 35 3"
    assert lines[k + 13] == "surface ok"
