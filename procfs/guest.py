"""/proc/gdev entries of the guest class (gdevd/runtime/sched/guest.py): who is a guest, the
mode of each GPU and its transitions, and the knobs F, P and the memory threshold."""

from __future__ import annotations

import errno
from typing import Any

import trio

from gdevd.errors import GdevError


def guests(system: Any) -> str:
    """``cid guest override`` per open context (override ``-`` when none)."""
    g = system.scheduler.guests
    lines = ["cid guest override"]
    for h, se in system.scheduler.entities():
        o = se.guest_override
        lines.append(f"{h.cid} {int(g.is_guest(se))} {'-' if o is None else int(o)}")
    return "\n".join(lines) + "\n"


def parse_guest(data: bytes) -> tuple[int, bool | None]:
    """``b"CID 1"``, ``b"CID 0"`` or ``b"CID -"``; EINVAL for anything else."""
    words = data.split()
    if len(words) != 2 or not words[0].isdigit() or len(words[0]) > 12 or \
            words[1] not in (b"0", b"1", b"-"):
        raise GdevError(errno.EINVAL, f"guest: want 'CID 1', 'CID 0' or 'CID -': {data[:64]!r}")
    return int(words[0]), None if words[1] == b"-" else words[1] == b"1"


def set_guest(system: Any, value: tuple[int, bool | None]) -> None:
    """Make context ``cid`` a guest, a host, or (None) what its task and vGPU say."""
    cid, guest = value
    handle = system.handles.get(cid)
    if handle is None:
        raise GdevError(errno.ESRCH, f"no context {cid}")
    system.scheduler.entity(handle).guest_override = guest


def modes(system: Any) -> str:
    """Per GPU: ``gpuN MODE transitions T`` and its last transitions (``+seconds mode``,
    seconds ago)."""
    g, now = system.scheduler.guests, trio.current_time()
    lines = []
    for gpu in system.physical:
        st = g.state_of(gpu.index)
        if st is None:
            lines.append(f"gpu{gpu.index} periodic transitions 0")
            continue
        lines.append(f"gpu{gpu.index} {st.mode} transitions {st.transitions}")
        lines += [f"  -{now - t:.3f}s {mode}" for t, mode in st.log]
    return "\n".join(lines) + "\n"


def knob(attr: str, scale: float) -> tuple[Any, Any]:
    """(getter, setter) of ``system.scheduler.guests.<attr>`` shown as ``value * scale``."""
    def get(system: Any) -> int:
        return round(getattr(system.scheduler.guests, attr) * scale)

    def put(system: Any, value: int) -> None:
        setattr(system.scheduler.guests, attr, value / scale)
    return get, put
