"""Separate compilation: an application of three units built by ``nvcc -rdc=true`` (PTX
embedded; tests/programs/apps/rdc: an extern __device__ function and __constant__ variable of
math.cu, an extern __device__ variable written by a kernel of main.cu and read by a kernel of
data.cu, a static __device__ function of one name in both, a template both instantiate,
which each unit defines .weak) runs unchanged on a mounted gdevd
through libcudart.so on each engine: libcudart collects every unit's PTX from nvcc's
device-link registration and the daemon links them into one module.  A second application
has simpleSeparateCompilation's shape (apps/rdc_fptr: __device__ function pointers of one
unit initialized with another unit's functions, read by the host, called through by a
kernel).  Built by nvcc's default (NVIDIA's static runtime), libcuda links the same units
from the wrapper the runtime hands it.  Built with machine code only it fails with the
message that says to embed PTX."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.runner import need_cuda_h, nvcc
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APPS = Path(__file__).resolve().parent / "apps"


def build_rdc(out: Path, code: str, app: str = "rdc", cudart: str = "shared") -> Path:
    """The units of apps/``app`` (a directory, or one .cu) linked by nvcc with relocatable
    device code, for ``code``, on runtime ``cudart``."""
    need_cuda_h()
    units = sorted((APPS / app).glob("*.cu")) if (APPS / app).is_dir() else [APPS / app]
    subprocess.run([nvcc(), "-cudart", cudart, "-rdc=true", "-gencode",
                    f"arch=compute_75,code={code}", "-o", str(out), *map(str, units)],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def rdc_app(tmp_path_factory) -> Path:
    return build_rdc(tmp_path_factory.mktemp("rdc") / "rdc_app", "compute_75")


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_separately_compiled_units_run_as_one_module(gdevd, rdc_app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, rdc_app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "tally=300 o[7]=21.5 tags[7]=1007 got[7]=2307\nrdc ok\n", res.stdout
    if engine == "jit":      # the linked module's two kernels ran compiled
        rows = module_rows(gdevd)
        assert any(r[2] == "jit" and r[4] == r[5] == "2" for r in rows), rows


@pytest.mark.parametrize("engine", ["interp", "jit"])
def test_function_pointers_across_units(gdevd, tmp_path_factory, engine) -> None:  # noqa: F811
    app = build_rdc(tmp_path_factory.mktemp("fptr") / "fptr_app", "compute_75", "rdc_fptr")
    res = run_on_engine(gdevd, app, engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "no error h[7]=28\nfptr ok\n", res.stdout


@pytest.mark.parametrize("app", ["rdc", "rdc_fptr"])
def test_nvidias_static_runtime_links_the_units_too(gdevd, tmp_path, app) -> None:  # noqa: F811
    prog = build_rdc(tmp_path / app, "compute_75", app, cudart="static")
    res = run_on_engine(gdevd, prog, "jit")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.endswith("rdc ok\n" if app == "rdc" else "fptr ok\n"), res.stdout


def test_machine_code_only_is_refused_with_the_reason(gdevd, tmp_path) -> None:  # noqa: F811
    res = run_on_engine(gdevd, build_rdc(tmp_path / "rdc_sass", "sm_75"), "auto")
    assert res.returncode == 1
    assert "no kernel image is available" in res.stdout, res.stdout
    assert "build with PTX" in res.stdout, res.stdout


@pytest.mark.slow     # nvcc builds thrust (~30 s)
def test_thrust_built_with_rdc(gdevd, tmp_path) -> None:  # noqa: F811
    """thrust's -rdc PTX: one large unit of .weak templates that declares malloc and free
    (PTX system calls: no definition needed) beside the device runtime nvcc links in."""
    app = build_rdc(tmp_path / "thrust_rdc", "compute_75", "thrust_app.cu")
    res = run_on_engine(gdevd, app, "interp")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("thrust ok n=20000 sort=1 keys=1 sumsq=1 scan=1 count=1 "
                          "unique=1\n"), res.stdout
