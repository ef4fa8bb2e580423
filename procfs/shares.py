"""Setters of the vGPU shares (declared in table.py), and the rule they keep.

Bandwidth shares (``compute_bandwidth``, ``memory_bandwidth``) are guarantees: the vGPUs of
one physical GPU total at most 100 %, and a write that would exceed it is EINVAL naming the
share still free.  Memory shares may total more (swap backs the excess, docs/memory.md):
such a write is applied, logged, and shown as ``vdN/memory_overcommit``.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import Any

from gdevd.errors import GdevError

log = logging.getLogger("gdevd.procfs")


def _siblings(vgpu: Any) -> list[Any]:
    """The other vGPUs on ``vgpu``'s physical GPU (none when it stands alone)."""
    system = getattr(vgpu, "system", None)
    if system is None:
        return []
    return [w for w in system.virtual if w.phys is vgpu.phys and w is not vgpu]


def set_bandwidth(attr: str) -> Callable[[Any, int], None]:
    """A bandwidth share's setter.  Invariant: the shares of one physical GPU's vGPUs sum to
    at most 100 % (they are guarantees; an overcommitted guarantee guarantees nothing)."""
    def setter(vgpu: Any, value: int) -> None:
        others = sum(getattr(w, attr) for w in _siblings(vgpu))
        if others + value > 100:
            raise GdevError(errno.EINVAL, f"{attr}: {value}% would bring gpu{vgpu.phys.index}'s "
                            f"vGPUs to {others + value}% (> 100%); at most {100 - others}% is "
                            "free: lower another vGPU's share first")
        setattr(vgpu, attr, value)
    return setter


def memory_overcommit(vgpu: Any) -> int:
    """Percent by which the memory shares on ``vgpu``'s physical GPU exceed 100 (0 if not)."""
    return max(0, vgpu.memory_share + sum(w.memory_share for w in _siblings(vgpu)) - 100)


def set_memory_share(vgpu: Any, value: int) -> None:
    """Set a memory share (overcommit allowed: logged); swap out what no longer fits."""
    vgpu.memory_share = value  # memory_size follows (the runtime derives it from the share)
    if over := memory_overcommit(vgpu):  # allowed: swap backs it (docs/daemon.md)
        log.warning("memory shares of gpu%d overcommitted by %d%%: swap backs the excess",
                    vgpu.phys.index, over)
    system = getattr(vgpu, "system", None)
    if system is not None and vgpu.memory_used > vgpu.memory_size:
        system.shrink(vgpu)    # swap the excess out in the background
