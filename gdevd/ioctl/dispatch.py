"""The dispatch table: one small handler per ioctl command (Gdev's ``gdev_ioctl.c``).

Every handler has one shape: take the command's typed request struct (``libgdev.messages``),
validate what the ABI could not (ranges, buffer ids, offsets inside the shared buffers), call
the runtime through :mod:`gdevd.ioctl.backend`, and return an :class:`Out` (the typed reply
struct, optional tail, optional file descriptor to pass).  The registering decorator is
typed by the command, so mypy holds each handler to its command's two structs.  Failures are
``GdevError``; the server turns each into the reply's status exactly once.
``tests/daemon/test_dispatch_table.py`` checks that every command of the ABI has exactly one
handler here and one wrapper in libgdev.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic

import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.ioctl import backend
from gdevd.ioctl.session import Session, SessionTable
from libgdev import abi, moduletable
from libgdev.constants import GDEV_IPC_SET
from libgdev.wire import Command, Rep, Req


@dataclass
class Out(Generic[Rep]):
    """A handler's result: the reply struct, reply tail, and an fd to pass (-1 for none; the
    server closes it after sending)."""

    reply: Rep
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


# A handler of Command[Req, Rep] takes its Req and returns Out[Rep]; mypy checks each one
# against its command through the decorators below.
Handler = Callable[[Call, Req, abi.Tail], Awaitable[Out[Rep]]]
InlineHandler = Callable[[Call, Req, abi.Tail], Out[Rep]]
HANDLERS: dict[int, Handler[Any, Any] | InlineHandler[Any, Any]] = {}
# Commands whose handler is a plain function: it only reads or updates state, never blocks
# and never awaits, so the server calls it without a trip through trio's scheduler.  The
# server's loop provides the checkpoints (one per BURST frames, and every wait for data).
INLINE: set[int] = set()


def _register(cmd: Command[Any, Any], fn: Handler[Any, Any] | InlineHandler[Any, Any],
              inline: bool) -> None:
    if cmd.number in HANDLERS:
        raise RuntimeError(f"two handlers for {cmd.name}")
    HANDLERS[cmd.number] = fn
    if inline:
        INLINE.add(cmd.number)


def handler(cmd: Command[Req, Rep]) -> Callable[[Handler[Req, Rep]], Handler[Req, Rep]]:
    """Register the (async) handler of ``cmd``: exactly one per command."""
    def register(fn: Handler[Req, Rep]) -> Handler[Req, Rep]:
        _register(cmd, fn, inline=False)
        return fn
    return register


def inline_handler(cmd: Command[Req, Rep]) -> Callable[[InlineHandler[Req, Rep]],
                                                       InlineHandler[Req, Rep]]:
    """Register the synchronous handler of ``cmd`` (see :data:`INLINE`)."""
    def register(fn: InlineHandler[Req, Rep]) -> InlineHandler[Req, Rep]:
        _register(cmd, fn, inline=True)
        return fn
    return register


def _einval(what: str) -> GdevError:
    return GdevError(errno.EINVAL, what)


_EMPTY = abi.Empty()


@handler(abi.HELLO)
async def _hello(call: Call, req: abi.Hello, tail: abi.Tail) -> Out[abi.HelloReply]:
    if call.session is not None:
        raise GdevError(errno.EALREADY, "session already bound")
    session = call.sessions.claim(req.token, *call.peer)
    session.scope = call.scope
    call.session = session
    return Out(abi.HelloReply(session.id, session.minor))


_VERSION = abi.Version(abi.ABI_VERSION, abi.FEATURES, abi.MAX_PAYLOAD, abi.INLINE_MAX)


@inline_handler(abi.GET_VERSION)
def _get_version(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.Version]:
    return Out(_VERSION)


@inline_handler(abi.DEVICE_COUNT)
def _device_count(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.Count]:
    return Out(abi.Count(len(call.sessions.system.virtual)))


@handler(abi.GET_STAGING)
async def _get_staging(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.Staging]:
    stg = await backend.staging(call.s)
    return Out(abi.Staging(stg.size, backend.STAGING_SLOTS), fd=os.dup(stg.fd))


@handler(abi.SET_PRIORITY)
async def _set_priority(call: Call, req: abi.Prio, tail: abi.Tail) -> Out[abi.PrioReply]:
    if req.flags & ~abi.PRIO_FLAGS or (req.flags and req.prio) or \
            req.flags == abi.PRIO_FLAGS:
        raise _einval(f"bad SET_PRIORITY flags 0x{req.flags:x} with prio {req.prio}")
    h = call.s.handle
    if req.flags & abi.PRIO_GET:
        return Out(abi.PrioReply(await backend.rt.gget_priority(h)))
    prio = None if req.flags & abi.PRIO_CLEAR else req.prio
    return Out(abi.PrioReply(await backend.rt.gset_priority(h, prio)))


@handler(abi.SET_GUEST)
async def _set_guest(call: Call, req: abi.Guest, tail: abi.Tail) -> Out[abi.GuestReply]:
    # guest is 0 or 1 and set only without flags; one flag at a time
    if req.flags & ~abi.GUEST_FLAGS or req.guest > 1 or (req.flags and req.guest) or \
            req.flags == abi.GUEST_FLAGS:
        raise _einval(f"bad SET_GUEST flags 0x{req.flags:x} with guest {req.guest}")
    h = call.s.handle
    if req.flags & abi.GUEST_GET:
        return Out(abi.GuestReply(int(await backend.rt.gget_guest(h))))
    guest = None if req.flags & abi.GUEST_CLEAR else bool(req.guest)
    return Out(abi.GuestReply(int(await backend.rt.gset_guest(h, guest))))


@handler(abi.MODULE_LOAD)
async def _module_load(call: Call, req: abi.ModuleLoad, tail: abi.Tail) -> Out[abi.Module]:
    name, image = backend.module_image(call.s, req, tail)
    t = await backend.rt.gmodule_load(call.s.handle, image, name)
    table = moduletable.encode(t.functions, t.globals)
    if len(table) + abi.MODULE_LOAD.reply.struct.size + 8 > abi.MAX_PAYLOAD:
        await backend.rt.gmodule_unload(call.s.handle, t.module_id)
        raise GdevError(errno.E2BIG, f"{name}: function table of {len(table)} bytes")
    return Out(abi.Module(t.module_id, t.data_addr, t.data_size, len(t.functions),
                          len(t.globals), t.ptx_version, t.target_sm), tail=table)


@handler(abi.MODULE_UNLOAD)
async def _module_unload(call: Call, req: abi.ModuleRef, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gmodule_unload(call.s.handle, req.module_id)
    return Out(_EMPTY)


@handler(abi.MODULE_DATA)
async def _module_data(call: Call, req: abi.ModuleRef, tail: abi.Tail) -> Out[abi.Dma]:
    buf = await backend.rt.gmodule_data(call.s.handle, req.module_id)
    return Out(abi.Dma(buf.va, buf.size, 0), fd=os.dup(buf.fd))


@handler(abi.MODULE_LAUNCH)
async def _module_launch(call: Call, req: abi.ModuleLaunch, tail: abi.Tail) -> Out[abi.Fence]:
    if len(tail) != req.params_len:
        raise _einval(f"MODULE_LAUNCH carries {len(tail)} parameter bytes, not {req.params_len}")
    fence = await backend.rt.gmodule_launch(
        call.s.handle, req.module_id, req.function, (req.grid_x, req.grid_y, req.grid_z),
        (req.block_x, req.block_y, req.block_z), req.shared_dynamic, tail, req.stream,
        backend.cooperative(req.flags))
    return Out(abi.Fence(fence))


@inline_handler(abi.GET_HANDLE)
def _get_handle(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.HandleId]:
    return Out(abi.HandleId(call.s.id))


@handler(abi.PRINTF_DRAIN)
async def _printf_drain(call: Call, req: abi.Size, tail: abi.Tail) -> Out[abi.Empty]:
    size = min(req.size, abi.MAX_PAYLOAD - 4096)     # the reply must fit one message
    return Out(_EMPTY, tail=await backend.rt.gprintf_drain(call.s.handle, size))


@handler(abi.CTX_LIMIT)
async def _ctx_limit(call: Call, req: abi.Limit, tail: abi.Tail) -> Out[abi.Size]:
    if req.flags & ~abi.LIMIT_FLAGS or (not req.flags & abi.LIMIT_SET and req.value):
        raise _einval(f"bad CTX_LIMIT flags 0x{req.flags:x} with value {req.value}")
    value = req.value if req.flags & abi.LIMIT_SET else None
    return Out(abi.Size(await backend.rt.glimit(call.s.handle, req.limit, value)))


@handler(abi.GMALLOC)
async def _gmalloc(call: Call, req: abi.Size, tail: abi.Tail) -> Out[abi.Addr]:
    return Out(abi.Addr(await backend.rt.gmalloc(call.s.handle, req.size)))


@handler(abi.GFREE)
async def _gfree(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.Size]:
    return Out(abi.Size(await backend.rt.gfree(call.s.handle, req.addr)))


@handler(abi.GMALLOC_DMA)
async def _gmalloc_dma(call: Call, req: abi.Size, tail: abi.Tail) -> Out[abi.Dma]:
    s = call.s
    buf = await backend.rt.gmalloc_dma(s.handle, req.size)
    buf_id = s.add_dma(buf)
    return Out(abi.Dma(buf.va, buf.size, buf_id), fd=os.dup(buf.fd))


@handler(abi.GFREE_DMA)
async def _gfree_dma(call: Call, req: abi.BufId, tail: abi.Tail) -> Out[abi.Size]:
    s = call.s
    buf = s.dma.get(req.buf_id)
    if buf is None:
        raise GdevError(errno.ENOENT, f"no pinned buffer {req.buf_id}")
    size = await backend.rt.gfree_dma(s.handle, buf)
    del s.dma[req.buf_id]
    return Out(abi.Size(size))


async def _to_device(call: Call, req: abi.MemcpyHost, tail: abi.Tail,
                     verb: Callable[[rt.Handle, int, rt.hostmem.HostRange, int, int],
                                    Awaitable[int | None]]) -> int | None:
    src = backend.host_source(call.s, req, tail)
    return await verb(call.s.handle, req.dev_addr, src, req.size, req.stream)


@handler(abi.GMEMCPY_TO_DEVICE)
async def _gmemcpy_to_device(call: Call, req: abi.MemcpyHost, tail: abi.Tail) -> Out[abi.Empty]:
    await _to_device(call, req, tail, backend.rt.gmemcpy_to_device)
    return Out(_EMPTY)


@handler(abi.GMEMCPY_TO_DEVICE_ASYNC)
async def _gmemcpy_to_device_async(call: Call, req: abi.MemcpyHost,
                                   tail: abi.Tail) -> Out[abi.Fence]:
    fence = await _to_device(call, req, tail, backend.rt.gmemcpy_to_device_async)
    return Out(abi.Fence(fence or 0))


@handler(abi.GMEMCPY_FROM_DEVICE)
async def _gmemcpy_from_device(call: Call, req: abi.MemcpyHost,
                               tail: abi.Tail) -> Out[abi.Empty]:
    dst = backend.host_destination(call.s, req, tail)
    await backend.rt.gmemcpy_from_device(call.s.handle, dst, req.dev_addr, req.size,
                                         req.stream)
    return Out(_EMPTY, tail=dst.array.data if req.host_kind == abi.HOST_INLINE else b"")


@handler(abi.GMEMCPY_FROM_DEVICE_ASYNC)
async def _gmemcpy_from_device_async(call: Call, req: abi.MemcpyHost,
                                     tail: abi.Tail) -> Out[abi.Fence]:
    if req.host_kind == abi.HOST_INLINE:
        raise _einval("an async copy from the device needs a shared destination")
    dst = backend.host_destination(call.s, req, tail)
    fence = await backend.rt.gmemcpy_from_device_async(call.s.handle, dst, req.dev_addr,
                                                        req.size, req.stream)
    return Out(abi.Fence(fence))


@handler(abi.GMEMCPY)
async def _gmemcpy(call: Call, req: abi.Dtod, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gmemcpy(call.s.handle, req.dst_addr, req.src_addr, req.size, req.stream)
    return Out(_EMPTY)


@handler(abi.GMEMCPY_ASYNC)
async def _gmemcpy_async(call: Call, req: abi.Dtod, tail: abi.Tail) -> Out[abi.Fence]:
    fence = await backend.rt.gmemcpy_async(call.s.handle, req.dst_addr, req.src_addr, req.size,
                                           req.stream)
    return Out(abi.Fence(fence))


@handler(abi.GLAUNCH)
async def _glaunch(call: Call, req: abi.Launch, tail: abi.Tail) -> Out[abi.Fence]:
    kernel = backend.kernel_from(req, tail)
    return Out(abi.Fence(await backend.rt.glaunch(call.s.handle, kernel, req.stream)))


def _timeout(what: str, flags: int, timeout_flag: int, timeout_us: int) -> float | None:
    """The seconds a wait may take (None: no limit) from its flags; EINVAL on unknown flags."""
    if flags & ~timeout_flag:
        raise _einval(f"unknown {what} flags 0x{flags:x}")
    return timeout_us / 1e6 if flags & timeout_flag else None


@handler(abi.GSYNC)
async def _gsync(call: Call, req: abi.Sync, tail: abi.Tail) -> Out[abi.Empty]:
    timeout = _timeout("gsync", req.flags, abi.GSYNC_TIMEOUT, req.timeout_us)
    await backend.rt.gsync(call.s.handle, req.id, timeout)
    return Out(_EMPTY)


@handler(abi.GBARRIER)
async def _gbarrier(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gbarrier(call.s.handle)
    return Out(_EMPTY)


@handler(abi.STREAM_CREATE)
async def _stream_create(call: Call, req: abi.StreamCreate, tail: abi.Tail) -> Out[abi.Stream]:
    return Out(abi.Stream(await backend.rt.gstream_create(call.s.handle, req.flags)))


@handler(abi.STREAM_DESTROY)
async def _stream_destroy(call: Call, req: abi.Stream, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gstream_destroy(call.s.handle, req.stream)
    return Out(_EMPTY)


@handler(abi.STREAM_WAIT)
async def _stream_wait(call: Call, req: abi.StreamWait, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gstream_wait(call.s.handle, req.stream, req.fence)
    return Out(_EMPTY)


@handler(abi.STREAM_SYNC)
async def _stream_sync(call: Call, req: abi.StreamSync, tail: abi.Tail) -> Out[abi.Empty]:
    timeout = _timeout("stream sync", req.flags, abi.STREAM_SYNC_TIMEOUT, req.timeout_us)
    await backend.rt.gstream_sync(call.s.handle, req.stream, timeout)
    return Out(_EMPTY)


@handler(abi.TEX_CREATE)
async def _tex_create(call: Call, req: abi.TexDesc, tail: abi.Tail) -> Out[abi.TexHandle]:
    return Out(abi.TexHandle(await backend.rt.gtex_create(call.s.handle, req)))


@handler(abi.TEX_DESTROY)
async def _tex_destroy(call: Call, req: abi.TexHandle, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gtex_destroy(call.s.handle, req.handle)
    return Out(_EMPTY)


@inline_handler(abi.GQUERY)
def _gquery(call: Call, req: abi.Query, tail: abi.Tail) -> Out[abi.Result]:
    return Out(abi.Result(backend.rt.query(call.s.handle, req.type)))


@handler(abi.GTUNE)
async def _gtune(call: Call, req: abi.Tune, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gtune(call.s.handle, req.type, req.value)
    return Out(_EMPTY)


@handler(abi.GREF)
async def _gref(call: Call, req: abi.Ref, tail: abi.Tail) -> Out[abi.Addr]:
    slave = call.sessions.peer_session(req.slave, call.s)
    return Out(abi.Addr(await backend.rt.gref(call.s.handle, req.addr, req.size, slave.handle)))


@handler(abi.GUNREF)
async def _gunref(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gunref(call.s.handle, req.addr)
    return Out(_EMPTY)


@handler(abi.GVIRTGET)
async def _gvirtget(call: Call, req: abi.Virt, tail: abi.Tail) -> Out[abi.Addr]:
    view = backend.dma_range(call.s, req.buf_id, req.offset, 1)
    return Out(abi.Addr(await backend.rt.gvirtget(call.s.handle, view)))


@handler(abi.GSHMGET)
async def _gshmget(call: Call, req: abi.ShmGet, tail: abi.Tail) -> Out[abi.ShmId]:
    return Out(abi.ShmId(await backend.rt.gshmget(call.s.handle, req.key, req.size, req.flags)))


@handler(abi.GSHMAT)
async def _gshmat(call: Call, req: abi.ShmAt, tail: abi.Tail) -> Out[abi.Addr]:
    return Out(abi.Addr(await backend.rt.gshmat(call.s.handle, req.id, req.addr, req.flags)))


@handler(abi.GSHMDT)
async def _gshmdt(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gshmdt(call.s.handle, req.addr)
    return Out(_EMPTY)


_NO_SHMID_DS = abi.ShmidDs(*(0 for _ in abi.ShmidDs._fields))


@handler(abi.GSHMCTL)
async def _gshmctl(call: Call, req: abi.ShmCtl, tail: abi.Tail) -> Out[abi.ShmidDs]:
    if req.cmd != GDEV_IPC_SET and (req.uid or req.gid or req.mode):
        raise _einval("uid, gid and mode are for IPC_SET only")
    buf = {"uid": req.uid, "gid": req.gid, "mode": req.mode}
    ds = await backend.rt.gshmctl(call.s.handle, req.id, req.cmd, buf)
    return Out(_NO_SHMID_DS if ds is None else abi.ShmidDs(**dataclasses.asdict(ds)))


# registers the GVM_* and GIPC_* handlers
from gdevd.ioctl import dispatch_ipc, dispatch_vmm  # noqa: E402,F401,I001
