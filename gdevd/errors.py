"""Exceptions of the runtime and the emulated hardware.

Every failure inside the daemon is a :class:`GdevError` carrying an ``errno`` value.  The
boundaries translate it exactly once: the FUSE front into ``pyfuse3.FUSEError``, the ioctl
dispatch into the reply's status, ``kcuda`` into a ``CUresult``.  Nothing returns 0/NULL for
failure.
"""

from __future__ import annotations

import errno as _errno

from libgdev.errors import GdevError  # the one root, shared with the client (an OSError)

__all__ = ["GdevError", "KernelFault", "MmuFault"]


class MmuFault(GdevError):
    """An access outside an address space's mappings, or a misaligned/forbidden one.

    ``index`` is the element of a vector access that faulted (0 for scalar accesses),
    ``va`` its virtual address and ``reason`` one of ``"unmapped"``, ``"misaligned"``,
    ``"protection"``.
    """

    def __init__(self, va: int, reason: str, index: int = 0) -> None:
        self.va = va
        self.reason = reason
        self.index = index
        super().__init__(_errno.EFAULT, f"{reason} access at 0x{va:x} (element {index})")


class KernelFault(GdevError):
    """A kernel died on the device: illegal address, trap, or watchdog timeout.

    Only the launching context sees it (``CUDA_ERROR_ILLEGAL_ADDRESS`` or
    ``CUDA_ERROR_LAUNCH_TIMEOUT`` in the CUDA layer).
    """

    def __init__(self, err: int, detail: str) -> None:
        super().__init__(err, detail)
