"""The Gdev API in a client process: a :class:`Handle` relays Gdev's verbs to gdevd.

``gopen(minor)`` opens ``MOUNT/dev/gdev<minor>`` (the gate), connects to the ioctl socket
named in the ticket and presents the token.  Each method is one ioctl-style message and one
reply, except pageable copies, which stream through the staging buffer.  Host memory is any
buffer or numpy array; a pinned buffer (from :meth:`Handle.gmalloc_dma`, or a slice of one)
takes the zero-copy path.  Errors are :class:`libgdev.errors.GdevError` (OSError) subclasses.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

from libgdev import abi, gate, transfer
from libgdev.connection import Connection
from libgdev.constants import GDEV_IPC_STAT
from libgdev.errors import error_from_errno
from libgdev.hostmem import DmaBuffer, Staging, address_of, host_view
from libgdev.ipc import IpcVerbs
from libgdev.kernel import GdevKernel
from libgdev.loader import ModuleVerbs
from libgdev.verbs import PRINTF_DRAIN_MAX, GdevContext
from libgdev.vmm import VmmVerbs
from libgdev.wire import Command, Rep, Req

_EMPTY = abi.Empty()

# Pageable copies up to this size ride inside the message (Gdev's direct I/O); larger ones
# stream through the staging slots.  Measured crossover on a 2-CPU VM: inline and staged cost
# the same at 16 KiB; staged wins from 64 KiB (HtoD 139 vs 171 us; at 1 MiB DtoH 0.23 vs 1.9 ms).
DIRECT_MAX = 32 << 10


class Handle(ModuleVerbs, VmmVerbs, IpcVerbs):
    """An open vGPU context in this process.  Use as a context manager or call gclose().
    The module verbs (``gmodule_load``, ``gmodule_launch``, ``gmodule_unload``) are in
    :mod:`libgdev.loader`."""

    def __init__(self, minor: int, mount: str | None = None) -> None:
        self.minor = minor
        self._fd, ticket = gate.open_gate(minor, mount)
        self._dma: dict[int, DmaBuffer] = {}
        self._staging: Staging | None = None
        try:
            self._conn = Connection.connect(ticket.socket)
        except BaseException:
            os.close(self._fd)
            raise
        try:
            self.session = self._conn.call(abi.HELLO, abi.Hello(ticket.token)).fields.session
        except BaseException:
            self._conn.close()
            os.close(self._fd)
            raise

    # -- life ------------------------------------------------------------------------
    def gclose(self) -> None:
        """Close the context: the daemon frees everything it held.  Idempotent."""
        if self._fd < 0:
            return
        for buf in self._dma.values():
            buf.release()
        self._dma.clear()
        if self._staging is not None:
            self._staging.close()
        self._conn.close()
        fd, self._fd = self._fd, -1
        try:
            os.close(fd)
        except OSError:
            pass  # the daemon is gone (ENOTCONN); the descriptor is closed all the same

    def __enter__(self) -> Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.gclose()

    def _call(self, cmd: Command[Req, Rep], req: Req, tail: abi.Tail = b"") -> Rep:
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(cmd, req, tail).fields

    # -- information -----------------------------------------------------------------
    def abi_version(self) -> tuple[int, int]:
        """(ABI version, feature bits) of the daemon."""
        f = self._call(abi.GET_VERSION, _EMPTY)
        return f.abi_version, f.features

    def gdevice_count(self) -> int:
        """Number of virtual GPUs."""
        return self._call(abi.DEVICE_COUNT, _EMPTY).count

    def get_handle(self) -> int:
        """The daemon's id of this context (names the slave of gref)."""
        return self._call(abi.GET_HANDLE, _EMPTY).handle

    def gset_priority(self, prio: int | None) -> int:
        """Override this context's priority (0-40, higher is more urgent), or clear the
        override with None; the effective priority.  EPERM to raise it above the task's
        own priority without root, EINVAL outside 0..40."""
        if prio is None:
            return self._call(abi.SET_PRIORITY, abi.Prio(0, abi.PRIO_CLEAR)).prio
        if isinstance(prio, bool) or not isinstance(prio, int) or not 0 <= prio < 1 << 32:
            raise error_from_errno(errno.EINVAL, f"priority must be an integer 0-40: {prio!r}")
        return self._call(abi.SET_PRIORITY, abi.Prio(prio, 0)).prio

    def gget_priority(self) -> int:
        """The priority the daemon's scheduler uses for this context now."""
        return self._call(abi.SET_PRIORITY, abi.Prio(0, abi.PRIO_GET)).prio

    def gset_guest(self, guest: bool | None) -> bool:
        """Make this context a guest (True: it runs in the hosts' idle cycles), a host
        (False), or (None) what its opener's policy and its vGPU say; whether it is a guest
        now.  EPERM to make a SCHED_IDLE opener's or a guest vGPU's context a host without
        root, EINVAL for anything but True, False or None."""
        if guest is None:
            return bool(self._call(abi.SET_GUEST, abi.Guest(0, abi.GUEST_CLEAR)).guest)
        if not isinstance(guest, bool):
            raise error_from_errno(errno.EINVAL, f"guest must be True, False or None: {guest!r}")
        return bool(self._call(abi.SET_GUEST, abi.Guest(int(guest), 0)).guest)

    def gget_guest(self) -> bool:
        """Whether the daemon's scheduler counts this context a guest now."""
        return bool(self._call(abi.SET_GUEST, abi.Guest(0, abi.GUEST_GET)).guest)

    def gquery(self, qtype: int) -> int:
        """Gdev's gquery: a GDEV_QUERY_* value."""
        return self._call(abi.GQUERY, abi.Query(qtype)).result

    def gtune(self, ttype: int, value: int) -> None:
        """Gdev's gtune (GDEV_TUNE_MEMCPY_CHUNK_SIZE / _PIPELINE_COUNT)."""
        self._call(abi.GTUNE, abi.Tune(ttype, value))

    # -- memory ----------------------------------------------------------------------
    def gmalloc(self, size: int) -> int:
        """Allocate device memory; its GPU virtual address."""
        return self._call(abi.GMALLOC, abi.Size(size)).addr

    def gfree(self, addr: int) -> int:
        """Free the device object containing ``addr``; its size."""
        return self._call(abi.GFREE, abi.Addr(addr)).size

    def gmalloc_dma(self, size: int) -> DmaBuffer:
        """Pinned host memory shared with the daemon (zero-copy copies)."""
        with self._conn.lock:
            reply = self._conn.receive(abi.GMALLOC_DMA,
                                       self._conn.send(abi.GMALLOC_DMA, abi.Size(size)))
        f = reply.fields
        buf = DmaBuffer(f.buf_id, f.addr, f.size, reply.fd)
        self._dma[f.buf_id] = buf
        return buf

    def gfree_dma(self, buf: DmaBuffer) -> int:
        """Free a pinned buffer; its size."""
        size = self._call(abi.GFREE_DMA, abi.BufId(buf.buf_id)).size
        self._dma.pop(buf.buf_id, None)
        buf.release()
        return size

    def gvirtget(self, buf: Any) -> int:
        """The GPU virtual address of host memory inside a pinned buffer."""
        view = host_view(buf, writable=False)
        pinned, offset = self._pinned(view)
        if pinned is None:
            raise error_from_errno(errno.EINVAL, "not inside a pinned buffer")
        return self._call(abi.GVIRTGET, abi.Virt(pinned.buf_id, offset)).addr

    def gref(self, addr: int, size: int, slave: Handle) -> int:
        """Map this context's object at ``addr`` into ``slave``; the slave's address."""
        return self._call(abi.GREF, abi.Ref(addr, size, slave.get_handle())).addr

    def gunref(self, addr: int) -> None:
        """Remove a mapping made by gref."""
        self._call(abi.GUNREF, abi.Addr(addr))

    # -- shared device memory (System V semantics) -------------------------------------
    def gshmget(self, key: int, size: int, flags: int) -> int:
        """The id of shared segment ``key`` (GDEV_IPC_PRIVATE: a new one), created as
        ``flags`` (mode bits | GDEV_IPC_CREAT | GDEV_IPC_EXCL) say."""
        return self._call(abi.GSHMGET, abi.ShmGet(key, flags, size)).id

    def gshmat(self, shmid: int, addr: int = 0, flags: int = 0) -> int:
        """Attach segment ``shmid``; its GPU virtual address in this context."""
        return self._call(abi.GSHMAT, abi.ShmAt(shmid, flags, addr)).addr

    def gshmdt(self, addr: int) -> None:
        """Detach the segment attached at ``addr``."""
        self._call(abi.GSHMDT, abi.Addr(addr))

    def gshmctl(self, shmid: int, cmd: int, buf: Any = None) -> Any:
        """GDEV_IPC_STAT: the segment's shmid_ds (a namedtuple); GDEV_IPC_SET: set uid,
        gid and mode from ``buf`` (anything with those attributes or keys); GDEV_IPC_RMID:
        remove it at the last detach."""
        uid = gid = mode = 0
        if buf is not None:
            get: Any = buf.__getitem__ if isinstance(buf, dict) else lambda k: getattr(buf, k)
            uid, gid, mode = (int(get(k)) for k in ("uid", "gid", "mode"))
        f = self._call(abi.GSHMCTL, abi.ShmCtl(shmid, cmd, uid, gid, mode))
        return f if cmd == GDEV_IPC_STAT else None

    # -- copies ----------------------------------------------------------------------
    def _pinned(self, view: memoryview) -> tuple[DmaBuffer | None, int]:
        addr = address_of(view)
        for buf in self._dma.values():
            if buf.base <= addr and addr + len(view) <= buf.base + buf.size:
                return buf, addr - buf.base
        return None, 0

    def _staging_buffer(self) -> Staging:
        if self._staging is None:
            with self._conn.lock:
                reply = self._conn.receive(abi.GET_STAGING,
                                           self._conn.send(abi.GET_STAGING, _EMPTY))
            self._staging = Staging(reply.fd, reply.fields.size, reply.fields.slots)
        return self._staging

    def _copy_in(self, dst: int, src: Any, size: int | None,
                 cmd: transfer.CopyCommand[transfer.CopyReply], stream: int) -> int:
        view = _sized(host_view(src, writable=False), size)
        pinned, offset = self._pinned(view)
        if pinned is not None:
            return transfer.pinned(self._conn, cmd, dst, pinned, offset, len(view), stream)
        if len(view) <= DIRECT_MAX:
            return transfer.inline_to_device(self._conn, cmd, dst, view, stream)
        transfer.staged_to_device(self._conn, self._staging_buffer(), dst, view, stream)
        return 0

    def _copy_out(self, dst: Any, src: int, size: int | None,
                  cmd: transfer.CopyCommand[transfer.CopyReply], stream: int) -> int:
        view = _sized(host_view(dst, writable=True), size)
        pinned, offset = self._pinned(view)
        if pinned is not None:
            return transfer.pinned(self._conn, cmd, src, pinned, offset, len(view), stream)
        if len(view) <= DIRECT_MAX:
            transfer.inline_from_device(self._conn, view, src, stream)
        else:
            transfer.staged_from_device(self._conn, self._staging_buffer(), view, src, stream)
        return 0

    def gmemcpy_to_device(self, dst: int, src: Any, size: int | None = None,
                          stream: int = 0) -> None:
        """Copy ``size`` bytes (default: all) of host ``src`` to device address ``dst``,
        ordered in ``stream`` (0: the legacy stream)."""
        self._copy_in(dst, src, size, abi.GMEMCPY_TO_DEVICE, stream)

    def gmemcpy_to_device_async(self, dst: int, src: Any, size: int | None = None,
                                stream: int = 0) -> int:
        """Asynchronous from a pinned buffer (a fence id); otherwise synchronous, id 0."""
        return self._copy_in(dst, src, size, abi.GMEMCPY_TO_DEVICE_ASYNC, stream)

    def gmemcpy_from_device(self, dst: Any, src: int, size: int | None = None,
                            stream: int = 0) -> None:
        """Copy ``size`` bytes (default: len(dst)) from device address ``src`` to ``dst``,
        ordered in ``stream``."""
        self._copy_out(dst, src, size, abi.GMEMCPY_FROM_DEVICE, stream)

    def gmemcpy_from_device_async(self, dst: Any, src: int, size: int | None = None,
                                  stream: int = 0) -> int:
        """Asynchronous into a pinned buffer (a fence id); otherwise synchronous, id 0."""
        view = _sized(host_view(dst, writable=True), size)
        if self._pinned(view)[0] is None:
            self._copy_out(view, src, None, abi.GMEMCPY_FROM_DEVICE, stream)
            return 0
        return self._copy_out(view, src, None, abi.GMEMCPY_FROM_DEVICE_ASYNC, stream)

    def gmemcpy(self, dst: int, src: int, size: int, stream: int = 0) -> None:
        """Copy inside the unified GPU address space (DtoD, or to/from pinned memory)."""
        self._call(abi.GMEMCPY, abi.Dtod(dst, src, size, stream))

    def gmemcpy_async(self, dst: int, src: int, size: int, stream: int = 0) -> int:
        """Asynchronous gmemcpy in ``stream``; a fence id."""
        return self._call(abi.GMEMCPY_ASYNC, abi.Dtod(dst, src, size, stream)).id

    # -- streams ---------------------------------------------------------------------
    def gstream_create(self, flags: int = 0) -> int:
        """A new stream of this context (``abi.STREAM_NON_BLOCKING``: unordered against the
        legacy stream 0); its id."""
        return self._call(abi.STREAM_CREATE, abi.StreamCreate(flags)).stream

    def gstream_destroy(self, stream: int) -> None:
        """Destroy ``stream``; its issued work still completes."""
        self._call(abi.STREAM_DESTROY, abi.Stream(stream))

    def gstream_wait(self, stream: int, fence_id: int) -> None:
        """Order the work issued later in ``stream`` behind fence ``fence_id``."""
        self._call(abi.STREAM_WAIT, abi.StreamWait(stream, fence_id))

    def gstream_sync(self, stream: int, timeout: float | None = None) -> None:
        """Wait for the work issued in ``stream`` (ETIME after ``timeout`` s; 0 polls)."""
        flags = 0 if timeout is None else abi.STREAM_SYNC_TIMEOUT
        us = 0 if timeout is None else max(0, int(timeout * 1e6))
        self._call(abi.STREAM_SYNC, abi.StreamSync(stream, flags, us))

    def gprintf_drain(self, size: int = PRINTF_DRAIN_MAX) -> bytes:
        """What this context's kernels printed (device printf) since the last drain, oldest
        first, up to ``size`` bytes; b"" when there is nothing."""
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return bytes(self._conn.call(abi.PRINTF_DRAIN, abi.Size(size)).tail)

    def glimit(self, limit: int, value: int | None = None) -> int:
        """Set context limit ``limit`` (GDEV_LIMIT_MALLOC_HEAP_SIZE: the device heap's size,
        fixed once a kernel calling malloc launched) to ``value``, or only read it (None);
        the value in effect."""
        flags, v = (0, 0) if value is None else (abi.LIMIT_SET, value)
        return self._call(abi.CTX_LIMIT, abi.Limit(limit, flags, v)).size

    # -- texture objects -------------------------------------------------------------
    def gtex_create(self, desc: abi.TexDesc) -> int:
        """A new texture object of this context from ``desc`` (``libgdev.texture``); its
        opaque handle, the value a kernel's ``.u64`` texture parameter takes."""
        return self._call(abi.TEX_CREATE, abi.TexDesc(*desc)).handle

    def gtex_destroy(self, tex: int) -> None:
        """Destroy texture object ``tex`` (a kernel that uses it later faults)."""
        self._call(abi.TEX_DESTROY, abi.TexHandle(tex))

    # -- compute ---------------------------------------------------------------------
    def glaunch(self, kernel: GdevKernel, stream: int = 0) -> int:
        """Launch a kernel in ``stream``; its fence id."""
        name = kernel.name.encode("ascii")
        req = abi.Launch(kernel.code_addr, kernel.code_size, kernel.data_addr, *kernel.grid,
                         *kernel.block, kernel.shared_dynamic, len(name), len(kernel.params),
                         stream, abi.LAUNCH_COOPERATIVE if kernel.cooperative else 0)
        return self._call(abi.GLAUNCH, req, name + bytes(kernel.params)).id

    def gsync(self, fence_id: int, timeout: float | None = None) -> None:
        """Wait for fence ``fence_id`` (ETIME after ``timeout`` seconds; None waits
        forever)."""
        flags = 0 if timeout is None else abi.GSYNC_TIMEOUT
        us = 0 if timeout is None else max(0, int(timeout * 1e6))
        self._call(abi.GSYNC, abi.Sync(fence_id, flags, us))

    def gbarrier(self) -> None:
        """Wait until every operation of this context has completed."""
        self._call(abi.GBARRIER, _EMPTY)


def _sized(view: memoryview, size: int | None) -> memoryview:
    if size is None:
        return view
    if size < 0 or size > len(view):
        raise error_from_errno(errno.EINVAL, f"size {size} > host buffer of {len(view)} bytes")
    return view[:size]


# The client wrapper of every ABI command, which sends it as abi.<NAME>
# (tests/daemon/test_dispatch_table.py holds this equal to libgdev.abi.COMMANDS and to the
# daemon's dispatch table).
COMMAND_WRAPPERS = {
    "HELLO": Handle.__init__, "GET_VERSION": Handle.abi_version,
    "DEVICE_COUNT": Handle.gdevice_count, "GET_STAGING": Handle._staging_buffer,
    "GET_HANDLE": Handle.get_handle, "GMALLOC": Handle.gmalloc, "GFREE": Handle.gfree,
    "GMALLOC_DMA": Handle.gmalloc_dma, "GFREE_DMA": Handle.gfree_dma,
    "GMEMCPY_TO_DEVICE": Handle.gmemcpy_to_device,
    "GMEMCPY_TO_DEVICE_ASYNC": Handle.gmemcpy_to_device_async,
    "GMEMCPY_FROM_DEVICE": Handle.gmemcpy_from_device,
    "GMEMCPY_FROM_DEVICE_ASYNC": Handle.gmemcpy_from_device_async,
    "GMEMCPY": Handle.gmemcpy, "GMEMCPY_ASYNC": Handle.gmemcpy_async,
    "GLAUNCH": Handle.glaunch, "GSYNC": Handle.gsync, "GBARRIER": Handle.gbarrier,
    "GQUERY": Handle.gquery, "GTUNE": Handle.gtune, "GREF": Handle.gref,
    "GUNREF": Handle.gunref, "GVIRTGET": Handle.gvirtget,
    "GSHMGET": Handle.gshmget, "GSHMAT": Handle.gshmat, "GSHMDT": Handle.gshmdt,
    "GSHMCTL": Handle.gshmctl,
    "SET_PRIORITY": Handle.gset_priority, "SET_GUEST": Handle.gset_guest,
    "MODULE_LOAD": Handle.gmodule_load,
    "MODULE_UNLOAD": Handle.gmodule_unload, "MODULE_LAUNCH": Handle.gmodule_launch,
    "MODULE_DATA": Handle.gmodule_data,
    "STREAM_CREATE": Handle.gstream_create, "STREAM_DESTROY": Handle.gstream_destroy,
    "STREAM_WAIT": Handle.gstream_wait, "STREAM_SYNC": Handle.gstream_sync,
    "PRINTF_DRAIN": Handle.gprintf_drain, "CTX_LIMIT": Handle.glimit,
    "TEX_CREATE": Handle.gtex_create, "TEX_DESTROY": Handle.gtex_destroy,
    "GVM_RESERVE": Handle.gvm_reserve, "GVM_FREE": Handle.gvm_free,
    "GVM_CREATE": Handle.gvm_create, "GVM_RELEASE": Handle.gvm_release,
    "GVM_MAP": Handle.gvm_map, "GVM_UNMAP": Handle.gvm_unmap,
    "GVM_SET_ACCESS": Handle.gvm_set_access, "GVM_GET_ACCESS": Handle.gvm_get_access,
    "GVM_RETAIN": Handle.gvm_retain, "GVM_SIZE": Handle.gvm_size,
    "GVM_EXPORT": Handle.gvm_export, "GVM_IMPORT": Handle.gvm_import,
    "GIPC_EXPORT": Handle.gipc_export, "GIPC_OPEN": Handle.gipc_open,
    "GIPC_CLOSE": Handle.gipc_close, "GIPC_EVENT_NEW": Handle.gipc_event_new,
    "GIPC_EVENT_OPEN": Handle.gipc_event_open, "GIPC_EVENT_RECORD": Handle.gipc_event_record,
    "GIPC_EVENT_SYNC": Handle.gipc_event_sync, "GIPC_EVENT_WAIT": Handle.gipc_event_wait,
    "GIPC_EVENT_CLOSE": Handle.gipc_event_close,
}


if TYPE_CHECKING:  # mypy holds the client's Handle to the verb table (libgdev.verbs)
    _HANDLE_HAS_EVERY_VERB: type[GdevContext] = Handle
