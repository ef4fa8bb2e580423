"""Real nvcc PTX for scheduler tests and benchmarks: ``idle`` and ``loop`` of kernels/loop.cu."""

from __future__ import annotations

import struct
from pathlib import Path

from gdevd import runtime as rt

LOOP_PTX = (Path(__file__).resolve().parents[2] / "kernels" / "loop.ptx").read_bytes()


class LoopModule:
    """kernels/loop.ptx uploaded into one context, and an output word for ``idle``."""

    def __init__(self, code: int, out: int) -> None:
        self.code, self.out = code, out

    @classmethod
    async def load(cls, h: rt.Handle) -> LoopModule:
        """Upload the module's text and allocate the ``idle`` kernel's output word."""
        code = await rt.gmalloc(h, len(LOOP_PTX))
        await rt.gmemcpy_to_device(h, code, LOOP_PTX, len(LOOP_PTX))
        return cls(code, await rt.gmalloc(h, 4096))

    def idle(self, n: int) -> rt.GdevKernel:
        """One thread spinning ``n`` iterations (run time grows linearly with ``n``)."""
        return rt.GdevKernel(self.code, len(LOOP_PTX), "idle",
                             params=struct.pack("<QI", self.out, n))
