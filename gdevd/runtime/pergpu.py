"""The runtime's record of one physical GPU: everything the runtime keeps per device.

A :class:`Gpu` holds the hardware (``phys``) and the runtime state that belongs to that
device and to no context: the VRAM allocator, the swap area, the registry of live device
blocks, the copy engines' completion waiters and the decoded-module cache.  A context
reaches its device's record as ``handle.gpu`` (the same record as ``handle.vgpu.gpu``); the
system holds them in ``system.gpus``, indexed by the physical GPU's index.

Invariant: ``blocks`` is exactly the set of live :class:`DeviceBlock`\\ s whose pages come
from ``allocator`` (the invariant checker compares it with the blocks the contexts map).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..gpu.compute import ModuleCache
from ..gpu.device import PhysicalGpu
from .completions import CopyCompletions
from .mm.allocator import ExtentAllocator
from .mm.swaparea import SwapArea

if TYPE_CHECKING:
    from .mm.memory import DeviceBlock


class Gpu:
    """One physical GPU and the runtime's per-device state (see the module docstring)."""

    def __init__(self, phys: PhysicalGpu, page_size: int, swap_percent: int,
                 host_swap: int) -> None:
        self.phys = phys
        self.index = phys.index
        self.allocator = ExtentAllocator(0, phys.memory_size, page_size)
        self.swap = SwapArea(phys, self.allocator, swap_percent, host_swap)
        self.blocks: set[DeviceBlock] = set()
        self.completions = {e.name: CopyCompletions(e) for e in (phys.htod, phys.dtoh, phys.dtod)}

    @property
    def modules(self) -> ModuleCache:
        """The decoded-module cache (the hardware's, shared by every context of the GPU)."""
        return self.phys.modules

    def __repr__(self) -> str:
        return f"<Gpu {self.index}: {len(self.blocks)} blocks, {self.allocator.used_bytes} used>"
