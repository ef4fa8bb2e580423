"""Module verbs of a :class:`libgdev.Handle`: the daemon loads, the client names functions.

``gmodule_load(image)`` sends a PTX image once (inside the message up to the inline limit,
else through a pinned buffer that lives for the call) and returns the daemon's
:class:`libgdev.moduletable.ModuleTable`: per kernel its name, parameter layout and
attributes, and the module's globals with their device addresses.  ``gmodule_launch``
names (module id, function index); ``gmodule_unload`` frees the module's device memory.
No PTX is parsed in the client.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from libgdev import abi, moduletable
from libgdev.errors import error_from_errno
from libgdev.moduletable import ModuleTable
from libgdev.wire import Command, Rep, Req

if TYPE_CHECKING:
    from libgdev.connection import Connection, Reply
    from libgdev.hostmem import DmaBuffer

# the largest image carried inside the message, with a name of up to 1 KiB
INLINE_IMAGE_MAX = abi.MAX_PAYLOAD - abi.MODULE_LOAD.request.struct.size - 1024


class ModuleVerbs:
    """Mixed into Handle: the MODULE_* commands (``_conn`` and ``_fd`` are Handle's)."""

    _conn: Connection
    _fd: int
    gmalloc_dma: Callable[[int], DmaBuffer]  # Handle's
    gfree_dma: Callable[[DmaBuffer], int]

    def _request(self, cmd: Command[Req, Rep], req: Req, tail: abi.Tail = b"") -> Reply[Rep]:
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(cmd, req, tail)

    def gmodule_load(self, image: bytes | bytearray | memoryview,
                     name: str = "<image>") -> ModuleTable:
        """Load a PTX module (``image``: its text, NUL-terminated or not) into this context;
        its function table.  ENOEXEC for an image that is not PTX text, EINVAL (naming
        ``name`` and the line) for PTX the daemon rejects, ENOMEM over the vGPU's share."""
        raw = memoryview(image).cast("B")
        label = name.encode("utf-8")[:1024]
        if len(raw) <= INLINE_IMAGE_MAX:
            req = abi.ModuleLoad(len(raw), 0, 0, abi.HOST_INLINE, len(label))
            reply = self._request(abi.MODULE_LOAD, req, label + raw.tobytes())
        else:
            buf = self.gmalloc_dma(len(raw))
            try:
                buf.array[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
                req = abi.ModuleLoad(len(raw), 0, buf.buf_id, abi.HOST_DMA, len(label))
                reply = self._request(abi.MODULE_LOAD, req, label)
            finally:
                self.gfree_dma(buf)
        f = reply.fields
        try:
            functions, globals_ = moduletable.decode(reply.tail, f.n_functions, f.n_globals)
        except abi.ProtocolError as exc:
            self.gmodule_unload(f.module_id)
            raise error_from_errno(errno.EPROTO, str(exc)) from None
        return ModuleTable(f.module_id, f.data_addr, f.data_size, f.ptx_version, f.target_sm,
                           functions, globals_)

    def gmodule_data(self, module_id: int) -> DmaBuffer:
        """The data segment of a loaded module with ``__managed__`` variables, mapped in this
        process: ``array`` holds the bytes its kernels use (its globals at their table
        addresses less ``addr``).  ENOENT if the module's data segment is device memory."""
        from libgdev.hostmem import DmaBuffer
        reply = self._request(abi.MODULE_DATA, abi.ModuleRef(module_id))
        return DmaBuffer(0, reply.fields.addr, reply.fields.size, reply.fd)

    def gmodule_unload(self, module_id: int) -> None:
        """Unload a module once the work issued before is done (ENOENT if unknown)."""
        self._request(abi.MODULE_UNLOAD, abi.ModuleRef(module_id))

    def gmodule_launch(self, module_id: int, index: int, grid: tuple[int, int, int],
                       block: tuple[int, int, int], shared_dynamic: int,
                       params: bytes | bytearray | memoryview, stream: int = 0,
                       cooperative: bool = False) -> int:
        """Launch function ``index`` (its place in the module's table) of a loaded module
        with the packed parameter buffer ``params``, in ``stream`` (``cooperative``: every
        block resident at once, for grid-wide barriers); its fence id."""
        req = abi.ModuleLaunch(module_id, index, *grid, *block, shared_dynamic, len(params),
                               stream, abi.LAUNCH_COOPERATIVE if cooperative else 0)
        return self._request(abi.MODULE_LAUNCH, req, memoryview(params)).fields.id
