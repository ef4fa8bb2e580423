"""The paper's MADD kernel (kernels/madd.ptx) loaded into a runtime context, for the tests."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from gdevd import runtime as rt

PTX = (Path(__file__).parents[2] / "kernels" / "madd.ptx").read_bytes()


async def load_madd(h: rt.Handle) -> int:
    """Upload the MADD module's code into ``h``; its device address."""
    code = await rt.gmalloc(h, len(PTX))
    await rt.gmemcpy_to_device(h, code, PTX, len(PTX))
    return code


async def madd(h: rt.Handle, code: int, a: int, b: int, c: int, n: int) -> None:
    """c = a + b for n x n uint32 matrices at device addresses a, b, c; waits for it."""
    k = rt.GdevKernel(code, len(PTX), "add", grid=(-(-n // 16), -(-n // 16), 1),
                      block=(16, 16, 1), params=struct.pack("<QQQI4x", a, b, c, n))
    await rt.gsync(h, await rt.glaunch(h, k), timeout=120)


def as_u32(data: np.ndarray) -> np.ndarray:
    """Bytes viewed as uint32."""
    return data.view(np.uint32)
