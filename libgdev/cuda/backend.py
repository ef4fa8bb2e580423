"""The sync Gdev backend the CUDA layer is written against, and its adapter.

The CUDA driver API is implemented once (this package) over the synchronous Gdev verbs, which
exist in three places with the same names and contracts: ``gdevd.gdev`` (in-process facade),
``libgdev`` (relay to the daemon) and, inside the daemon, ``gdevd.facade`` (the daemon's own
runtime reached with ``trio.from_thread.run``).  :class:`GdevBackend` is that contract as a
Protocol; :class:`ModuleBackend` adapts any object or module that has the verbs as attributes.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from libgdev.moduletable import ModuleTable
from libgdev.verbs import CUDA_VERBS


class GdevBackend(Protocol):
    """Gdev's verbs, synchronous, failing with an exception that carries an ``errno``.

    Contracts as in ``gdevd/runtime`` (docs/runtime.md): handles are per-context address
    spaces with streams (``gstream_create``; 0 is the legacy stream), each an in-order
    channel; copies and launches take a ``stream``; ``*_async`` and ``glaunch`` return fence ids for
    ``gsync`` (0: already complete); ``gsync(h, id, 0)`` polls (ETIME while pending);
    ``make_kernel`` builds the ``GdevKernel`` launch descriptor; ``gmodule_load`` has the
    daemon (or the runtime in process) load a PTX image and returns its function table.
    """

    def gdevice_count(self) -> int: ...
    def gopen(self, minor: int) -> Any: ...
    def gclose(self, h: Any) -> None: ...
    def gmalloc(self, h: Any, size: int) -> int: ...
    def gfree(self, h: Any, addr: int) -> int: ...
    def gmalloc_dma(self, h: Any, size: int) -> np.ndarray: ...
    def gfree_dma(self, h: Any, buf: np.ndarray) -> int: ...
    def gvirtget(self, h: Any, buf: np.ndarray) -> int: ...
    def gmemcpy_to_device(self, h: Any, dst: int, src: Any, size: int,
                          stream: int = 0) -> None: ...
    def gmemcpy_to_device_async(self, h: Any, dst: int, src: Any, size: int,
                                stream: int = 0) -> int: ...
    def gmemcpy_from_device(self, h: Any, dst: Any, src: int, size: int,
                            stream: int = 0) -> None: ...
    def gmemcpy_from_device_async(self, h: Any, dst: Any, src: int, size: int,
                                  stream: int = 0) -> int: ...
    def gmemcpy(self, h: Any, dst: int, src: int, size: int, stream: int = 0) -> None: ...
    def gmemcpy_async(self, h: Any, dst: int, src: int, size: int, stream: int = 0) -> int: ...
    def glaunch(self, h: Any, kernel: Any, stream: int = 0) -> int: ...
    def gstream_create(self, h: Any, flags: int = 0) -> int: ...
    def gstream_destroy(self, h: Any, stream: int) -> None: ...
    def gstream_wait(self, h: Any, stream: int, fence_id: int) -> None: ...
    def gstream_sync(self, h: Any, stream: int, timeout: float | None = None) -> None: ...
    def gsync(self, h: Any, fence_id: int, timeout: float | None = None) -> None: ...
    def gbarrier(self, h: Any) -> None: ...
    def gquery(self, h: Any, qtype: int) -> int: ...
    def gshmget(self, h: Any, key: int, size: int, flags: int) -> int: ...
    def gshmat(self, h: Any, shmid: int, addr: int = 0, flags: int = 0) -> int: ...
    def gshmdt(self, h: Any, addr: int) -> None: ...
    def gshmctl(self, h: Any, shmid: int, cmd: int, buf: Any = None) -> Any: ...
    def gmodule_load(self, h: Any, image: bytes, name: str) -> ModuleTable: ...
    def gmodule_unload(self, h: Any, module_id: int) -> None: ...
    def gmodule_launch(self, h: Any, module_id: int, index: int, grid: tuple[int, int, int],
                       block: tuple[int, int, int], shared_dynamic: int,
                       params: bytes, stream: int = 0) -> int: ...
    def make_kernel(self, **fields: Any) -> Any: ...


_VERBS = CUDA_VERBS


class ModuleBackend:
    """Adapt a namespace with Gdev's sync verbs (a module or a facade object) to GdevBackend.

    ``kernel_type`` builds the launch descriptor (``GdevKernel``); by default the namespace's
    own ``GdevKernel`` attribute.  ``gmemcpy_async`` is optional in the namespace: without
    it an async device-to-device copy runs synchronously (fence 0), which is still ordered.
    """

    def __init__(self, ns: Any, kernel_type: Any = None) -> None:
        missing = [v for v in _VERBS if not hasattr(ns, v)]
        if missing:
            raise TypeError(f"{ns!r} lacks Gdev verbs: {', '.join(missing)}")
        self.ns = ns
        self.kernel_type = kernel_type if kernel_type is not None else ns.GdevKernel
        for verb in _VERBS:
            setattr(self, verb, getattr(ns, verb))

    def make_kernel(self, **fields: Any) -> Any:
        """A launch descriptor with Gdev's fields (code_addr, code_size, data_addr, name, ...)."""
        return self.kernel_type(**fields)

    def gmemcpy_async(self, h: Any, dst: int, src: int, size: int, stream: int = 0) -> int:
        """Device-to-device copy returning a fence id (0 when it already completed)."""
        verb = getattr(self.ns, "gmemcpy_async", None)
        if verb is not None:
            return int(verb(h, dst, src, size, stream))
        self.ns.gmemcpy(h, dst, src, size, stream)
        return 0

    def __repr__(self) -> str:
        return f"ModuleBackend({getattr(self.ns, '__name__', self.ns)!r})"
