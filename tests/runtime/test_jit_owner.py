"""A module's background compile is done for the tenant whose load started it: its compiler
slots are shared fairly between tenants by that owner (gdevd/gpu/ptx/jit/slots.py)."""

from __future__ import annotations

from pathlib import Path

from gdevd import runtime as rt
from gdevd.runtime.system import Credentials

from .conftest import run_system

MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_bytes()


def test_the_first_loader_owns_the_compile() -> None:
    async def body(s: rt.GdevSystem) -> None:
        first = await rt.gopen(s, 0, Credentials(4242, 4242, 1, "tenant"))
        second = await rt.gopen(s, 0, Credentials(4343, 4343, 2, "other"))
        await rt.gmodule_load(first, MADD, "madd")
        await rt.gmodule_load(second, MADD, "madd")      # the same decoded module
        (mod,) = [m for m in first.gpu.modules.modules() if "add" in m.kernels]
        assert mod.jit.owner == 4242
        await rt.gclose(first)
        await rt.gclose(second)
    run_system(body)
