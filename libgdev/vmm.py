"""Mixed into :class:`libgdev.Handle`: CUDA's virtual memory management as Gdev verbs (the
GVM_* commands; contracts in ``gdevd/runtime/api_vmm.py`` and ``api_vmmshare.py``).

``gvm_export`` returns a file descriptor the caller owns (pass it to another process with
``SCM_RIGHTS``, close it when done); ``gvm_import`` reads the token in such a descriptor
and presents it to the daemon: whoever holds the descriptor may import the allocation.
"""

from __future__ import annotations

import errno
import os

from libgdev import abi
from libgdev.connection import Connection
from libgdev.errors import error_from_errno
from libgdev.wire import TOKEN_SIZE, Command, Rep, Req


class VmmVerbs:
    """The GVM_* verbs (``_conn`` and ``_fd`` are Handle's)."""

    _conn: Connection
    _fd: int

    def _vm(self, cmd: Command[Req, Rep], req: Req) -> Rep:
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(cmd, req).fields

    def gvm_reserve(self, size: int, align: int = 0, addr: int = 0) -> int:
        """Reserve ``size`` bytes of this context's address space; the range's start."""
        return self._vm(abi.GVM_RESERVE, abi.VmReserve(size, align, addr)).addr

    def gvm_free(self, addr: int, size: int) -> None:
        """Give back the (wholly unmapped) reservation ``[addr, addr + size)``."""
        self._vm(abi.GVM_FREE, abi.VmRange(addr, size))

    def gvm_create(self, size: int) -> int:
        """Allocate ``size`` bytes of device memory without an address; its handle id."""
        return self._vm(abi.GVM_CREATE, abi.Size(size)).mem

    def gvm_release(self, mem: int) -> None:
        """Drop a reference to allocation ``mem`` (mappings keep the memory)."""
        self._vm(abi.GVM_RELEASE, abi.VmMem(mem))

    def gvm_map(self, addr: int, size: int, offset: int, mem: int) -> None:
        """Map bytes ``[offset, offset + size)`` of ``mem`` at ``addr`` (no access yet)."""
        self._vm(abi.GVM_MAP, abi.VmMap(addr, size, offset, mem))

    def gvm_unmap(self, addr: int, size: int) -> None:
        """Unmap the whole mappings inside ``[addr, addr + size)``."""
        self._vm(abi.GVM_UNMAP, abi.VmRange(addr, size))

    def gvm_set_access(self, addr: int, size: int, flags: int) -> None:
        """Access ``flags`` (0, 1 read, 3 read-write) for the mapped ``[addr, addr + size)``."""
        self._vm(abi.GVM_SET_ACCESS, abi.VmAccess(addr, size, flags))

    def gvm_get_access(self, addr: int) -> int:
        """The access flags of the mapping containing ``addr``."""
        return self._vm(abi.GVM_GET_ACCESS, abi.Addr(addr)).flags

    def gvm_retain(self, addr: int) -> int:
        """The allocation id of the mapping containing ``addr``, one more reference."""
        return self._vm(abi.GVM_RETAIN, abi.Addr(addr)).mem

    def gvm_size(self, mem: int) -> int:
        """The size allocation ``mem`` was created with."""
        return self._vm(abi.GVM_SIZE, abi.VmMem(mem)).size

    def gvm_export(self, mem: int) -> int:
        """A new file descriptor sharing allocation ``mem`` (the caller closes it)."""
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(abi.GVM_EXPORT, abi.VmMem(mem)).fd

    def gvm_import(self, fd: int) -> int:
        """The allocation shared by ``fd`` (from ``gvm_export``), as an id of this context."""
        try:
            token = os.pread(fd, TOKEN_SIZE, 0)
        except (OSError, TypeError, OverflowError) as e:
            raise error_from_errno(errno.EINVAL, f"shareable handle {fd!r}: {e}") from None
        return self._vm(abi.GVM_IMPORT, abi.VmToken(token.ljust(TOKEN_SIZE, b"\0"))).mem
