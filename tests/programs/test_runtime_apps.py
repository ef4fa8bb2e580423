"""CUDA runtime applications of CUDA 12's newer calls, built by nvcc -cudart shared (PTX for
sm_75) and run unchanged on a mounted gdevd through gdev-py's libcudart.so and libcuda.so.1,
once on each engine (/proc/gdev/ptx_engine):

* apps/params_app.cu: kernel parameters past the old 4 KiB limit (up to CUDA 12.1's 32764
  bytes), launched directly and from a captured graph;
* apps/graphcond_app.cu: conditional graph nodes (IF/ELSE, WHILE, SWITCH, defaults applied at
  every launch, a foreign handle refused) through cudaGraphAddNode and a kernel's
  cudaGraphSetConditional.

Each application checks its own results and prints one "<check> ok" line per check."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clib.runner import build_cuda
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)

from .apprun import run_on_engine

pytestmark = pytest.mark.mount
APPS = Path(__file__).resolve().parent / "apps"
CASES = {"params_app": ["params_8000", "params_32000", "params_graph"],
         "graphcond_app": ["if_else", "while_loop", "switch", "foreign_handle"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """Every application, built once for the module."""
    return {name: build_cuda(APPS / f"{name}.cu", tmp_path_factory.mktemp(name) / name)
            for name in CASES}


@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("app", sorted(CASES))
def test_application_on_each_engine(gdevd, built, app, engine) -> None:  # noqa: F811
    res = run_on_engine(gdevd, built[app], engine)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.split("\n")[:-1] == [f"{n} ok" for n in CASES[app]], res.stdout
