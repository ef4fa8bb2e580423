"""The guest context: a CUDA context on one gdevd mount, opened as a guest (the one seam
between the grid and the daemon's guest class).

A context is a guest when its opener runs SCHED_IDLE, as its priority comes from its nice
value (the opening thread runs SCHED_IDLE for the open), or when the guest verb marks it
(``Handle.gset_guest(True)``, used when libgdev has it); the opener also lowers the context's
priority to Gdev's lowest (0), so that host launches waiting beside a guest piece always go
first. All are requests a daemon without a guest class simply ignores; the grid's own
cooperative multitasking (node.py) keeps the host's frame rate either way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import types
from collections.abc import Iterator
from typing import Any

import libgdev
from libgdev import cuda as _cuda

from .matmul import KERNELS_PTX
from .pieces import Kernel

GUEST_PRIORITY = 0


def driver_for(mount: str) -> Any:
    """A CUDA driver of its own whose contexts open devices under ``mount``."""
    ns = types.SimpleNamespace(**{v: getattr(libgdev, v) for v in libgdev.VERBS})
    ns.gopen = functools.partial(libgdev.gopen, mount=mount)
    ns.gdevice_count = functools.partial(libgdev.gdevice_count, mount)
    ns.GdevKernel = libgdev.GdevKernel
    driver = _cuda.bind(ns)
    driver.cuInit(0)
    return driver


def open_guest(mount: str, minor: int = 0) -> tuple[Any, Any]:
    """(driver, context): a guest context on vGPU ``minor`` of ``mount``; the context is not
    left current in the calling thread (callers enter :func:`current`)."""
    cuda = driver_for(mount)
    with _sched_idle():
        ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(minor))
    cuda.cuCtxSetPriority(ctx, GUEST_PRIORITY)
    mark = getattr(ctx.handle, "gset_guest", None)  # the guest verb, where libgdev has it
    if mark is not None:
        mark(True)
    cuda.cuCtxPopCurrent()
    return cuda, ctx


GUEST_NICE = 10
_niced = threading.local()


def nice_guest_thread() -> None:
    """Lower the calling thread's CPU priority to nice GUEST_NICE, once per thread: the
    guest's own CPU work (staging, the driver) yields to the host's processes. Best effort:
    a thread that may not change its niceness keeps it."""
    if getattr(_niced, "done", False):
        return
    _niced.done = True
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid),
                                                 GUEST_NICE))
    except OSError:
        pass


@contextlib.contextmanager
def current(cuda: Any, ctx: Any) -> Iterator[None]:
    """Make ``ctx`` current in the calling thread for the block."""
    cuda.cuCtxPushCurrent(ctx)
    try:
        yield
    finally:
        cuda.cuCtxPopCurrent()


def null_kernel() -> Kernel:
    """The paper's null kernel: returns at once (``null(unsigned *out, unsigned n)``)."""
    return Kernel.from_file(KERNELS_PTX, "null", (1, 1, 1))


@contextlib.contextmanager
def _sched_idle() -> Iterator[None]:
    """Run the block with the calling thread in SCHED_IDLE (where the kernel allows it)."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        yield  # no SCHED_IDLE here: the priority alone marks the guest
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, policy, param)
