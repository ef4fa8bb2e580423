"""CUDA IPC in the driver (``cuIpcGetMemHandle``, ``cuIpcOpenMemHandle``,
``cuIpcCloseMemHandle``, ``cuIpcGetEventHandle``, ``cuIpcOpenEventHandle``), written once
over the backend's ``gipc_*`` verbs like the rest of the driver.

A handle is the daemon's 64 bytes (:mod:`libgdev.ipchandle`), returned and taken as
``bytes``.  CUDA's rules for processes are kept here, as in libcuda's ``ipc.c``: a handle
cannot be opened in the process that exported it (CUDA_ERROR_INVALID_CONTEXT); opening it
again in the same context returns the same pointer, reference counted; a handle naming
nothing live is CUDA_ERROR_INVALID_HANDLE.  An interprocess event (created with
CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) lives in the daemon (``event.py``).
"""

from __future__ import annotations

import errno
import os
from typing import Any

from libgdev import ipchandle

from .core import DriverCore
from .errors import CUresult, api, fail
from .event import CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS, Event

CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1


def _foreign(handle: Any, magic: bytes) -> ipchandle.IpcHandle:
    h = ipchandle.unpack(handle, magic)
    if h is None:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "not a gdev IPC handle")
    if h.pid == os.getpid():
        raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT,
                   "a handle cannot be opened in the process that exported it")
    return h


def _open(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, a daemon open: a handle naming nothing live is an invalid handle."""
    try:
        return fn(*args)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, str(exc)) from exc
        raise


class IpcAPI(DriverCore):
    """cuIpc* entry points (mixed into the driver)."""

    @api
    def cuIpcGetMemHandle(self, dptr: int) -> bytes:
        """The 64-byte handle of the cuMemAlloc allocation containing ``dptr``."""
        ctx = self._current()
        if not any(base <= dptr < base + size for base, size in ctx.mem.items()):
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{dptr:#x} is no cuMemAlloc memory")
        return bytes(ctx.backend.gipc_export(ctx.handle, dptr))

    @api
    def cuIpcOpenMemHandle(self, handle: bytes,
                           flags: int = CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) -> int:
        """Map the allocation ``handle`` names into the current context: its pointer."""
        ctx = self._current()
        if flags & ~CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"flags {flags:#x}")
        _foreign(handle, ipchandle.MEM_MAGIC)
        addr, size = _open(ctx.backend.gipc_open, ctx.handle, bytes(handle))
        opens = ctx.scratch.setdefault("ipc_opens", {})
        opens[addr] = opens.get(addr, 0) + 1
        ctx.mem.setdefault(addr, size)
        return int(addr)

    @api
    def cuIpcCloseMemHandle(self, dptr: int) -> None:
        """Drop one open of ``dptr`` (from cuIpcOpenMemHandle); the last unmaps it."""
        ctx = self._current()
        opens = ctx.scratch.get("ipc_opens", {})
        if dptr not in opens:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"{dptr:#x} was not opened here")
        ctx.backend.gipc_close(ctx.handle, dptr)
        opens[dptr] -= 1
        if not opens[dptr]:
            del opens[dptr]
            ctx.mem.pop(dptr, None)

    @api
    def cuIpcGetEventHandle(self, hevent: Any) -> bytes:
        """The 64-byte handle of an interprocess event."""
        ev = self._event(hevent)
        if not ev.ipc:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, "not an interprocess event")
        return bytes(ev.ipc_handle)

    @api
    def cuIpcOpenEventHandle(self, handle: bytes) -> Event:
        """The interprocess event ``handle`` names, as an event of the current context."""
        ctx = self._current()
        _foreign(handle, ipchandle.EVENT_MAGIC)
        ev = Event(ctx, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)
        ev.ipc = int(_open(ctx.backend.gipc_event_open, ctx.handle, bytes(handle)))
        ev.ipc_handle = bytes(handle)
        ctx.events.append(ev)
        return ev
