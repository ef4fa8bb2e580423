"""Host<->device copies across the process boundary: the three paths of Gdev's memcpy.

* pinned: the host side lies in a ``gmalloc_dma`` buffer -> one message with (buf_id, offset)
  and one copy in the daemon (PINCPY);
* direct: at most ``inline_max`` bytes -> the data rides inside the message or its reply;
* staged: anything larger streams through the session's staging slots, ``slots`` requests in
  flight: the client fills slot i+1 while the daemon's copy engine moves slot i (HtoD), or
  drains slot i while the daemon fills slot i+1 (DtoH) -- the split transaction, across two
  processes.

Every function returns the fence id of the last copy (0 when the copy is already complete) and
raises the first errno after collecting every outstanding reply, so the connection stays in
step even when a chunk fails.
"""

from __future__ import annotations

import errno
from collections import deque
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from libgdev import abi
from libgdev.errors import GdevError, error_from_errno
from libgdev.wire import Command

if TYPE_CHECKING:
    from libgdev.connection import Connection
    from libgdev.hostmem import DmaBuffer, Staging

# A host<->device copy's reply: empty (synchronous) or a fence (asynchronous).
CopyReply = TypeVar("CopyReply", abi.Empty, abi.Fence)
CopyCommand = Command[abi.MemcpyHost, CopyReply]
SyncCopy = Command[abi.MemcpyHost, abi.Empty]  # what the staging pipeline sends



def _fence(reply: abi.Empty | abi.Fence) -> int:
    return reply.id if isinstance(reply, abi.Fence) else 0


def pinned(conn: Connection, cmd: CopyCommand[CopyReply], dev: int, buf: DmaBuffer,
           offset: int, size: int, stream: int = 0) -> int:
    """One copy between device memory and a pinned buffer; the reply's fence id or 0."""
    req = abi.MemcpyHost(dev, size, offset, buf.buf_id, abi.HOST_DMA, stream)
    return _fence(conn.call(cmd, req).fields)


def inline_to_device(conn: Connection, cmd: CopyCommand[CopyReply], dev: int,
                     src: memoryview, stream: int = 0) -> int:
    """HtoD with the data inside the message."""
    req = abi.MemcpyHost(dev, len(src), 0, 0, abi.HOST_INLINE, stream)
    return _fence(conn.call(cmd, req, src).fields)


def inline_from_device(conn: Connection, dst: memoryview, dev: int, stream: int = 0) -> None:
    """DtoH with the data inside the reply."""
    reply = conn.call(abi.GMEMCPY_FROM_DEVICE,
                      abi.MemcpyHost(dev, len(dst), 0, 0, abi.HOST_INLINE, stream))
    if len(reply.tail) != len(dst):
        raise error_from_errno(errno.EPROTO, f"reply carried {len(reply.tail)} of {len(dst)} bytes")
    dst[:] = reply.tail


def _chunks(size: int, chunk: int) -> list[tuple[int, int]]:
    return [(off, min(chunk, size - off)) for off in range(0, size, chunk)]


def _send_chunk(conn: Connection, cmd: SyncCopy, stg: Staging, i: int, dev: int,
                n: int, stream: int) -> int:
    req = abi.MemcpyHost(dev, n, (i % stg.slots) * stg.chunk, 0, abi.HOST_STAGING, stream)
    return conn.send(cmd, req)


class _Collector:
    """Receives replies in order, remembering the first error instead of raising at once."""

    def __init__(self, conn: Connection, cmd: SyncCopy) -> None:
        self.conn = conn
        self.cmd = cmd
        self.error: BaseException | None = None

    def take(self, rid: int) -> bool:
        try:
            self.conn.receive(self.cmd, rid)
            return True
        except GdevError as exc:
            self.error = self.error or exc
            if exc.errno in (errno.EPIPE, errno.ECONNRESET):  # nothing more will come
                raise
            return False

    def finish(self) -> None:
        if self.error is not None:
            raise self.error


def staged_to_device(conn: Connection, stg: Staging, dev: int, src: memoryview,
                     stream: int = 0) -> None:
    """HtoD through the staging slots, ``stg.slots`` chunks in flight."""
    host = np.frombuffer(src, dtype=np.uint8)
    inflight: deque[int] = deque()
    col = _Collector(conn, abi.GMEMCPY_TO_DEVICE)
    with conn.lock:
        for i, (off, n) in enumerate(_chunks(len(src), stg.chunk)):
            if len(inflight) == stg.slots:
                col.take(inflight.popleft())
            if col.error is not None:
                break
            stg.slot(i % stg.slots)[:n] = host[off:off + n]
            inflight.append(_send_chunk(conn, abi.GMEMCPY_TO_DEVICE, stg, i, dev + off, n,
                                        stream))
        while inflight:
            col.take(inflight.popleft())
    col.finish()


def staged_from_device(conn: Connection, stg: Staging, dst: memoryview, dev: int,
                       stream: int = 0) -> None:
    """DtoH through the staging slots: the daemon fills ahead while the client drains."""
    host = np.frombuffer(dst, dtype=np.uint8)
    chunks = _chunks(len(dst), stg.chunk)
    col = _Collector(conn, abi.GMEMCPY_FROM_DEVICE)
    with conn.lock:
        inflight = deque(_send_chunk(conn, abi.GMEMCPY_FROM_DEVICE, stg, i, dev + off, n,
                                     stream)
                         for i, (off, n) in enumerate(chunks[:stg.slots]))
        for i, (off, n) in enumerate(chunks):
            if not inflight:
                break
            ok = col.take(inflight.popleft())
            if ok and col.error is None:
                host[off:off + n] = stg.slot(i % stg.slots)[:n]
            nxt = i + stg.slots
            if nxt < len(chunks) and col.error is None:
                o, m = chunks[nxt]
                inflight.append(_send_chunk(conn, abi.GMEMCPY_FROM_DEVICE, stg, nxt, dev + o, m,
                                            stream))
        while inflight:
            col.take(inflight.popleft())
    col.finish()
