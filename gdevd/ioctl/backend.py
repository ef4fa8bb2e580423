"""What the ioctl handlers need from the runtime, and the checks on shared buffers.

``rt`` is the runtime's Gdev API (async verbs, Gdev's names).  The functions here turn ABI
values into runtime arguments: a copy's host side (inline payload, or kind, buf id, offset
and size in shared memory) becomes the runtime's host-memory descriptor
(``hostmem.HostRange``, whose constructors check the range: EFAULT outside its buffer); a
launch request becomes the runtime's kernel descriptor.

Staging buffers are pinned (``gmalloc_dma``) memory of the session's own context, so a
pageable copy's daemon side is one copy from the shared slot (Gdev's PINCPY) and its bytes
are charged to the vGPU's DMA memory like any other pinned buffer.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

import numpy as np

from gdevd import runtime
from gdevd.errors import GdevError
from gdevd.runtime import Credentials, hostmem
from libgdev import abi

rt = runtime  # the handlers' name for the runtime's Gdev API (dispatch calls backend.rt.*)

if TYPE_CHECKING:
    from gdevd.ioctl.session import Opener, Session

STAGING_SLOTS = 4
STAGING_CHUNK = 4 << 20  # the runtime's default chunk; halved down to STAGING_CHUNK_MIN
STAGING_CHUNK_MIN = 64 << 10  # when the vGPU's pinned memory cannot hold 4 full slots


async def open_handle(system: rt.GdevSystem, minor: int, opener: Opener) -> rt.Handle:
    """gopen on behalf of the process that opened the device file."""
    return await rt.gopen(system, minor, cred=Credentials(opener.uid, opener.gid, opener.tgid,
                                                              opener.name))


async def close_handle(session: Session) -> None:
    """gclose the session's handle (freeing every object it held, staging included)."""
    session.dma.clear()
    session.staging = None
    try:
        await rt.gclose(session.handle)
    except GdevError as exc:
        if exc.errno != errno.EBADF:
            raise


async def staging(session: Session) -> rt.DmaBuffer:
    """The session's staging buffer, created on first use: STAGING_SLOTS slots of the largest
    chunk (STAGING_CHUNK, halving down to STAGING_CHUNK_MIN) that the vGPU's pinned memory
    still has room for.  The smallest is granted even beyond the vGPU's share (see
    ``gmalloc_dma``'s ``guaranteed``); ENOMEM only past the context's own pinned limit."""
    chunk = STAGING_CHUNK
    while session.staging is None:
        try:
            session.staging = await rt.gmalloc_dma(session.handle, STAGING_SLOTS * chunk,
                                                   guaranteed=chunk <= STAGING_CHUNK_MIN)
        except GdevError as exc:
            if exc.errno != errno.ENOMEM or chunk <= STAGING_CHUNK_MIN:
                raise
            chunk //= 2
    return session.staging


def _pinned(session: Session, buf_id: int) -> rt.DmaBuffer:
    buf = session.dma.get(buf_id)
    if buf is None:
        raise GdevError(errno.ENOENT, f"no pinned buffer {buf_id}")
    return buf


def dma_range(session: Session, buf_id: int, offset: int, size: int) -> np.ndarray:
    """Bytes [offset, offset+size) of pinned buffer ``buf_id`` (ENOENT / EFAULT)."""
    return hostmem.in_pinned(_pinned(session, buf_id), offset, size,
                             f"pinned buffer {buf_id}").array


def _shared(session: Session, req: abi.MemcpyHost | abi.ModuleLoad) -> hostmem.HostRange:
    if req.host_kind == abi.HOST_STAGING:
        if session.staging is None or req.buf_id:
            raise GdevError(errno.EINVAL, "no staging buffer (GET_STAGING first)")
        return hostmem.in_pinned(session.staging, req.host_offset, req.size, "staging buffer")
    if req.host_kind == abi.HOST_DMA:
        return hostmem.in_pinned(_pinned(session, req.buf_id), req.host_offset, req.size,
                                 f"pinned buffer {req.buf_id}")
    raise GdevError(errno.EINVAL, f"unknown host kind {req.host_kind}")


def host_source(session: Session, req: abi.MemcpyHost, tail: abi.Tail) -> hostmem.HostRange:
    """The host side of an HtoD copy request: the inline payload (a view of the message,
    not a copy) or a checked range of a shared buffer."""
    if req.host_kind == abi.HOST_INLINE:
        if len(tail) != req.size or req.host_offset or req.buf_id:
            raise GdevError(errno.EINVAL, f"inline copy of {req.size} bytes carries {len(tail)}")
        return hostmem.inline(tail)
    if tail:
        raise GdevError(errno.EINVAL, "tail on a copy from shared memory")
    return _shared(session, req)


def host_destination(session: Session, req: abi.MemcpyHost,
                     tail: abi.Tail) -> hostmem.HostRange:
    """The host side of a DtoH copy request (fresh bytes for an inline reply)."""
    if tail:
        raise GdevError(errno.EINVAL, "a copy from the device carries no data")
    if req.host_kind == abi.HOST_INLINE:
        if req.size > abi.INLINE_MAX or req.host_offset or req.buf_id:
            raise GdevError(errno.EINVAL, f"inline copy of {req.size} bytes")
        return hostmem.scratch(req.size)
    return _shared(session, req)


def module_image(session: Session, req: abi.ModuleLoad, tail: abi.Tail) -> tuple[str, bytes]:
    """(name, image) of a MODULE_LOAD request: the name leads the tail, the image follows
    it inline or lies in shared memory (EINVAL / EFAULT / ENOENT)."""
    if req.name_len > min(len(tail), 1024):
        raise GdevError(errno.EINVAL, f"module name of {req.name_len} bytes")
    try:
        name = bytes(tail[:req.name_len]).decode("utf-8") or "<image>"
    except UnicodeDecodeError:
        raise GdevError(errno.EINVAL, "module name is not UTF-8") from None
    rest = tail[req.name_len:]
    if req.host_kind == abi.HOST_INLINE:
        if len(rest) != req.size or req.host_offset or req.buf_id:
            raise GdevError(errno.EINVAL, f"inline image of {req.size} bytes carries {len(rest)}")
        return name, bytes(rest)
    if rest:
        raise GdevError(errno.EINVAL, "image both inline and in shared memory")
    return name, _shared(session, req).array.tobytes()


def kernel_from(req: abi.Launch, tail: abi.Tail) -> rt.GdevKernel:
    """The runtime's GdevKernel for a GLAUNCH request (name and params in the tail)."""
    if req.name_len + req.params_len != len(tail) or not req.name_len:
        raise GdevError(errno.EINVAL, "GLAUNCH tail does not match name_len + params_len")
    try:
        name = bytes(tail[:req.name_len]).decode("ascii")
    except UnicodeDecodeError:
        raise GdevError(errno.EINVAL, "kernel name is not ASCII") from None
    return rt.GdevKernel(code_addr=req.code_addr, code_size=req.code_size,
                         data_addr=req.data_addr, name=name,
                         grid=(req.grid_x, req.grid_y, req.grid_z),
                         block=(req.block_x, req.block_y, req.block_z),
                         shared_dynamic=req.shared_dynamic, params=tail[req.name_len:],
                         cooperative=cooperative(req.flags))


def cooperative(flags: int) -> bool:
    """Whether a launch's LAUNCH_* ``flags`` ask for a cooperative launch; EINVAL for an
    unknown flag."""
    if flags & ~abi.LAUNCH_FLAGS:
        raise GdevError(errno.EINVAL, f"unknown launch flags 0x{flags:x}")
    return bool(flags & abi.LAUNCH_COOPERATIVE)
