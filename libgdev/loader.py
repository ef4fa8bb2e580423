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
from typing import Any

import numpy as np

from libgdev import abi, moduletable
from libgdev.errors import error_from_errno
from libgdev.moduletable import ModuleTable

_LOAD = abi.BY_NAME["MODULE_LOAD"]
# the largest image carried inside the message, with a name of up to 1 KiB
INLINE_IMAGE_MAX = abi.MAX_PAYLOAD - _LOAD.request.struct.size - 1024


class ModuleVerbs:
    """Mixed into Handle: the MODULE_* commands (``_conn`` and ``_fd`` are Handle's)."""

    _conn: Any
    _fd: int
    gmalloc_dma: Any  # Handle's
    gfree_dma: Any

    def _request(self, name: str, tail: abi.Tail = b"", **fields: Any) -> Any:
        if self._fd < 0:
            raise error_from_errno(errno.EBADF, "handle is closed")
        return self._conn.call(name, tail, **fields)

    def gmodule_load(self, image: bytes | bytearray | memoryview,
                     name: str = "<image>") -> ModuleTable:
        """Load a PTX module (``image``: its text, NUL-terminated or not) into this context;
        its function table.  ENOEXEC for an image that is not PTX text, EINVAL (naming
        ``name`` and the line) for PTX the daemon rejects, ENOMEM over the vGPU's share."""
        raw = memoryview(image).cast("B")
        label = name.encode("utf-8")[:1024]
        if len(raw) <= INLINE_IMAGE_MAX:
            reply = self._request("MODULE_LOAD", label + raw.tobytes(), size=len(raw),
                                  host_offset=0, buf_id=0, host_kind=abi.HOST_INLINE,
                                  name_len=len(label))
        else:
            buf = self.gmalloc_dma(len(raw))
            try:
                buf.array[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
                reply = self._request("MODULE_LOAD", label, size=len(raw), host_offset=0,
                                      buf_id=buf.buf_id, host_kind=abi.HOST_DMA,
                                      name_len=len(label))
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

    def gmodule_unload(self, module_id: int) -> None:
        """Unload a module once the work issued before is done (ENOENT if unknown)."""
        self._request("MODULE_UNLOAD", module_id=module_id)

    def gmodule_launch(self, module_id: int, index: int, grid: tuple[int, int, int],
                       block: tuple[int, int, int], shared_dynamic: int,
                       params: bytes | bytearray | memoryview, stream: int = 0) -> int:
        """Launch function ``index`` (its place in the module's table) of a loaded module
        with the packed parameter buffer ``params``, in ``stream``; its fence id."""
        return self._request(
            "MODULE_LAUNCH", memoryview(params), module_id=module_id, function=index,
            grid_x=grid[0], grid_y=grid[1], grid_z=grid[2],
            block_x=block[0], block_y=block[1], block_z=block[2],
            shared_dynamic=shared_dynamic, params_len=len(params), stream=stream).fields.id
