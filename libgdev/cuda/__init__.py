"""The CUDA driver API over libgdev (user space): ``from libgdev import cuda``.

Functions have CUDA's names and return their results instead of filling out-parameters;
failures raise :class:`CudaError` whose ``.result`` is a :class:`CUresult`.  Example::

    from libgdev import cuda
    cuda.cuInit(0)
    ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(0))
    mod = cuda.cuModuleLoad("kernels/madd.ptx")
    f = cuda.cuModuleGetFunction(mod, "add")
    d = cuda.cuMemAlloc(4096)
    cuda.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, None, [d, d, d, 1024])

The same implementation runs inside the daemon as ``kcuda``.  ``bind(backend)`` gives a fresh,
independent driver over any sync Gdev backend (``gdevd.gdev`` in-process, for instance).
"""

from __future__ import annotations

from typing import Any

from .array import *  # noqa: F403  (CUDA_ARRAY_DESCRIPTOR, CUDA_MEMCPY2D, CU_MEMORYTYPE_*)
from .array import __all__ as _ARRAY_NAMES
from .array3d import *  # noqa: F403  (CUDA_ARRAY3D_DESCRIPTOR, CUDA_MEMCPY3D, CUDA_ARRAY3D_*)
from .array3d import __all__ as _ARRAY3D_NAMES
from .backend import GdevBackend, ModuleBackend
from .device import CUdevice_attribute
from .driver import API_NAMES, CudaDriver
from .errors import CudaError, CUresult, result_from_errno
from .event import (
    CU_EVENT_BLOCKING_SYNC,
    CU_EVENT_DEFAULT,
    CU_EVENT_DISABLE_TIMING,
    CU_EVENT_INTERPROCESS,
)
from .ipc import CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
from .launch import CUfunction_attribute
from .memory import (
    CU_MEMHOSTALLOC_DEVICEMAP,
    CU_MEMHOSTALLOC_PORTABLE,
    CU_MEMHOSTALLOC_WRITECOMBINED,
)
from .stream import CU_STREAM_DEFAULT, CU_STREAM_NON_BLOCKING
from .texture import *  # noqa: F403  (CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CU_TR_*, ...)
from .texture import __all__ as _TEXTURE_NAMES


def _libgdev_backend() -> ModuleBackend:
    import libgdev

    return ModuleBackend(libgdev)


def bind(backend: Any) -> CudaDriver:
    """A new driver over ``backend`` (a GdevBackend, a namespace of verbs, or a factory)."""
    if hasattr(backend, "gopen") and not hasattr(backend, "make_kernel"):
        backend = ModuleBackend(backend)
    return CudaDriver(backend)


driver = CudaDriver(_libgdev_backend)
globals().update(driver.exports())

__all__ = [
    *API_NAMES, "CudaError", "CUresult", "CUdevice_attribute", "CUfunction_attribute",
    "CudaDriver", "GdevBackend", "ModuleBackend", "bind", "driver", "result_from_errno",
    "CU_EVENT_DEFAULT", "CU_EVENT_BLOCKING_SYNC", "CU_EVENT_DISABLE_TIMING",
    "CU_EVENT_INTERPROCESS", "CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS",
    "CU_MEMHOSTALLOC_PORTABLE", "CU_MEMHOSTALLOC_DEVICEMAP", "CU_MEMHOSTALLOC_WRITECOMBINED",
    "CU_STREAM_DEFAULT", "CU_STREAM_NON_BLOCKING", *_TEXTURE_NAMES, *_ARRAY_NAMES, *_ARRAY3D_NAMES,
]
