"""Error paths with injected backend failures: each leaves nothing allocated or half-built,
and the context stack as it was; plus the context stack held against a model."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from gdevd.errors import GdevError
from gdevd.facade import RuntimeFacade
from libgdev.cuda import CudaError, bind
from libgdev.cuda import CUresult as R

from .test_module_launch import GLOBALS_PTX


class Faulty:
    """A backend that fails the ``nth`` call (1-based) of ``verb`` with ``err``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.plan: dict[str, tuple[int, int]] = {}
        self.calls: dict[str, int] = {}

    def fail(self, verb: str, nth: int, err: int) -> None:
        self.plan[verb] = (nth, err)
        self.calls[verb] = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in self.plan:
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            self.calls[name] += 1
            nth, err = self.plan[name]
            if self.calls[name] == nth:
                raise GdevError(err, f"injected failure of {name}")
            return attr(*args, **kw)
        return call


@pytest.fixture
def faulty(kernel_thread) -> Any:  # type: ignore[no-untyped-def]
    be = Faulty(RuntimeFacade(kernel_thread.system, kernel_thread.token))
    drv = bind(be)
    drv.cuInit(0)
    drv.cuCtxCreate(0, 0)
    yield drv, be
    drv.shutdown()
    kernel_thread.fsck()


@pytest.mark.parametrize(("verb", "nth"), [("gmalloc", 1), ("gmalloc", 2),
                                           ("gmemcpy_to_device", 1), ("gmemcpy_to_device", 2)])
def test_module_load_failure_frees_what_it_got(faulty, monkeypatch, verb: str,
                                               nth: int) -> None:
    """The runtime's module load (code, then data segment) fails at its nth allocation or
    copy: it frees what it got, and the CUDA layer keeps no module."""
    from gdevd.runtime import api_module

    drv, be = faulty
    free = drv.cuMemGetInfo()[0]
    real, calls = getattr(api_module, verb), []

    async def failing(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == nth:
            raise GdevError(errno.ENOMEM, f"injected failure of {verb}")
        return await real(*args)
    monkeypatch.setattr(api_module, verb, failing)
    with pytest.raises(CudaError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        drv.cuModuleLoadData(GLOBALS_PTX)
    monkeypatch.undo()
    assert len(calls) == nth
    assert drv.cuMemGetInfo()[0] == free
    assert drv.cuCtxGetCurrent().modules == []
    drv.cuModuleLoadData(GLOBALS_PTX)  # and the next load works


def test_context_create_failure_changes_nothing(faulty) -> None:
    drv, be = faulty
    top = drv.cuCtxGetCurrent()
    be.fail("gopen", 1, errno.EBUSY)
    with pytest.raises(CudaError, match="CUDA_ERROR_DEVICE_UNAVAILABLE"):
        drv.cuCtxCreate(0, 1)
    assert drv.cuCtxGetCurrent() is top and len(drv.contexts) == 1


def test_event_failures(faulty) -> None:
    drv, be = faulty
    be.fail("gmalloc", 1, errno.ENOMEM)
    with pytest.raises(CudaError, match="CUDA_ERROR_OUT_OF_MEMORY"):
        drv.cuEventCreate()
    assert drv.cuCtxGetCurrent().events == []
    ev = drv.cuEventCreate()
    be.fail("gmodule_launch", 1, errno.EINVAL)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_VALUE"):
        drv.cuEventRecord(ev, None)
    with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        drv.cuEventElapsedTime(ev, ev)  # the failed record recorded nothing
    drv.cuEventRecord(ev, None)
    drv.cuEventSynchronize(ev)
    assert drv.cuEventElapsedTime(ev, ev) == 0.0


def test_lost_daemon_connection_is_an_os_error(faulty) -> None:
    drv, be = faulty
    be.fail("gmalloc", 1, errno.ECONNRESET)
    with pytest.raises(CudaError) as info:
        drv.cuMemAlloc(4096)
    assert info.value.result is R.CUDA_ERROR_OPERATING_SYSTEM


class ContextStack(RuleBasedStateMachine):
    """cuCtxCreate/Push/Pop/Set/Destroy against a list model of the thread's stack."""

    drv: Any = None

    def __init__(self) -> None:
        super().__init__()
        self.model: list[Any] = []
        self.alive: list[Any] = []
        self.drv.shutdown()

    @rule(dev=st.integers(0, 3))
    def create(self, dev: int) -> None:
        ctx = self.drv.cuCtxCreate(0, dev)
        self.model.append(ctx)
        self.alive.append(ctx)

    @precondition(lambda self: self.alive)
    @rule(i=st.integers(0, 100))
    def push(self, i: int) -> None:
        ctx = self.alive[i % len(self.alive)]
        self.drv.cuCtxPushCurrent(ctx)
        self.model.append(ctx)

    @rule()
    def pop(self) -> None:
        if not self.model:
            with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_CONTEXT"):
                self.drv.cuCtxPopCurrent()
            return
        assert self.drv.cuCtxPopCurrent() is self.model.pop()

    @rule(i=st.integers(-1, 100))
    def set_current(self, i: int) -> None:
        ctx = self.alive[i % len(self.alive)] if self.alive and i >= 0 else None
        self.drv.cuCtxSetCurrent(ctx)
        if ctx is None:
            if self.model:
                self.model.pop()
        elif self.model:
            self.model[-1] = ctx
        else:
            self.model.append(ctx)

    @precondition(lambda self: self.alive)
    @rule(i=st.integers(0, 100))
    def destroy(self, i: int) -> None:
        ctx = self.alive.pop(i % len(self.alive))
        self.drv.cuCtxDestroy(ctx)
        self.model = [c for c in self.model if c is not ctx]
        with pytest.raises(CudaError, match="CUDA_ERROR_INVALID_CONTEXT"):
            self.drv.cuCtxPushCurrent(ctx)

    @invariant()
    def same_top(self) -> None:
        assert self.drv.cuCtxGetCurrent() is (self.model[-1] if self.model else None)
        assert set(map(id, self.drv.contexts)) == set(map(id, self.alive))

    def teardown(self) -> None:
        self.drv.shutdown()
        self.drv._stack().clear()


def test_context_stack_model(drv, kernel_thread) -> None:
    ContextStack.drv = drv
    ContextStack.TestCase.settings = settings(max_examples=30, stateful_step_count=15,
                                              deadline=None)
    ContextStack.TestCase().runTest()
