"""The one error root of gdev-py, shared by the client and the daemon (protocol surface).

Every failure on either side of the ABI is a :class:`GdevError`: an ``OSError`` carrying an
``errno`` and a ``detail`` (the reason, in words).  The daemon raises it in the runtime and
sends both across the ABI (an error reply's status and message, ``docs/abi.md``); the client
raises it again, exactly once, with :func:`error_from_errno`, which picks the class that is
both a GdevError and Python's OSError subclass for the errno (``ENOENT`` ->
``FileNotFoundError``, ``EACCES`` -> ``PermissionError``, ...), so callers catch either::

    try:
        h.gfree(addr)
    except FileNotFoundError:     # or libgdev.GdevError, or OSError
        ...

``str(e)`` names the errno, its text and the reason: ``[ENOMEM] Cannot allocate memory:
GMALLOC: 314572800 bytes exceed vGPU 0's share (268435456)``.  This module imports nothing
else of libgdev, so the daemon can import it without the client.
"""

from __future__ import annotations

import errno as _errno
import os


class GdevError(OSError):
    """Base class of every gdev-py error: an OSError with ``errno`` and ``detail``."""

    errno: int  # always set (OSError's may be None)

    def __init__(self, err: int, detail: str = "") -> None:
        super().__init__(err, detail)
        self.errno = err
        self.detail = detail

    def __str__(self) -> str:
        name = _errno.errorcode.get(self.errno, str(self.errno))
        msg = f"[{name}] {os.strerror(self.errno)}"
        return f"{msg}: {self.detail}" if self.detail else msg


class ProtocolViolation(GdevError):
    """The daemon sent something the ABI does not allow, or the session was closed."""


_CLASSES: dict[type[OSError], type[GdevError]] = {OSError: GdevError}


def _class_for(err: int) -> type[GdevError]:
    builtin = type(OSError(err, ""))
    cls = _CLASSES.get(builtin)
    if cls is None:
        cls = type(f"Gdev{builtin.__name__}", (GdevError, builtin),
                   {"__doc__": f"GdevError that is also a {builtin.__name__}.",
                    "__module__": __name__})
        _CLASSES[builtin] = cls
    return cls


def error_from_errno(err: int, detail: str = "") -> GdevError:
    """The exception for ``err``: a GdevError that is also Python's OSError subclass for it,
    carrying ``detail`` (what failed and why)."""
    return _class_for(err)(err, detail)
