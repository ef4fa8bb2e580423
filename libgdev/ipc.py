"""Mixed into :class:`libgdev.Handle`: CUDA IPC as Gdev verbs (the GIPC_* commands;
contracts in ``gdevd/runtime/api_ipc.py``).

A handle is 64 plain bytes (:mod:`libgdev.ipchandle`) that may travel by any means (a pipe, a
file, a socket); whoever presents it to the daemon may open what it names, so treat it as
a secret.  ``gipc_event_new`` returns the handle of the new event; the event's id in this
context is the handle's ``id`` (:func:`libgdev.ipchandle.unpack`).
"""

from __future__ import annotations

import errno

from libgdev import abi
from libgdev.connection import Connection
from libgdev.errors import error_from_errno
from libgdev.ipchandle import HANDLE_SIZE
from libgdev.wire import Command, Rep, Req


class IpcVerbs:
    """The GIPC_* verbs (``_conn`` and ``_fd`` are Handle's)."""

    _conn: Connection
    _fd: int

    def _ipc(self, cmd: Command[Req, Rep], req: Req) -> Rep:
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(cmd, req).fields

    def gipc_export(self, addr: int) -> bytes:
        """The 64-byte IPC handle of the device allocation containing ``addr``."""
        return bytes(self._ipc(abi.GIPC_EXPORT, abi.Addr(addr)).handle)

    def gipc_open(self, ipc_handle: bytes) -> tuple[int, int]:
        """Map the allocation IPC ``ipc_handle`` names: its ``(address, size)`` here."""
        m = self._ipc(abi.GIPC_OPEN, abi.IpcToken(_bytes(ipc_handle)))
        return m.addr, m.size

    def gipc_close(self, addr: int) -> None:
        """Drop one open of the IPC mapping at ``addr`` (the last unmaps it)."""
        self._ipc(abi.GIPC_CLOSE, abi.Addr(addr))

    def gipc_event_new(self) -> bytes:
        """A new interprocess event of this context: its 64-byte handle."""
        return bytes(self._ipc(abi.GIPC_EVENT_NEW, abi.Empty()).handle)

    def gipc_event_open(self, ipc_handle: bytes) -> int:
        """The event IPC ``ipc_handle`` names, as an id of this context."""
        return self._ipc(abi.GIPC_EVENT_OPEN, abi.IpcToken(_bytes(ipc_handle))).event

    def gipc_event_record(self, event: int, stream: int = 0) -> None:
        """Record ``event`` at the current end of ``stream``."""
        self._ipc(abi.GIPC_EVENT_RECORD, abi.IpcEventStream(event, stream))

    def gipc_event_sync(self, event: int, timeout: float | None = None) -> None:
        """Wait for the event's last record (ETIME after ``timeout`` s; 0 polls)."""
        flags = 0 if timeout is None else abi.IPC_SYNC_TIMEOUT
        us = 0 if timeout is None else max(0, int(timeout * 1e6))
        self._ipc(abi.GIPC_EVENT_SYNC, abi.IpcEventSync(event, flags, us))

    def gipc_event_wait(self, stream: int, event: int) -> None:
        """Order ``stream``'s later work after the event's last record."""
        self._ipc(abi.GIPC_EVENT_WAIT, abi.IpcEventStream(event, stream))

    def gipc_event_close(self, event: int) -> None:
        """Drop this context's reference on ``event``."""
        self._ipc(abi.GIPC_EVENT_CLOSE, abi.IpcEvent(event))


def _bytes(handle: object) -> bytes:
    """``handle`` as the 64 bytes a message carries (EINVAL for anything else)."""
    if not isinstance(handle, bytes | bytearray | memoryview) or \
            len(handle) != HANDLE_SIZE:
        raise error_from_errno(errno.EINVAL, f"an IPC handle is {HANDLE_SIZE} bytes")
    return bytes(handle)
