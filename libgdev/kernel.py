"""The launch descriptor, Gdev's ``struct gdev_kernel`` (protocol surface).

One class for both sides: the client fills it and :meth:`libgdev.Handle.glaunch` sends its
fields; the daemon's ioctl backend rebuilds it from a GLAUNCH request; the runtime's
``glaunch`` validates it (``gdevd.runtime.api_exec``).  It carries data only, no checks: every
field is untrusted until the runtime has looked at it.
"""

from __future__ import annotations

import dataclasses

Dim3 = tuple[int, int, int]


@dataclasses.dataclass
class GdevKernel:
    """A launch descriptor, reduced to what PTX needs.

    ``code_addr``/``code_size``: the PTX module's text in device memory (uploaded by the
    caller with ``gmalloc`` + ``gmemcpy_to_device``); ``name``: the entry; ``grid``/``block``:
    (x, y, z); ``params``: the parameter buffer, laid out as the kernel's ``.param`` list;
    ``data_addr``: the module's data segment as laid out by ``mod.data_layout()`` (0 if the
    module has none); ``shared_dynamic``: bytes of dynamic shared memory.
    """

    code_addr: int
    code_size: int
    name: str
    grid: Dim3 = (1, 1, 1)
    block: Dim3 = (1, 1, 1)
    params: bytes | bytearray | memoryview = b""
    data_addr: int = 0
    shared_dynamic: int = 0
