"""The structs of the GIPC_* commands (CUDA IPC: ``cuIpcGetMemHandle``/``cuIpcOpenMemHandle``/
``cuIpcCloseMemHandle`` and interprocess events); :mod:`libgdev.messages` declares the
commands with the others.  A handle travels as the 64 bytes
of :mod:`libgdev.ipchandle`; the contracts are ``gdevd/runtime/api_ipc.py``'s.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

from libgdev.ipchandle import HANDLE_SIZE
from libgdev.wire import U32, U64

IpcBytes = Annotated[bytes, f"{HANDLE_SIZE}s"]
IPC_SYNC_TIMEOUT = 0x1  # IpcEventSync flag: timeout_us is valid (else wait forever)


class IpcToken(NamedTuple):
    """A 64-byte IPC handle (what GIPC_EXPORT and GIPC_EVENT_NEW return, what the opens
    take)."""

    handle: IpcBytes


class IpcMapping(NamedTuple):
    """GIPC_OPEN: where the opened allocation lies in this context, and its size."""

    addr: U64
    size: U64


class IpcEvent(NamedTuple):
    """An interprocess event this context holds (its id in the daemon's event table)."""

    event: U32


class IpcEventStream(NamedTuple):
    """GIPC_EVENT_RECORD: record ``event`` at the current end of ``stream``;
    GIPC_EVENT_WAIT: order ``stream``'s later work after the event's last record."""

    event: U32
    stream: U32


class IpcEventSync(NamedTuple):
    """GIPC_EVENT_SYNC: wait for the event's last record; ``timeout_us`` valid with
    IPC_SYNC_TIMEOUT (0 polls)."""

    event: U32
    flags: U32
    timeout_us: U64
