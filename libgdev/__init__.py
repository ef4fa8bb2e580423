"""libgdev: the Gdev API for client processes, relayed to gdevd over its ioctl socket.

    import libgdev
    with libgdev.gopen(0) as h:                 # MOUNT/dev/gdev0, MOUNT from $GDEV_MOUNT
        addr = libgdev.gmalloc(h, 1 << 20)      # Gdev's verbs, handle first ...
        h.gmemcpy_to_device(addr, numpy_array)  # ... or as methods
        libgdev.gfree(h, addr)

Errors are OSError subclasses that also derive from :class:`GdevError`.

The package holds two things.  The *protocol surface* (:data:`PROTOCOL`: the ABI and its
typed messages, the gate, the spin policy, Gdev's constants, the launch descriptor, the
host-buffer check, the texture descriptor, the IPC handle layout and the error root) is what
gdevd imports too; each of those modules imports only the others.  The client (handle,
connection, host memory, the CUDA layer) is loaded on first use of a name below, so
importing the protocol surface from the daemon does not import the client.
"""

from __future__ import annotations

import importlib
from typing import Any

from libgdev.constants import *  # noqa: F403
from libgdev.errors import GdevError, ProtocolViolation, error_from_errno
from libgdev.gate import DEFAULT_MOUNT, mount_point
from libgdev.kernel import GdevKernel
from libgdev.verbs import HANDLE_VERBS

# The modules both sides import (tests/test_imports.py holds gdevd to these).
PROTOCOL = ("libgdev.abi", "libgdev.buffers", "libgdev.constants", "libgdev.errors", "libgdev.gate",
            "libgdev.ipchandle", "libgdev.ipcmessages", "libgdev.kernel", "libgdev.linkimage",
            "libgdev.messages", "libgdev.moduletable", "libgdev.spin", "libgdev.texture",
            "libgdev.verbs", "libgdev.wire")

# Gdev's verbs as module-level functions taking the handle first (libgdev.verbs).
VERBS = HANDLE_VERBS
_LAZY = {"Handle": "libgdev.handle", "DmaBuffer": "libgdev.hostmem"}


def gopen(minor: int, mount: str | None = None) -> Any:
    """Open virtual GPU ``minor`` (``MOUNT/dev/gdev<minor>``); a Handle."""
    from libgdev.handle import Handle

    return Handle(minor, mount)


def gdevice_count(mount: str | None = None) -> int:
    """Number of virtual GPUs (read from ``MOUNT/proc/gdev/virtual_device_count``, as Gdev's
    ioctl library does; ENODEV if there is no such file, saying what to do)."""
    import errno
    import os

    from libgdev.gate import open_failure

    where = mount or mount_point()
    path = os.path.join(where, "proc", "gdev", "virtual_device_count")
    try:
        with open(path) as f:
            return int(f.read())
    except OSError as exc:
        raise error_from_errno(errno.ENODEV, open_failure(path, where, exc)) from None


def _verb(name: str) -> Any:
    from libgdev.handle import Handle

    method = getattr(Handle, name)

    def verb(h: Any, *args: Any, **kwargs: Any) -> Any:
        return method(h, *args, **kwargs)
    verb.__name__ = verb.__qualname__ = name
    verb.__doc__ = method.__doc__
    verb.__wrapped__ = method  # type: ignore[attr-defined]  # its signature: the method's
    return verb


def __getattr__(name: str) -> Any:
    """The client's names, imported on first use (PEP 562)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in VERBS:
        value = _verb(name)
    else:
        raise AttributeError(f"module 'libgdev' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = ["DEFAULT_MOUNT", "GdevError", "GdevKernel", "ProtocolViolation", "gdevice_count",
           "gopen", "mount_point", *_LAZY, *VERBS]
