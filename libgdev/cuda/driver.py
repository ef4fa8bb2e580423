"""The CUDA driver: one class composed of the per-concept parts, bound to a Gdev backend.

``CudaDriver(backend)`` holds all state (initialization, contexts, current-context stacks);
its ``cu*`` methods are the API.  A binding makes one driver over its backend and exports the
bound methods under CUDA's names (``libgdev.cuda`` over ``libgdev``, ``kcuda`` over the daemon's
runtime, tests over ``gdevd.gdev``).  ``backend`` may be a backend object or a callable that
returns one; the callable runs at ``cuInit`` so that importing a binding needs no daemon.
"""

from __future__ import annotations

from typing import Any

from .context import ContextAPI, PriorityAPI
from .core import DriverCore
from .device import DeviceAPI
from .errors import ErrorAPI
from .event import EventAPI
from .ipc import IpcAPI
from .launch import LaunchAPI
from .memory import MemoryAPI
from .module import ModuleAPI
from .shm import ShmAPI
from .stream import StreamAPI
from .texture import TextureAPI
from .vmm import VmmAPI


class CudaDriver(DeviceAPI, ContextAPI, PriorityAPI, MemoryAPI, ModuleAPI, LaunchAPI,
                 StreamAPI, EventAPI, ShmAPI, TextureAPI, VmmAPI, IpcAPI, ErrorAPI, DriverCore):
    """The CUDA driver API over one sync Gdev backend (see ``backend.GdevBackend``)."""

    def _resolve_backend(self) -> Any:
        src = self._backend_source
        return src() if callable(src) and not hasattr(src, "gopen") else src

    def exports(self) -> dict[str, Any]:
        """CUDA's names bound to this driver: ``{"cuInit": driver.cuInit, ...}``."""
        return {name: getattr(self, name) for name in API_NAMES}

    def shutdown(self) -> None:
        """Destroy every context still alive (what process exit does to a CUDA program)."""
        for ctx in list(self.contexts):
            try:
                self.cuCtxDestroy(ctx)
            except Exception:  # noqa: BLE001 - best effort at teardown, keep going
                ctx.destroyed = True


API_NAMES: tuple[str, ...] = tuple(sorted(
    name for name in dir(CudaDriver)
    if name.startswith("cu") and getattr(getattr(CudaDriver, name), "__cuda_api__", False)
))
