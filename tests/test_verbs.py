"""One verb table (libgdev.verbs): every facade has exactly its verbs, with one contract."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import gdevd.facade
import gdevd.gdev
import kcuda
import libgdev
from gdevd import runtime as rt
from libgdev.cuda.backend import GdevBackend, ModuleBackend
from libgdev.handle import Handle
from libgdev.kernel import GdevKernel
from libgdev.verbs import CUDA_VERBS, HANDLE_VERBS

ROOT = Path(__file__).resolve().parents[1]


def test_the_runtime_exports_every_verb_as_a_coroutine() -> None:
    for verb in HANDLE_VERBS:
        assert verb in rt.__all__ and inspect.iscoroutinefunction(getattr(rt, verb)), verb


@pytest.mark.parametrize("facade", [gdevd.gdev, libgdev, Handle],
                         ids=["gdevd.gdev", "libgdev", "libgdev.Handle"])
def test_every_sync_facade_has_every_verb(facade: object) -> None:
    for verb in HANDLE_VERBS:
        fn = getattr(facade, verb)
        assert callable(fn) and not inspect.iscoroutinefunction(fn), verb
    if facade is not Handle:
        assert set(HANDLE_VERBS) <= set(facade.__all__)  # type: ignore[attr-defined]


def test_the_daemon_facade_binds_every_verb() -> None:
    facade = gdevd.facade.RuntimeFacade(system=None, trio_token=None)
    assert all(callable(getattr(facade, v)) for v in HANDLE_VERBS)


def test_every_backend_satisfies_the_cuda_protocol() -> None:
    protocol = {n for n in vars(GdevBackend) if not n.startswith("_")} - {"make_kernel"}
    assert protocol == set(CUDA_VERBS) | {"gmemcpy_async"}
    for ns in (gdevd.gdev, libgdev, gdevd.facade.RuntimeFacade(None, None)):
        backend = ModuleBackend(ns)
        assert all(callable(getattr(backend, v)) for v in protocol)


def test_there_is_one_launch_descriptor() -> None:
    defined = [str(p.relative_to(ROOT)) for pkg in ("libgdev", "gdevd", "kcuda", "procfs")
               for p in sorted((ROOT / pkg).rglob("*.py"))
               if any(isinstance(n, ast.ClassDef) and n.name == "GdevKernel"
                      for n in ast.walk(ast.parse(p.read_text())))]
    assert defined == ["libgdev/kernel.py"]
    assert libgdev.GdevKernel is rt.GdevKernel is gdevd.gdev.GdevKernel is GdevKernel
    assert gdevd.facade.RuntimeFacade.GdevKernel is GdevKernel
    assert "libgdev.kernel" in libgdev.PROTOCOL


def test_one_sync_facade_forwards_to_the_runtime() -> None:
    def forwards(path: Path) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == "run" and
                   ast.unparse(n.value).endswith("from_thread")
                   for n in ast.walk(ast.parse(path.read_text())))
    callers = [str(p.relative_to(ROOT)) for pkg in ("gdevd", "kcuda")
               for p in sorted((ROOT / pkg).rglob("*.py")) if forwards(p)]
    assert callers == ["gdevd/facade.py"]
    assert kcuda.RuntimeFacade is gdevd.facade.RuntimeFacade
