"""kcuda: the CUDA driver API inside the daemon, over the daemon's own runtime (never FUSE).

The same implementation as ``libgdev.cuda`` (one ``CudaDriver``), bound to the runtime that
the daemon's trio loop owns.  The daemon attaches it once the system is up::

    kcuda.attach(system, trio.lowlevel.current_trio_token())

and in-daemon modules then call CUDA's names (``kcuda.cuInit(0)``, ``kcuda.cuMemAlloc(n)``,
...) from worker threads (``trio.to_thread.run_sync``): each call is relayed into the trio
loop with ``trio.from_thread.run``, so it must not be made from the trio thread itself.
``detach()`` destroys the contexts still open and forgets the runtime.
"""

from __future__ import annotations

from typing import Any

from gdevd.facade import RuntimeFacade
from libgdev.cuda import (
    CU_EVENT_BLOCKING_SYNC,
    CU_EVENT_DEFAULT,
    CU_EVENT_DISABLE_TIMING,
    CU_MEMHOSTALLOC_DEVICEMAP,
    CU_MEMHOSTALLOC_PORTABLE,
    CU_MEMHOSTALLOC_WRITECOMBINED,
    CU_STREAM_DEFAULT,
    CU_STREAM_NON_BLOCKING,
    CudaError,
    CUdevice_attribute,
    CUresult,
)
from libgdev.cuda.driver import API_NAMES, CudaDriver
from libgdev.cuda.errors import fail

_facade: RuntimeFacade | None = None


def _backend() -> RuntimeFacade:
    if _facade is None:
        raise fail(CUresult.CUDA_ERROR_NOT_INITIALIZED, "kcuda is not attached to a runtime")
    return _facade


driver = CudaDriver(_backend)


def attach(system: Any, trio_token: Any) -> None:
    """Bind kcuda to the daemon's ``GdevSystem`` running in the loop of ``trio_token``."""
    global _facade, driver
    if _facade is not None:
        raise RuntimeError("kcuda is already attached")
    _facade = RuntimeFacade(system, trio_token)
    driver = CudaDriver(_backend)
    globals().update(driver.exports())


def detach() -> None:
    """Destroy the contexts kcuda users left open and forget the runtime (idempotent).

    Called on the runtime's own loop thread (the daemon's teardown), it cannot wait for the
    loop: the contexts are only marked destroyed, and the system's shutdown closes their
    handles with everything else.
    """
    global _facade, driver
    if _facade is None:
        return
    if _facade.on_loop_thread():
        for ctx in list(driver.contexts):
            ctx.destroyed = True
        driver.contexts.clear()
    else:
        driver.shutdown()
    _facade = None
    driver = CudaDriver(_backend)  # a later attach starts from scratch
    globals().update(driver.exports())


def attached() -> bool:
    """Whether kcuda is bound to a running runtime."""
    return _facade is not None


globals().update(driver.exports())

__all__ = [
    *API_NAMES, "attach", "detach", "attached", "driver", "CudaError", "CUresult",
    "CUdevice_attribute", "RuntimeFacade",
    "CU_EVENT_DEFAULT", "CU_EVENT_BLOCKING_SYNC", "CU_EVENT_DISABLE_TIMING",
    "CU_MEMHOSTALLOC_PORTABLE", "CU_MEMHOSTALLOC_DEVICEMAP", "CU_MEMHOSTALLOC_WRITECOMBINED",
    "CU_STREAM_DEFAULT", "CU_STREAM_NON_BLOCKING",
]
