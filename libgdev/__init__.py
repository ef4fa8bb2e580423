"""libgdev: the Gdev API for client processes, relayed to gdevd over its ioctl socket.

    import libgdev
    with libgdev.gopen(0) as h:                 # MOUNT/dev/gdev0, MOUNT from $GDEV_MOUNT
        addr = libgdev.gmalloc(h, 1 << 20)      # Gdev's verbs, handle first ...
        h.gmemcpy_to_device(addr, numpy_array)  # ... or as methods
        libgdev.gfree(h, addr)

Errors are OSError subclasses that also derive from :class:`GdevError`.
"""

from __future__ import annotations

from libgdev.constants import *  # noqa: F403
from libgdev.errors import GdevError, ProtocolViolation, error_from_errno
from libgdev.gate import DEFAULT_MOUNT, mount_point
from libgdev.handle import GdevKernel, Handle
from libgdev.hostmem import DmaBuffer

# Gdev's verbs as module-level functions taking the handle first (gdev_api.h order).
VERBS = ("gclose", "gmalloc", "gfree", "gmalloc_dma", "gfree_dma", "gmemcpy_to_device",
         "gmemcpy_to_device_async", "gmemcpy_from_device", "gmemcpy_from_device_async",
         "gmemcpy", "gmemcpy_async", "glaunch", "gsync", "gbarrier", "gquery", "gtune",
         "gref", "gunref", "gvirtget", "gshmget", "gshmat", "gshmdt", "gshmctl",
         "gset_priority", "gget_priority")


def gopen(minor: int, mount: str | None = None) -> Handle:
    """Open virtual GPU ``minor`` (``MOUNT/dev/gdev<minor>``); a Handle."""
    return Handle(minor, mount)


def gdevice_count(mount: str | None = None) -> int:
    """Number of virtual GPUs (read from ``MOUNT/proc/gdev/virtual_device_count``, as Gdev's
    ioctl library does; ENODEV if there is no such file)."""
    import errno
    import os

    path = os.path.join(mount or mount_point(), "proc", "gdev", "virtual_device_count")
    try:
        with open(path) as f:
            return int(f.read())
    except OSError:
        raise error_from_errno(errno.ENODEV, path) from None


def _verb(name: str):  # type: ignore[no-untyped-def]
    method = getattr(Handle, name)

    def verb(h: Handle, *args, **kwargs):  # type: ignore[no-untyped-def]
        return method(h, *args, **kwargs)
    verb.__name__ = verb.__qualname__ = name
    verb.__doc__ = method.__doc__
    return verb


for _name in VERBS:
    globals()[_name] = _verb(_name)
del _name

__all__ = ["DEFAULT_MOUNT", "DmaBuffer", "GdevError", "GdevKernel", "Handle",
           "ProtocolViolation", "gdevice_count", "gopen", "mount_point", *VERBS]
