"""sm_80/sm_90 CUDA applications built by nvcc -cudart shared and run unchanged on a mounted
gdevd through gdev-py's libcudart.so and libcuda.so.1, once on each engine
(/proc/gdev/ptx_engine): apps/async_app.cu (cuda::barrier + cuda::memcpy_async,
cuda::pipeline, cooperative_groups::memcpy_async, arrive_and_drop, producer/consumer warps,
invoke_one: mbarrier, cp.async and elect.sync) and apps/tensor_app.cu (bf16, tf32, int8 and
f64 WMMA GEMMs).  Each application checks its own results against host references."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import ROOT, clib_dir
from tests.clib.runner import need_cuda_h, nvcc
from tests.daemon.conftest import (
    gdevd,  # noqa: F401  (the module-scoped daemon)
    read_text,
    write_once,
)

pytestmark = pytest.mark.mount
APPS = Path(__file__).resolve().parent / "apps"
# application -> (virtual architecture, the lines it prints when every check passes)
CASES = {"async_app": ("compute_90", ["barrier_copy", "pipeline_sum", "cg_memcpy_async",
                                      "arrive_and_drop", "producer_consumer", "invoke_one"]),
         "tensor_app": ("compute_80", ["bf16_wmma", "tf32_wmma", "int8_wmma", "f64_wmma"])}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Both applications, built once for the module."""
    need_cuda_h()
    clib_dir()
    out = {}
    for name, (arch, _) in CASES.items():
        exe = tmp_path_factory.mktemp(name) / name
        subprocess.run([nvcc(), "-cudart", "shared", "-gencode", f"arch={arch},code={arch}",
                        "-o", str(exe), str(APPS / f"{name}.cu")], check=True,
                       capture_output=True)
        out[name] = exe
    return out


@pytest.mark.slow     # the daemon compiles each application's module (~10-20 s on 2 cores)
@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("app", sorted(CASES))
def test_application_on_each_engine(gdevd, built, app, engine) -> None:  # noqa: F811
    write_once(gdevd.proc_path("ptx_engine"), engine.encode())
    try:
        res = subprocess.run([str(ROOT / "scripts" / "gdev-run"), "--mount", gdevd.mount,
                              str(built[app])], capture_output=True, text=True, timeout=600)
    finally:
        write_once(gdevd.proc_path("ptx_engine"), b"auto")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split("\n")[:-1] == [f"{n} ok" for n in CASES[app][1]], res.stdout
    if engine == "jit":       # the module compiled whole: no kernel left to the interpreter
        rows = [r.split() for r in read_text(gdevd.proc_path("ptx_modules")).splitlines()[1:]]
        kernels = str(len(CASES[app][1]))      # one kernel per check
        assert any(r[2] == "jit" and r[4] == r[5] == kernels for r in rows), rows
