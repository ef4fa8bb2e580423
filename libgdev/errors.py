"""libgdev's exceptions: every failure is an ``OSError`` subclass that is also a GdevError.

The daemon answers a failed call with an errno; the client raises it exactly once, here.
``OSError(errno, msg)`` already picks Python's subclass for an errno (``ENOENT`` ->
``FileNotFoundError``, ``EACCES`` -> ``PermissionError``, ...); :func:`error_from_errno` builds
the matching class that also derives from :class:`GdevError`, so callers may catch either::

    try:
        h.gfree(addr)
    except FileNotFoundError:     # or libgdev.GdevError, or OSError
        ...
"""

from __future__ import annotations

import errno as _errno
import os


class GdevError(OSError):
    """Base class of every error libgdev raises (an OSError carrying ``errno``)."""


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
    """The exception for ``err``: a GdevError that is also Python's OSError subclass for it."""
    name = _errno.errorcode.get(err, str(err))
    msg = f"{os.strerror(err)} ({name})" + (f": {detail}" if detail else "")
    return _class_for(err)(err, msg)
