"""Gdev verbs for CUDA IPC: device memory and events shared between processes by 64-byte
handles (``cuIpcGetMemHandle``, ``cuIpcOpenMemHandle``, ``cuIpcCloseMemHandle``,
``cuIpcGetEventHandle``, ``cuIpcOpenEventHandle``).

Who may open: any context of the same physical GPU that presents the handle, whatever its
user, as in CUDA: the handle is the capability, and its 128-bit secret makes it
unguessable (records and lifetimes: :mod:`.ipc`).  A context cannot open a handle it
exported itself (the CUDA layers refuse the whole exporting process, as CUDA does).
"""

from __future__ import annotations

import errno
import hmac
import secrets

import trio

from libgdev import ipchandle
from libgdev.ipchandle import EVENT_MAGIC, MEM_MAGIC, IpcHandle

from ..errors import GdevError
from . import constants as C
from .api_exec import check_timeout, wait_all
from .api_mem import map_new
from .handle import Handle, check_handle
from .mm.memory import DeviceBlock, MemObject
from .mm.shm import Segment
from .mm.swap import settle
from .streams import LEGACY
from .teardown import settle_object, unmap_object


def _handle(data: object, magic: bytes, what: str) -> IpcHandle:
    h = ipchandle.unpack(data, magic)
    if h is None:
        raise GdevError(errno.EINVAL, f"not a gdev IPC {what} handle")
    return h


async def gipc_export(handle: Handle, addr: int) -> bytes:
    """The 64-byte IPC handle of the device allocation (``gmalloc``) of this context that
    contains ``addr``; the same handle for every address of the allocation.

    Errors: EBADF; ENOENT (no device memory of this context there); EINVAL (a gref, gshmat,
    IPC or gvm_map mapping: only the context's own gmalloc memory); ENOSPC (the segment
    table is full, or a non-root user holds ``shm_per_user`` segments); the sticky fault.
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    obj = handle.lookup(addr, kind=C.GDEV_MEM_DEVICE)
    block = obj.block
    if obj.ref or obj.vmm is not None or not isinstance(block, DeviceBlock):
        raise GdevError(errno.EINVAL, f"{obj} is not gmalloc memory of context {handle.cid}")
    seg = block.shm
    if seg is None:
        seg = handle.system.shm.add(C.GDEV_IPC_PRIVATE, block, handle, 0o600)
        seg.secret, seg.ipc = secrets.token_bytes(16), True
    assert seg.ipc and seg.secret is not None
    return ipchandle.pack(IpcHandle(MEM_MAGIC, seg.id, seg.cpid, block.size, seg.secret))


def _segment(handle: Handle, h: IpcHandle) -> Segment:
    seg = handle.system.shm.segments.get(h.id)
    if seg is None or not seg.ipc or seg.removed or seg.secret is None or \
            not hmac.compare_digest(seg.secret, h.secret):
        raise GdevError(errno.ENOENT, "no live exported allocation with this IPC handle "
                                      "(freed, its context closed, or not a handle)")
    if seg.creator is handle:
        raise GdevError(errno.EINVAL, "an IPC handle cannot be opened in the context that "
                                      "exported it")
    if seg.block.gpu is not handle.phys:
        raise GdevError(errno.EINVAL, f"exported allocation {h.id} lives on another physical "
                                      "GPU")
    return seg


def _opened(handle: Handle, seg: Segment) -> MemObject | None:
    return next((o for h, o in seg.attached if h is handle and o.va in handle.ipc.opens), None)


async def gipc_open(handle: Handle, ipc_handle: bytes) -> tuple[int, int]:
    """Map the allocation that IPC handle ``ipc_handle`` names into this context: ``(address,
    size)``.  Opening it again returns the same address, one more reference (closed by as
    many ``gipc_close``).  The memory stays its owner's (charged to the owner's vGPU) and
    lives until the last opener closes it, even after the owner freed it or exited.

    Errors: EBADF; EINVAL (not a handle, the exporting context itself, another physical
    GPU); ENOENT (no live export: a wrong secret, freed, its context closed); ENOMEM (the
    context holds ``IPC_OPENS`` opened allocations, or its address space is full).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    seg = _segment(handle, _handle(ipc_handle, MEM_MAGIC, "memory"))
    obj = _opened(handle, seg)
    if obj is None:
        handle.ipc.check_opens()
        await settle(seg.block)
        check_handle(handle)
        seg = _segment(handle, _handle(ipc_handle, MEM_MAGIC, "memory"))  # it may have gone
        obj = _opened(handle, seg)          # or another call of this context opened it
    if obj is not None:
        handle.ipc.opens[obj.va] += 1
        return obj.va, obj.size
    obj = map_new(handle, seg.block, ref=True)
    obj.shm = seg
    handle.system.shm.attached(seg, handle, obj)
    handle.ipc.opens[obj.va] = 1
    return obj.va, obj.size


async def gipc_close(handle: Handle, addr: int) -> None:
    """Drop one open of the IPC mapping at ``addr`` (what ``gipc_open`` returned); the last
    unmaps it, after the context's earlier copies and launches.

    Errors: EBADF; EINVAL (no IPC mapping of this context at exactly ``addr``).
    """
    check_handle(handle)
    opens = handle.ipc.opens
    if type(addr) is not int or addr not in opens:
        await trio.lowlevel.checkpoint()
        raise GdevError(errno.EINVAL, f"no opened IPC allocation at {addr!r}")
    if opens[addr] > 1:
        await trio.lowlevel.checkpoint()
        opens[addr] -= 1
        return
    async with handle.exclusive():
        handle.check_open()
        obj = handle.space.objects.find(addr)
        if addr not in opens or obj is None or obj.va != addr:     # closed meanwhile
            raise GdevError(errno.EINVAL, f"no opened IPC allocation at {addr:#x}")
        if opens[addr] > 1:                                         # opened again meanwhile
            opens[addr] -= 1
            return
        del opens[addr]
        await settle_object(handle, obj)
        unmap_object(handle, obj)


async def gipc_event_new(handle: Handle) -> bytes:
    """A new interprocess event held by this context: its 64-byte handle (the event's id
    is the handle's ``id``).  Never recorded, it is complete.

    Errors: EBADF; ENOMEM (the context holds ``IPC_EVENTS`` events).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    table = handle.system.ipc_events
    ev = table.new(handle.cred.pid)
    try:
        handle.ipc.hold(table, ev)
    except GdevError:
        table.drop(ev, 0)
        raise
    return ipchandle.pack(IpcHandle(EVENT_MAGIC, ev.id, ev.pid, 0, ev.secret))


async def gipc_event_open(handle: Handle, ipc_handle: bytes) -> int:
    """The event that ``ipc_handle`` names, as an id this context may use (one more
    reference, dropped by ``gipc_event_close``).

    Errors: EBADF; EINVAL (not an event handle); ENOENT (no live event with this handle);
    ENOMEM (the context holds ``IPC_EVENTS`` events).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    h = _handle(ipc_handle, EVENT_MAGIC, "event")
    table = handle.system.ipc_events
    ev = table.find(h.id, h.secret)
    handle.ipc.hold(table, ev)
    return ev.id


async def gipc_event_record(handle: Handle, event: int, stream: int = LEGACY) -> None:
    """Record ``event`` in ``stream``: it completes when the work issued in the stream so
    far has (for the legacy stream, with every blocking stream's), replacing its last record.

    Errors: EBADF; EINVAL (an event or stream this context does not hold); the sticky fault.
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    handle.check_kernel_fault()
    ev = handle.ipc.event(handle.system.ipc_events, event)
    st = handle.streams.get(stream)
    after = handle.streams.deps(st) if st.id == LEGACY else st.after()
    ev.waits = [w for w in after if not w.is_set()]


async def gipc_event_sync(handle: Handle, event: int, timeout: float | None = None) -> None:
    """Wait until the last record of ``event`` is complete; ``timeout`` 0 polls.

    Errors: EBADF; EINVAL (an event this context does not hold, a bad timeout); ETIME (not
    complete within ``timeout``); this context's sticky fault.
    """
    check_handle(handle)
    check_timeout(timeout)
    ev = handle.ipc.event(handle.system.ipc_events, event)
    await wait_all(ev.pending(), timeout, f"interprocess event {event}")
    handle.check_fault()


async def gipc_event_wait(handle: Handle, stream: int, event: int) -> None:
    """Make the work issued later in ``stream`` wait for the last record of ``event`` (as
    it is now); returns at once.

    Errors: EBADF; EINVAL (an event or stream this context does not hold).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    ev = handle.ipc.event(handle.system.ipc_events, event)
    st = handle.streams.get(stream)
    for w in ev.pending():
        handle.streams.join(st, w)


async def gipc_event_close(handle: Handle, event: int) -> None:
    """Drop this context's reference on ``event``; the event goes with the last holder.

    Errors: EBADF; EINVAL (an event this context does not hold).
    """
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    table = handle.system.ipc_events
    handle.ipc.event(table, event)
    handle.ipc.release(table, event)
