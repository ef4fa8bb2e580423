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
from libgdev.verbs import CUDA_VERBS, HANDLE_VERBS, GdevContext

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


def _params(fn: object, skip: int) -> list[inspect.Parameter]:
    """``fn``'s parameters after the first ``skip`` (self, the handle)."""
    return list(inspect.signature(fn).parameters.values())[skip:]  # type: ignore[arg-type]


def _satisfies(fn: object, skip: int, want: list[inspect.Parameter]) -> bool:
    """``fn`` takes ``want``'s parameters by name and in order, then only parameters with a
    default (the client defaults a copy's size to its buffer's, the runtime asks for it)."""
    got = _params(fn, skip)
    head, rest = got[:len(want)], got[len(want):]
    return [p.name for p in head] == [p.name for p in want] and \
        all(p.default is not p.empty for p in rest)


def _bound(facade: gdevd.facade.RuntimeFacade, verb: str) -> object:
    """The runtime verb that ``facade.verb`` runs (its contract is that verb's)."""
    bound = getattr(facade, verb)
    assert bound.func == facade.call and bound.args == (getattr(rt, verb),), verb
    return bound.args[0]


# Every facade of the verb table: where its verbs come from and how many leading parameters
# (self, the handle) each verb takes before the protocol's.
FACADES = {
    "libgdev.Handle": (lambda v: getattr(Handle, v), 1, HANDLE_VERBS),
    "libgdev": (lambda v: getattr(libgdev, v), 1, HANDLE_VERBS),
    "gdevd.runtime": (lambda v: getattr(rt, v), 1, HANDLE_VERBS),
    "gdevd.gdev": (lambda v: getattr(gdevd.gdev, v), 1, HANDLE_VERBS),
    "kcuda": (lambda v: _bound(kcuda.RuntimeFacade(None, None), v), 1, HANDLE_VERBS),
    "libgdev.cuda backend": (lambda v: getattr(GdevBackend, v), 2,
                             [v for v in HANDLE_VERBS if v in vars(GdevBackend)]),
}


@pytest.mark.parametrize("facade", FACADES)
def test_every_facade_takes_the_protocols_parameters(facade: str) -> None:
    get, skip, verbs = FACADES[facade]
    assert len(verbs) >= len(CUDA_VERBS) - 2
    for verb in verbs:
        assert _satisfies(get(verb), skip, _params(getattr(GdevContext, verb), 1)), verb


def test_the_protocol_is_the_table_and_the_client_handle_satisfies_it() -> None:
    assert HANDLE_VERBS == tuple(n for n in vars(GdevContext) if not n.startswith("_"))
    assert issubclass(Handle, GdevContext)  # runtime_checkable: every verb is there
    assert not issubclass(ModuleBackend, GdevContext)  # handle-first: not a context
