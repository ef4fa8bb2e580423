"""Getters and setters of the PTX engine's /proc/gdev entries (``ptx_engine``,
``ptx_modules``); see gdevd/gpu/ptx/jit and docs/ptx-engine.md."""

from __future__ import annotations

from typing import Any

from gdevd.gpu.ptx import jit


def get_engine(system: Any) -> str:
    """The engine policy: ``auto``, ``jit`` or ``interp``."""
    return jit.engine()


def set_engine(system: Any, name: str) -> None:
    """Select the engine policy for later launches (EINVAL if unknown)."""
    jit.set_engine(name)


def modules(system: Any) -> str:
    """One line per decoded module of every GPU: name, engine status, compile seconds,
    kernels compiled out of all."""
    lines = ["gpu module status compile_s kernels_compiled kernels\n"]
    for k, phys in enumerate(system.physical):
        for mod in phys.modules.modules():
            state = mod.jit
            done = len(state.compiled.kernels) if state.compiled is not None else 0
            lines.append(f"{k} {mod.name} {state.status} {state.seconds:.3f} {done} "
                         f"{len(mod.kernels)}\n")
    return "".join(lines)
