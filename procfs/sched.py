"""Getters, setters and formats of the scheduler's /proc/gdev entries (declared in table.py).

Global entries receive the system (its scheduler is ``system.scheduler``); per-vGPU entries
receive the :class:`~gdevd.runtime.system.VirtualGpu` (its scheduler is ``vgpu.scheduler``).
Text entries parse one word; a bad word is EINVAL and changes nothing.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import trio

from gdevd.errors import GdevError
from gdevd.runtime.constants import GDEV_MEM_DEVICE
from gdevd.runtime.sched import COMPUTE, MEMORY, POLICY_NAMES, QUEUEING

_WORD_MAX = 32


def parse_word(data: bytes) -> str:
    """One lower-case ASCII word, surrounding whitespace allowed; EINVAL otherwise."""
    text = data.strip()
    if not text or len(text) > _WORD_MAX or not text.isalpha() or not text.isascii():
        raise GdevError(errno.EINVAL, f"not a word: {data[:_WORD_MAX]!r}")
    return text.decode().lower()


def parse_choice(what: str, choices: tuple[str, ...]) -> Callable[[bytes], str]:
    """A parser of one word among ``choices``; EINVAL naming them otherwise."""
    def parse(data: bytes) -> str:
        word = parse_word(data)
        if word not in choices:
            raise GdevError(errno.EINVAL, f"unknown {what} {word!r}; one of {', '.join(choices)}")
        return word
    return parse


parse_policy = parse_choice("scheduler", POLICY_NAMES)
parse_queueing = parse_choice("queueing", QUEUEING)


def format_word(value: str) -> bytes:
    """The word and a newline."""
    return value.encode() + b"\n"


def format_choices(value: str) -> bytes:
    """Every policy on one line, the current one in brackets: ``[band] credit fifo null``."""
    return " ".join(f"[{n}]" if n == value else n for n in POLICY_NAMES).encode() + b"\n"


def format_text(value: str) -> bytes:
    """Multi-line text as is."""
    return value.encode()


def get_policy(system: Any) -> str:
    """The vGPU policy's name."""
    return str(system.scheduler.policy.name)


def set_policy(system: Any, name: str) -> None:
    """Switch the vGPU policy (EINVAL if unknown)."""
    system.scheduler.set_policy(name)


def get_queueing(system: Any) -> str:
    """``mrq`` or ``sdq``."""
    return str(system.scheduler.queueing)


def set_queueing(system: Any, mode: str) -> None:
    """Switch the queueing mode (EINVAL if unknown)."""
    system.scheduler.set_queueing(mode)


def get_band_wait(system: Any) -> int:
    """BAND's time buffering, microseconds."""
    return round(system.scheduler.band_wait * 1e6)


def set_band_wait(system: Any, us: int) -> None:
    """Set BAND's time buffering (microseconds, bounds checked by the table)."""
    system.scheduler.band_wait = us / 1e6


def get_window(system: Any) -> int:
    """The utilisation window, microseconds."""
    return round(system.scheduler.window * 1e6)


def set_window(system: Any, us: int) -> None:
    """Set the utilisation window (microseconds)."""
    system.scheduler.window = us / 1e6


def get_instances(system: Any) -> int:
    """Operations in flight per context per resource."""
    return int(system.scheduler.instances_max)


def set_instances(system: Any, n: int) -> None:
    """Set the operations in flight per context per resource."""
    system.scheduler.instances_max = n


def get_slice(system: Any) -> int:
    """The preemption slice of running kernels, microseconds (0: non-preemptive)."""
    return round(system.scheduler.preempter.slice_s * 1e6)


def set_slice(system: Any, us: int) -> None:
    """Set the preemption slice (microseconds; 0 restores the paper's non-preemption)."""
    system.scheduler.preempter.slice_s = us / 1e6


def get_time_max(system: Any) -> int:
    """The run-time limit of tenants' kernels, milliseconds (0: none)."""
    return round(system.scheduler.preempter.kernel_time_max * 1e3)


def set_time_max(system: Any, ms: int) -> None:
    """Set the run-time limit of tenants' kernels (milliseconds; 0: none)."""
    system.scheduler.preempter.kernel_time_max = ms / 1e3


def device_bytes(handle: Any) -> int:
    """Device memory a context allocated (shared segments it attached not counted)."""
    return sum(o.size for o in handle.space.objects if o.kind == GDEV_MEM_DEVICE and not o.ref)


def contexts(system: Any) -> str:
    """The context table: one header line and one line per open context."""
    sched, now = system.scheduler, trio.current_time()
    lines = ["cid pid vgpu prio memory compute_ms copy_ms launches copies bytes wait_ms "
             "resident swapped swap_out_bytes swap_out swap_in_bytes swap_in uid name"]
    owned = residency(system)
    for h, se in sched.entities():
        u, c = se.usage, h.counters.swap
        res, swp = owned.get(h.cid, (0, 0))
        lines.append(f"{h.cid} {h.cred.pid} {h.vgpu.minor} {se.prio.effective(now)} "
                     f"{device_bytes(h)} {u.compute_s * 1e3:.3f} {u.copy_s * 1e3:.3f} "
                     f"{u.launches} {u.copies} {u.bytes_copied} {u.wait_s * 1e3:.3f} "
                     f"{res} {swp} {c.swap_out_bytes} {c.swap_out_count} {c.swap_in_bytes} "
                     f"{c.swap_in_count} {h.cred.uid} {_word(h.cred.name)}")
    return "\n".join(lines) + "\n"


def _word(name: str) -> str:
    """A process name as one printable token (blanks and control characters become ``?``;
    ``-`` when unknown), so every row splits into the header's columns."""
    return "".join(c if c.isprintable() and not c.isspace() else "?" for c in name) or "-"


def residency(system: Any) -> dict[int, tuple[int, int]]:
    """Per context id: (resident, swapped) bytes of the device blocks it owns."""
    owned: dict[int, tuple[int, int]] = {}
    for gpu in system.gpus:
        for b in gpu.blocks:
            if b.owner is not None:
                res, swp = owned.get(b.owner.cid, (0, 0))
                owned[b.owner.cid] = (res + b.resident_bytes, swp + b.size - b.resident_bytes)
    return owned


def priorities(system: Any) -> str:
    """``cid prio override`` per open context (override ``-`` when none)."""
    sched, now = system.scheduler, trio.current_time()
    lines = ["cid prio override"]
    for h, se in sched.entities():
        o = se.prio.override
        lines.append(f"{h.cid} {se.prio.effective(now)} {'-' if o is None else o}")
    return "\n".join(lines) + "\n"


def parse_priority(data: bytes) -> tuple[int, int | None]:
    """``b"CID PRIO"`` or ``b"CID -"``; EINVAL for anything else (range checked on set)."""
    words = data.split()
    if len(words) != 2 or not words[0].isdigit() or len(words[0]) > 12 or \
            not (words[1] == b"-" or (words[1].isdigit() and len(words[1]) <= 3)):
        raise GdevError(errno.EINVAL, f"priority: want 'CID PRIO' or 'CID -': {data[:64]!r}")
    return int(words[0]), None if words[1] == b"-" else int(words[1])


def set_priority(system: Any, value: tuple[int, int | None]) -> None:
    """Override (or clear) context ``cid``'s priority; writes are root's (privileged)."""
    cid, prio = value
    handle = system.handles.get(cid)
    if handle is None:
        raise GdevError(errno.ESRCH, f"no context {cid}")
    system.scheduler.entity(handle).prio.set_override(prio, privileged=True,
                                                   now=trio.current_time())


def _vres(vgpu: Any, kind: str) -> Any:
    return vgpu.scheduler.vres(vgpu, kind)


def usage_us(vgpu: Any, kind: str, field: str) -> int:
    """A vGPU's busy time of ``kind``, microseconds (SDQ charges copies to compute)."""
    return round(getattr(_vres(vgpu, kind).usage, field) * 1e6)


def wait_us(vgpu: Any) -> int:
    """Time the vGPU's contexts spent queued for either resource, microseconds."""
    return round(sum(_vres(vgpu, k).usage.wait_s for k in (COMPUTE, MEMORY)) * 1e6)


def bytes_copied(vgpu: Any) -> int:
    """Bytes copied by the vGPU's contexts, every path."""
    return int(_vres(vgpu, MEMORY).usage.bytes_copied)


def usage_count(vgpu: Any, field: str) -> int:
    """A vGPU's launches or copies (either resource's record: SDQ counts both in compute)."""
    return sum(getattr(_vres(vgpu, k).usage, field) for k in (COMPUTE, MEMORY))
