"""sm_80/sm_90 CUDA applications built by nvcc -cudart shared and run unchanged on a mounted
gdevd through gdev-py's libcudart.so and libcuda.so.1, once on each engine
(/proc/gdev/ptx_engine): apps/async_app.cu (cuda::barrier + cuda::memcpy_async,
cuda::pipeline, cooperative_groups::memcpy_async, arrive_and_drop, producer/consumer warps,
invoke_one: mbarrier, cp.async and elect.sync) and apps/tensor_app.cu (bf16, tf32, int8 and
f64 WMMA GEMMs).  Each application checks its own results against host references."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import module_rows, run_on_engine

pytestmark = pytest.mark.mount
APPS = Path(__file__).resolve().parent / "apps"
# application -> (virtual architecture, the lines it prints when every check passes)
CASES = {"async_app": ("compute_90", ["barrier_copy", "pipeline_sum", "cg_memcpy_async",
                                      "arrive_and_drop", "producer_consumer", "invoke_one"]),
         "tensor_app": ("compute_80", ["bf16_wmma", "tf32_wmma", "int8_wmma", "f64_wmma"])}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Both applications, built once for the module."""
    return {name: build_cuda(APPS / f"{name}.cu", tmp_path_factory.mktemp(name) / name, arch)
            for name, (arch, _) in CASES.items()}


@pytest.mark.slow     # the daemon compiles each application's module (~10-20 s on 2 cores)
@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("app", sorted(CASES))
def test_application_on_each_engine(gdevd, built, app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, built[app], engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split("\n")[:-1] == [f"{n} ok" for n in CASES[app][1]], res.stdout
    if engine == "jit":       # the module compiled whole: no kernel left to the interpreter
        rows = module_rows(gdevd)
        kernels = str(len(CASES[app][1]))      # one kernel per check
        assert any(r[2] == "jit" and r[4] == r[5] == kernels for r in rows), rows
