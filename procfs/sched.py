"""The scheduler's and the contexts' /proc/gdev entries: getters over the runtime's records
(:mod:`gdevd.runtime.stats`), parsers of the multi-word writes, and the tables' text.

Global entries receive the system, per-vGPU entries the vGPU; both only hand them to the
runtime's snapshot functions and validated setters.
"""

from __future__ import annotations

import errno
from collections.abc import Callable

from gdevd.errors import GdevError
from gdevd.runtime import stats as R
from gdevd.runtime import tunables as T


def knob(name: str) -> tuple[Callable[[R.System], int], Callable[[R.System, int], None]]:
    """(getter, setter) of the scheduler knob ``name`` (see ``tunables.SCHED_KNOBS``)."""
    def get(system: R.System) -> int:
        value: int = getattr(R.scheduler_stats(system), name)
        return value

    def put(system: R.System, value: int) -> None:
        T.set_sched_knob(system, name, value)
    return get, put


def get_policy(system: R.System) -> str:
    """The vGPU policy's name."""
    return R.scheduler_stats(system).policy


def get_queueing(system: R.System) -> str:
    """``mrq`` or ``sdq``."""
    return R.scheduler_stats(system).queueing


def _word(name: str) -> str:
    """A process name as one printable token (blanks and control characters become ``?``;
    ``-`` when unknown), so every row splits into the header's columns."""
    return "".join(c if c.isprintable() and not c.isspace() else "?" for c in name) or "-"


CONTEXTS_HEADER = ("cid pid vgpu prio memory compute_ms copy_ms launches copies bytes wait_ms "
                   "resident swapped swap_out_bytes swap_out swap_in_bytes swap_in uid name")


def contexts(system: R.System) -> str:
    """The context table: one header line and one line per open context."""
    lines = [CONTEXTS_HEADER]
    for c in R.context_stats(system):
        lines.append(f"{c.cid} {c.pid} {c.vgpu} {c.prio} {c.memory} {c.compute_s * 1e3:.3f} "
                     f"{c.copy_s * 1e3:.3f} {c.launches} {c.copies} {c.bytes_copied} "
                     f"{c.wait_s * 1e3:.3f} {c.resident} {c.swapped} {c.swap_out_bytes} "
                     f"{c.swap_out_count} {c.swap_in_bytes} {c.swap_in_count} {c.uid} "
                     f"{_word(c.name)}")
    return "\n".join(lines) + "\n"


COPY_PATHS = ("direct", "pinned", "chunked", "pipelined", "device", "swap")


def copy_paths(system: R.System) -> str:
    """Per open context: its memcpy tunables and the copies it made by each path."""
    lines = ["cid chunk_size pipeline_count " + " ".join(COPY_PATHS)]
    for c in R.context_stats(system):
        taken = dict(c.copy_paths)
        lines.append(f"{c.cid} {c.chunk_size} {c.pipeline_count} "
                     + " ".join(str(taken.get(p, 0)) for p in COPY_PATHS))
    return "\n".join(lines) + "\n"


def _override_table(system: R.System, what: str,
                    row: Callable[[R.ContextStats], tuple[int, int | None]]) -> str:
    """``cid WHAT override`` per open context (override ``-`` when none)."""
    lines = [f"cid {what} override"]
    for c in R.context_stats(system):
        value, o = row(c)
        lines.append(f"{c.cid} {value} {'-' if o is None else o}")
    return "\n".join(lines) + "\n"


def priorities(system: R.System) -> str:
    """``cid prio override`` per open context (override ``-`` when none)."""
    return _override_table(system, "prio", lambda c: (c.prio, c.prio_override))


def _cid_and(data: bytes, what: str, want: str, ok: Callable[[bytes], bool]) -> tuple[int, bytes]:
    """``b"CID WORD"`` split, with WORD accepted by ``ok``; EINVAL saying ``want`` otherwise."""
    words = data.split()
    if len(words) != 2 or not words[0].isdigit() or len(words[0]) > 12 or not ok(words[1]):
        raise GdevError(errno.EINVAL, f"{what}: want {want}: {data[:64]!r}")
    return int(words[0]), words[1]


def parse_priority(data: bytes) -> tuple[int, int | None]:
    """``b"CID PRIO"`` or ``b"CID -"``; EINVAL for anything else (range checked on set)."""
    cid, word = _cid_and(data, "priority", "'CID PRIO' or 'CID -'",
                         lambda w: w == b"-" or (w.isdigit() and len(w) <= 3))
    return cid, None if word == b"-" else int(word)


def set_priority(system: R.System, value: tuple[int, int | None]) -> None:
    """Override (or clear) a context's priority; writes are root's (privileged)."""
    T.set_priority(system, *value)


def guests(system: R.System) -> str:
    """``cid guest override`` per open context (override ``-`` when none)."""
    return _override_table(system, "guest", lambda c: (
        int(c.guest), None if c.guest_override is None else int(c.guest_override)))


def parse_guest(data: bytes) -> tuple[int, bool | None]:
    """``b"CID 1"``, ``b"CID 0"`` or ``b"CID -"``; EINVAL for anything else."""
    cid, word = _cid_and(data, "guest", "'CID 1', 'CID 0' or 'CID -'",
                         lambda w: w in (b"0", b"1", b"-"))
    return cid, None if word == b"-" else word == b"1"


def set_guest(system: R.System, value: tuple[int, bool | None]) -> None:
    """Make a context a guest, a host, or (None) what its task and vGPU say."""
    T.set_guest_override(system, *value)


def guest_modes(system: R.System) -> str:
    """Per GPU: ``gpuN MODE transitions T`` and its last transitions (seconds ago)."""
    lines = []
    for m in R.guest_modes(system):
        lines.append(f"gpu{m.gpu} {m.mode} transitions {m.transitions}")
        lines += [f"  -{ago:.3f}s {mode}" for ago, mode in m.recent]
    return "\n".join(lines) + "\n"


def ptx_interpreted(system: R.System) -> str:
    """One line per kernel of a compiled module that stays on the interpreter, and why."""
    lines = ["gpu module kernel reason\n"]
    lines += [f"{gpu} {mod} {kernel} {why}\n"
              for gpu, mod, kernel, why in R.ptx_interpreted(system)]
    return "".join(lines)


def ptx_modules(system: R.System) -> str:
    """One line per decoded module of every GPU: name, engine status, compile seconds,
    kernels compiled out of all."""
    lines = ["gpu module status compile_s kernels_compiled kernels\n"]
    lines += [f"{m.gpu} {m.name} {m.status} {m.compile_s:.3f} {m.kernels_compiled} "
              f"{m.kernels}\n" for m in R.ptx_modules(system)]
    return "".join(lines)
