"""The guest context: a CUDA context on one gdevd mount, opened as a guest (the one seam
between the grid and the daemon's guest class).

The daemon's guest class (docs/scheduling.md) makes a context a guest when it asks to be one
(``cuCtxSetGuest``, the ABI's SET_GUEST), its vGPU is a guest vGPU (``vdN/guest``, set by the
node's owner) or its opening process runs SCHED_IDLE (``chrt --idle 0 dask worker ...``), as
its priority comes from its nice value: hosts are served first, a host preempts a guest's
kernel at once, and guests get the paper's periodic or continuous mode on the GPU. The grid's
contexts ask to be guests and take Gdev's lowest priority (0); on top of that the node keeps
its own cooperative multitasking (node.py), which also covers what the daemon does not see
(the host's CPU).
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
    """(driver, context): a context on vGPU ``minor`` of ``mount`` at Gdev's lowest priority
    that has made itself a guest of the daemon's guest class (whatever its vGPU and this
    process's policy; :func:`is_guest` tells), not left current in the calling thread
    (callers enter :func:`current`)."""
    cuda = driver_for(mount)
    ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(minor))
    cuda.cuCtxPopCurrent()
    cuda.cuCtxSetPriority(ctx, GUEST_PRIORITY)
    cuda.cuCtxSetGuest(ctx, True)
    return cuda, ctx


def is_guest(mount: str, pid: int | None = None) -> bool | None:
    """Whether the daemon counts every context of process ``pid`` (default: this one) as a
    guest (``MOUNT/proc/gdev/guests``); None when it has no such contexts or no guest class."""
    pid = os.getpid() if pid is None else pid
    try:
        mine = {cid for cid, p, _ in _table(mount, "contexts", "cid", "pid") if p == pid}
        flags = [g for cid, g, _ in _table(mount, "guests", "cid", "guest") if cid in mine]
    except (OSError, ValueError):
        return None
    return all(flags) if flags else None


def _table(mount: str, name: str, *columns: str) -> list[tuple[int, ...]]:
    """Integer ``columns`` of each row of the /proc/gdev table ``name`` (by its header), and
    the row's length last."""
    with open(os.path.join(mount, "proc", "gdev", name)) as f:
        lines = f.read().splitlines()
    head = lines[0].split()
    idx = [head.index(c) for c in columns]
    return [(*(int(r[i]) for i in idx), len(r)) for r in (line.split() for line in lines[1:])]


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
