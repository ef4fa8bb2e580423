"""Sharing a ``gvm_create`` allocation between processes through a file descriptor
(``cuMemExportToShareableHandle`` / ``cuMemImportFromShareableHandle`` with
``CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR``).

Theory of operation
-------------------
An export is a shared segment of the segment table (:mod:`.mm.shm`): private (no key),
mode 0600, created by the exporting context and charged to its user's ``shm_per_user``,
listed in ``/proc/gdev/shm``, with a random 128-bit secret.  The exporter gets a sealed
memfd holding a :data:`TOKEN_SIZE`-byte token (a magic, the segment id and the secret); as
with CUDA's file descriptor, whoever holds the fd may import the allocation: a process
reads the token from the fd it was passed (over a Unix socket, ``SCM_RIGHTS``) and
presents it; the daemon compares the secret in constant time.  ``gshmat`` refuses such a
segment: only the token opens it, never its id.

The importer gets an allocation id of its own, holding its own reference on the block, so
the memory lives while any context holds an id or a mapping of it.  The export itself is
withdrawn when the exporting context releases its last id of the allocation or closes
(the segment table's ``creator_closed``); later imports fail, earlier ones keep working.
"""

from __future__ import annotations

import errno
import fcntl
import hmac
import os
import secrets
import struct

import trio

from ..errors import GdevError
from ..gpu.hostpages import SEALS
from . import constants as C
from .handle import Handle, check_handle
from .mm.memory import DeviceBlock

TOKEN_MAGIC = b"GDEVVMM1"
TOKEN = struct.Struct("<8sII16s")       # magic, segment id, reserved (0), secret
TOKEN_SIZE = TOKEN.size                 # 32: libgdev.wire's Token
_SEALS = SEALS | fcntl.F_SEAL_WRITE


def export_token(handle: Handle, mem: int) -> bytes:
    """The token of allocation ``mem``, exporting it first if it is not yet.

    Errors: EBADF; EINVAL (no such id); ENOSPC (the segment table is full, or the user holds
    ``shm_per_user`` segments)."""
    check_handle(handle)
    block = handle.vmm.get(mem).block
    seg = block.shm
    if seg is None:
        seg = handle.system.shm.add(C.GDEV_IPC_PRIVATE, block, handle, 0o600)
        seg.secret = secrets.token_bytes(16)
    return TOKEN.pack(TOKEN_MAGIC, seg.id, 0, seg.secret)


def import_token(handle: Handle, token: bytes) -> int:
    """A new allocation id of this context for the allocation ``token`` names.

    Errors: EBADF; EINVAL (not a token, a wrong secret, an export withdrawn, an allocation
    of another physical GPU); ENOMEM (id limit)."""
    check_handle(handle)
    if len(token) != TOKEN_SIZE:
        raise GdevError(errno.EINVAL, f"a shareable handle is {TOKEN_SIZE} bytes, not "
                                      f"{len(token)}")
    magic, sid, reserved, secret = TOKEN.unpack(token)
    seg = handle.system.shm.segments.get(sid)
    known = getattr(seg, "secret", None)
    if magic != TOKEN_MAGIC or reserved or known is None or seg is None or seg.removed or \
            seg.ipc or not hmac.compare_digest(known, secret):
        raise GdevError(errno.EINVAL, "not a live exported allocation (withdrawn, or not a "
                                      "gdev shareable handle)")
    block = seg.block
    assert isinstance(block, DeviceBlock)
    if block.gpu is not handle.phys:
        raise GdevError(errno.EINVAL, f"exported allocation {sid} lives on another physical "
                                      "GPU")
    return handle.vmm.new_id(block, block.size)


def token_fd(token: bytes) -> int:
    """A sealed, read-only close-on-exec memfd holding ``token``; the caller owns it."""
    fd = os.memfd_create("gdev-vmm-export", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, token)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except OSError as e:
        os.close(fd)
        raise GdevError(errno.ENOMEM, f"export memfd: {e}") from e
    return fd


def read_token(fd: int) -> bytes:
    """The token in shareable handle ``fd``; EINVAL if it holds none."""
    if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
        raise GdevError(errno.EINVAL, f"not a file descriptor: {fd!r}")
    try:
        return os.pread(fd, TOKEN_SIZE, 0)
    except OSError as e:
        raise GdevError(errno.EINVAL, f"shareable handle {fd}: {e.strerror}") from e


async def gvm_export(handle: Handle, mem: int) -> int:
    """A new file descriptor (the caller owns it) that shares allocation ``mem`` with
    whoever holds it (see the module docstring).  Errors: as :func:`export_token`."""
    await trio.lowlevel.checkpoint()
    return token_fd(export_token(handle, mem))


async def gvm_import(handle: Handle, fd: int) -> int:
    """The allocation shared by file descriptor ``fd`` (from ``gvm_export``), as a new id
    of this context.  Errors: as :func:`import_token`, EINVAL if ``fd`` holds no token."""
    await trio.lowlevel.checkpoint()
    return import_token(handle, read_token(fd))
