"""The dispatch table: one small handler per ioctl command (Gdev's ``gdev_ioctl.c``).

Every handler has one shape: take the decoded request fields (``libgdev.abi``), validate what
the ABI could not (ranges, buffer ids, offsets inside the shared buffers), call the runtime
through :mod:`gdevd.ioctl.backend`, and return an :class:`Out` (reply fields, optional tail,
optional file descriptor to pass).  Failures are ``GdevError``; the server turns each into the
reply's status exactly once.  ``tests/daemon/test_dispatch_table.py`` checks that every
command of the ABI has exactly one handler here and one wrapper in libgdev.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from gdevd.errors import GdevError
from gdevd.ioctl import backend
from gdevd.ioctl.session import Session, SessionTable
from libgdev import abi, moduletable


@dataclass
class Out:
    """A handler's result: reply fields, reply tail, and an fd to pass (-1 for none; the
    server closes it after sending)."""

    fields: dict[str, Any] = field(default_factory=dict)
    tail: abi.Tail = b""
    fd: int = -1


@dataclass(eq=False)
class Call:
    """Per-connection state handed to every handler."""

    sessions: SessionTable
    peer: tuple[int, int, int]  # SO_PEERCRED: pid, uid, gid
    session: Session | None = None
    scope: trio.CancelScope | None = None
    bad_messages: int = 0

    @property
    def s(self) -> Session:
        """The bound session (the server guarantees one for commands that need it)."""
        assert self.session is not None
        self.session.check_open()
        return self.session


Handler = Callable[[Call, Any, abi.Tail], Awaitable[Out]]
InlineHandler = Callable[[Call, Any, abi.Tail], Out]
HANDLERS: dict[int, Handler | InlineHandler] = {}
# Commands whose handler is a plain function: it only reads or updates state, never blocks
# and never awaits, so the server calls it without a trip through trio's scheduler.  The
# server's loop provides the checkpoints (one per BURST frames, and every wait for data).
INLINE: set[int] = set()


def handler(name: str, *, inline: bool = False) -> Callable[[Any], Any]:
    """Register the handler of command ``name`` (exactly one per command); ``inline`` marks
    a synchronous handler (see :data:`INLINE`)."""
    number = abi.BY_NAME[name].number

    def register(fn: Any) -> Any:
        if number in HANDLERS:
            raise RuntimeError(f"two handlers for {name}")
        HANDLERS[number] = fn
        if inline:
            INLINE.add(number)
        return fn
    return register


def _einval(what: str) -> GdevError:
    return GdevError(errno.EINVAL, what)


@handler("HELLO")
async def _hello(call: Call, req: Any, tail: abi.Tail) -> Out:
    if call.session is not None:
        raise GdevError(errno.EALREADY, "session already bound")
    session = call.sessions.claim(req.token, *call.peer)
    session.scope = call.scope
    call.session = session
    return Out({"session": session.id, "minor": session.minor})


@handler("GET_VERSION", inline=True)
def _get_version(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"abi_version": abi.ABI_VERSION, "features": abi.FEATURES,
                "max_payload": abi.MAX_PAYLOAD, "inline_max": abi.INLINE_MAX})


@handler("DEVICE_COUNT", inline=True)
def _device_count(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"count": len(call.sessions.system.virtual)})


@handler("GET_STAGING")
async def _get_staging(call: Call, req: Any, tail: abi.Tail) -> Out:
    stg = await backend.staging(call.s)
    return Out({"size": stg.size, "slots": backend.STAGING_SLOTS}, fd=os.dup(stg.fd))


@handler("SET_PRIORITY")
async def _set_priority(call: Call, req: Any, tail: abi.Tail) -> Out:
    if req.flags & ~abi.PRIO_FLAGS or (req.flags and req.prio) or \
            req.flags == abi.PRIO_FLAGS:
        raise _einval(f"bad SET_PRIORITY flags 0x{req.flags:x} with prio {req.prio}")
    h = call.s.handle
    if req.flags & abi.PRIO_GET:
        return Out({"prio": await backend.rt.gget_priority(h)})
    prio = None if req.flags & abi.PRIO_CLEAR else req.prio
    return Out({"prio": await backend.rt.gset_priority(h, prio)})


@handler("SET_GUEST")
async def _set_guest(call: Call, req: Any, tail: abi.Tail) -> Out:
    # guest is 0 or 1 and set only without flags; one flag at a time
    if req.flags & ~abi.GUEST_FLAGS or req.guest > 1 or (req.flags and req.guest) or \
            req.flags == abi.GUEST_FLAGS:
        raise _einval(f"bad SET_GUEST flags 0x{req.flags:x} with guest {req.guest}")
    h = call.s.handle
    if req.flags & abi.GUEST_GET:
        return Out({"guest": int(await backend.rt.gget_guest(h))})
    guest = None if req.flags & abi.GUEST_CLEAR else bool(req.guest)
    return Out({"guest": int(await backend.rt.gset_guest(h, guest))})


@handler("MODULE_LOAD")
async def _module_load(call: Call, req: Any, tail: abi.Tail) -> Out:
    name, image = backend.module_image(call.s, req, tail)
    t = await backend.rt.gmodule_load(call.s.handle, image, name)
    table = moduletable.encode(t.functions, t.globals)
    if len(table) + abi.BY_NAME["MODULE_LOAD"].reply.struct.size + 8 > abi.MAX_PAYLOAD:
        await backend.rt.gmodule_unload(call.s.handle, t.module_id)
        raise GdevError(errno.E2BIG, f"{name}: function table of {len(table)} bytes")
    return Out({"module_id": t.module_id, "data_addr": t.data_addr, "data_size": t.data_size,
                "n_functions": len(t.functions), "n_globals": len(t.globals),
                "ptx_version": t.ptx_version, "target_sm": t.target_sm}, tail=table)


@handler("MODULE_UNLOAD")
async def _module_unload(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gmodule_unload(call.s.handle, req.module_id)
    return Out()


@handler("MODULE_LAUNCH")
async def _module_launch(call: Call, req: Any, tail: abi.Tail) -> Out:
    if len(tail) != req.params_len:
        raise _einval(f"MODULE_LAUNCH carries {len(tail)} parameter bytes, not {req.params_len}")
    fence = await backend.rt.gmodule_launch(
        call.s.handle, req.module_id, req.function, (req.grid_x, req.grid_y, req.grid_z),
        (req.block_x, req.block_y, req.block_z), req.shared_dynamic, tail, req.stream)
    return Out({"id": fence})


@handler("GET_HANDLE", inline=True)
def _get_handle(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"handle": call.s.id})


@handler("GMALLOC")
async def _gmalloc(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"addr": await backend.rt.gmalloc(call.s.handle, req.size)})


@handler("GFREE")
async def _gfree(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"size": await backend.rt.gfree(call.s.handle, req.addr)})


@handler("GMALLOC_DMA")
async def _gmalloc_dma(call: Call, req: Any, tail: abi.Tail) -> Out:
    s = call.s
    buf = await backend.rt.gmalloc_dma(s.handle, req.size)
    buf_id = s.add_dma(buf)
    return Out({"addr": buf.va, "size": buf.size, "buf_id": buf_id}, fd=os.dup(buf.fd))


@handler("GFREE_DMA")
async def _gfree_dma(call: Call, req: Any, tail: abi.Tail) -> Out:
    s = call.s
    buf = s.dma.get(req.buf_id)
    if buf is None:
        raise GdevError(errno.ENOENT, f"no pinned buffer {req.buf_id}")
    size = await backend.rt.gfree_dma(s.handle, buf)
    del s.dma[req.buf_id]
    return Out({"size": size})


async def _to_device(call: Call, req: Any, tail: abi.Tail, verb: Any) -> Any:
    src = backend.host_source(call.s, req, tail)
    return await verb(call.s.handle, req.dev_addr, src, req.size, req.stream)


@handler("GMEMCPY_TO_DEVICE")
async def _gmemcpy_to_device(call: Call, req: Any, tail: abi.Tail) -> Out:
    await _to_device(call, req, tail, backend.rt.gmemcpy_to_device)
    return Out()


@handler("GMEMCPY_TO_DEVICE_ASYNC")
async def _gmemcpy_to_device_async(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"id": await _to_device(call, req, tail, backend.rt.gmemcpy_to_device_async)})


@handler("GMEMCPY_FROM_DEVICE")
async def _gmemcpy_from_device(call: Call, req: Any, tail: abi.Tail) -> Out:
    dst = backend.host_destination(call.s, req, tail)
    await backend.rt.gmemcpy_from_device(call.s.handle, dst, req.dev_addr, req.size,
                                         req.stream)
    return Out(tail=dst.data if req.host_kind == abi.HOST_INLINE else b"")


@handler("GMEMCPY_FROM_DEVICE_ASYNC")
async def _gmemcpy_from_device_async(call: Call, req: Any, tail: abi.Tail) -> Out:
    if req.host_kind == abi.HOST_INLINE:
        raise _einval("an async copy from the device needs a shared destination")
    dst = backend.host_destination(call.s, req, tail)
    fence = await backend.rt.gmemcpy_from_device_async(call.s.handle, dst, req.dev_addr,
                                                        req.size, req.stream)
    return Out({"id": fence})


@handler("GMEMCPY")
async def _gmemcpy(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gmemcpy(call.s.handle, req.dst_addr, req.src_addr, req.size, req.stream)
    return Out()


@handler("GMEMCPY_ASYNC")
async def _gmemcpy_async(call: Call, req: Any, tail: abi.Tail) -> Out:
    fence = await backend.rt.gmemcpy_async(call.s.handle, req.dst_addr, req.src_addr, req.size,
                                           req.stream)
    return Out({"id": fence})


@handler("GLAUNCH")
async def _glaunch(call: Call, req: Any, tail: abi.Tail) -> Out:
    kernel = backend.kernel_from(req, tail)
    return Out({"id": await backend.rt.glaunch(call.s.handle, kernel, req.stream)})


@handler("GSYNC")
async def _gsync(call: Call, req: Any, tail: abi.Tail) -> Out:
    if req.flags & ~abi.GSYNC_TIMEOUT:
        raise _einval(f"unknown gsync flags 0x{req.flags:x}")
    timeout = req.timeout_us / 1e6 if req.flags & abi.GSYNC_TIMEOUT else None
    await backend.rt.gsync(call.s.handle, req.id, timeout)
    return Out()


@handler("GBARRIER")
async def _gbarrier(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gbarrier(call.s.handle)
    return Out()


@handler("STREAM_CREATE")
async def _stream_create(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"stream": await backend.rt.gstream_create(call.s.handle, req.flags)})


@handler("STREAM_DESTROY")
async def _stream_destroy(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gstream_destroy(call.s.handle, req.stream)
    return Out()


@handler("STREAM_WAIT")
async def _stream_wait(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gstream_wait(call.s.handle, req.stream, req.fence)
    return Out()


@handler("STREAM_SYNC")
async def _stream_sync(call: Call, req: Any, tail: abi.Tail) -> Out:
    if req.flags & ~abi.STREAM_SYNC_TIMEOUT:
        raise _einval(f"unknown stream sync flags 0x{req.flags:x}")
    timeout = req.timeout_us / 1e6 if req.flags & abi.STREAM_SYNC_TIMEOUT else None
    await backend.rt.gstream_sync(call.s.handle, req.stream, timeout)
    return Out()


@handler("GQUERY", inline=True)
def _gquery(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"result": backend.rt.query(call.s.handle, req.type)})


@handler("GTUNE")
async def _gtune(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gtune(call.s.handle, req.type, req.value)
    return Out()


@handler("GREF")
async def _gref(call: Call, req: Any, tail: abi.Tail) -> Out:
    slave = call.sessions.peer_session(req.slave, call.s)
    addr = await backend.rt.gref(call.s.handle, req.addr, req.size, slave.handle)
    return Out({"addr": addr})


@handler("GUNREF")
async def _gunref(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gunref(call.s.handle, req.addr)
    return Out()


@handler("GVIRTGET")
async def _gvirtget(call: Call, req: Any, tail: abi.Tail) -> Out:
    view = backend.dma_range(call.s, req.buf_id, req.offset, 1)
    return Out({"addr": await backend.rt.gvirtget(call.s.handle, view)})


@handler("GSHMGET")
async def _gshmget(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"id": await backend.rt.gshmget(call.s.handle, req.key, req.size, req.flags)})


@handler("GSHMAT")
async def _gshmat(call: Call, req: Any, tail: abi.Tail) -> Out:
    return Out({"addr": await backend.rt.gshmat(call.s.handle, req.id, req.addr, req.flags)})


@handler("GSHMDT")
async def _gshmdt(call: Call, req: Any, tail: abi.Tail) -> Out:
    await backend.rt.gshmdt(call.s.handle, req.addr)
    return Out()


@handler("GSHMCTL")
async def _gshmctl(call: Call, req: Any, tail: abi.Tail) -> Out:
    if req.cmd != backend.rt.GDEV_IPC_SET and (req.uid or req.gid or req.mode):
        raise _einval("uid, gid and mode are for IPC_SET only")
    buf = {"uid": req.uid, "gid": req.gid, "mode": req.mode}
    ds = await backend.rt.gshmctl(call.s.handle, req.id, req.cmd, buf)
    return Out(dataclasses.asdict(ds) if ds is not None else dict.fromkeys(backend.SHMID_DS, 0))
