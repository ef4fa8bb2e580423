"""The one table of Gdev's verbs (protocol surface): every facade is derived from it.

Each verb takes the handle first (``gdev_api.h`` order) and has the same name and contract
in the runtime (``gdevd.runtime``, async), its one sync facade (``gdevd.facade``, under
``kcuda`` and the in-process ``gdevd.gdev``) and the client (``libgdev``, module
functions and :class:`libgdev.Handle` methods).  ``gopen`` and ``gdevice_count`` are not in
the table: how a context is opened differs per facade (a minor and a mount, or a system).
``tests/test_verbs.py`` holds every facade to the table.
"""

from __future__ import annotations

# Gdev's verbs, then the priority calls, the module verbs, the guest calls and the stream
# verbs (not in Gdev; launches and copies take an optional ``stream`` after their arguments).
HANDLE_VERBS = (
    "gclose", "gmalloc", "gfree", "gmalloc_dma", "gfree_dma", "gmemcpy_to_device",
    "gmemcpy_to_device_async", "gmemcpy_from_device", "gmemcpy_from_device_async",
    "gmemcpy", "gmemcpy_async", "glaunch", "gsync", "gbarrier", "gquery", "gtune",
    "gref", "gunref", "gvirtget", "gshmget", "gshmat", "gshmdt", "gshmctl",
    "gset_priority", "gget_priority", "gmodule_load", "gmodule_unload", "gmodule_launch",
    "gset_guest", "gget_guest",
    "gstream_create", "gstream_destroy", "gstream_wait", "gstream_sync",
)

# What the CUDA layer needs of a backend (libgdev.cuda.backend.GdevBackend); gmemcpy_async
# is optional there (ModuleBackend runs it synchronously without).
CUDA_VERBS = ("gdevice_count", "gopen", *(v for v in HANDLE_VERBS if v not in (
    "gtune", "gref", "gunref", "gset_priority", "gget_priority", "gset_guest", "gget_guest",
    "gmemcpy_async")))
