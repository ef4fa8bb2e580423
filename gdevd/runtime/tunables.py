"""The runtime's validated setters: every tunable a /proc/gdev write or the config file sets.

Each setter checks its value against :data:`.defaults.BOUNDS` (the one table of bounds)
and the runtime's own rules, raising ``GdevError(EINVAL)`` with the reason before anything
changes, so a caller that skipped its own checks still cannot break an invariant.  Setters
run on the trio loop and do not await (a write is applied whole or not at all).
"""

from __future__ import annotations

import errno
import logging

import trio

from gdevd.errors import GdevError
from gdevd.gpu.ptx import jit

from . import defaults as D
from .system import GdevSystem, VirtualGpu

log = logging.getLogger("gdevd.procfs")
SHARES = ("compute_bandwidth", "memory_bandwidth")

# /proc name -> (attribute path from the scheduler, /proc units per attribute unit): the
# scheduler's numeric knobs (seconds in the scheduler, microseconds or ms in /proc).
SCHED_KNOBS: dict[str, tuple[str, float]] = {
    "band_wait_us": ("band_wait", 1e6),
    "util_window_us": ("window", 1e6),
    "instances_max": ("instances_max", 1),
    "slice_us": ("preempter.slice_s", 1e6),
    "kernel_time_max_ms": ("preempter.kernel_time_max", 1e3),
    "guest_freq": ("guests.freq", 1),
    "guest_piece_us": ("guests.piece_s", 1e6),
    "guest_mem_threshold": ("guests.mem_threshold", 1),
}
COPY_TUNABLES = ("chunk_size", "pipeline_count", "iowrite_limit", "ioread_limit")


def check(name: str, value: int) -> int:
    """``value`` if it lies within ``BOUNDS[name]``; else ``GdevError(EINVAL)`` saying so."""
    lo, hi = D.BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise GdevError(errno.EINVAL, f"{name}: {value!r} outside [{lo}, {hi}]")
    return value


# --- per vGPU -------------------------------------------------------------------------------

def _siblings(vgpu: VirtualGpu) -> list[VirtualGpu]:
    system = vgpu.system
    if system is None:
        return []
    return [w for w in system.virtual if w.phys is vgpu.phys and w is not vgpu]


def set_share(vgpu: VirtualGpu, attr: str, value: int) -> None:
    """Set a bandwidth share.  Invariant: the shares of one physical GPU's vGPUs sum to at
    most 100 % (they are guarantees; an overcommitted guarantee guarantees nothing)."""
    check(attr, value)
    if attr not in SHARES:
        raise GdevError(errno.EINVAL, f"{attr}: not a bandwidth share")
    others = sum(getattr(w, attr) for w in _siblings(vgpu))
    if others + value > 100:
        raise GdevError(errno.EINVAL, f"{attr}: {value}% would bring gpu{vgpu.phys.index}'s "
                        f"vGPUs to {others + value}% (> 100%); at most {100 - others}% is "
                        "free: lower another vGPU's share first")
    setattr(vgpu, attr, value)


def set_memory_share(vgpu: VirtualGpu, value: int) -> None:
    """Set a memory share (overcommit allowed, logged: swap backs it); what no longer fits
    is swapped out in the background."""
    check("memory_share", value)
    vgpu.memory_share = value  # memory_size follows (derived from the share)
    over = vgpu.memory_share + sum(w.memory_share for w in _siblings(vgpu)) - 100
    if over > 0:
        log.warning("memory shares of gpu%d overcommitted by %d%%: swap backs the excess",
                    vgpu.phys.index, over)
    if vgpu.system is not None and vgpu.memory_used > vgpu.memory_size:
        vgpu.system.shrink(vgpu)


def set_period(vgpu: VirtualGpu, us: int) -> None:
    """Set the vGPU scheduler's budget period (microseconds)."""
    vgpu.period_us = check("period", us)


def set_watchdog(vgpu: VirtualGpu, ms: int) -> None:
    """Set the run-time limit of this vGPU's kernels (milliseconds; 0: off)."""
    vgpu.watchdog_ms = check("watchdog_ms", ms)


def set_guest(vgpu: VirtualGpu, on: int) -> None:
    """1: every context of this vGPU is a guest; 0: its contexts' own class."""
    vgpu.guest = check("guest", on)


# --- system wide ----------------------------------------------------------------------------

def set_swap_percent(system: GdevSystem, percent: int) -> None:
    """Resize every GPU's temporal swap area; EBUSY while one holds pages."""
    check("swap_percent", percent)
    if any(g.swap.device_used for g in system.gpus):
        raise GdevError(errno.EBUSY, "the device swap area holds pages; retry when drained")
    for g in system.gpus:
        g.swap.resize(percent)


def set_ioctl_poll(system: GdevSystem, us: int) -> None:
    """Set the ioctl connections' busy-poll window (read live by gdevd/ioctl/busypoll.py)."""
    system.config.ioctl_poll_us = check("ioctl_poll_us", us)


def set_copy_tunable(system: GdevSystem, name: str, value: int) -> None:
    """Set a memcpy tunable: ``chunk_size`` and ``pipeline_count`` are the defaults of
    contexts opened from now on (gtune overrides them per context, as in Gdev); the
    direct-I/O limits apply to every context's next copy."""
    if name not in COPY_TUNABLES:
        raise GdevError(errno.EINVAL, f"{name}: not a copy tunable")
    check(name, value)
    if name == "chunk_size" and value % D.PAGE_SIZE:
        raise GdevError(errno.EINVAL, f"chunk_size: {value} is not a multiple of "
                                      f"{D.PAGE_SIZE}")
    setattr(system.config, name, value)


def set_sched_knob(system: GdevSystem, name: str, value: int) -> None:
    """Set one of :data:`SCHED_KNOBS` (value in the /proc unit)."""
    path, per_unit = SCHED_KNOBS[name]
    check(name, value)
    *parents, attr = path.split(".")
    target: object = system.scheduler
    for p in parents:
        target = getattr(target, p)
    setattr(target, attr, value if name == "instances_max" else value / per_unit)


def set_policy(system: GdevSystem, name: str) -> None:
    """Switch the vGPU policy (EINVAL naming the policies if unknown)."""
    system.scheduler.set_policy(name)


def set_queueing(system: GdevSystem, mode: str) -> None:
    """Switch the queueing mode (EINVAL if unknown)."""
    system.scheduler.set_queueing(mode)


def set_engine(name: str) -> None:
    """Select the PTX engine policy for later launches (EINVAL if unknown)."""
    jit.set_engine(name)


def set_compile_nice(_system: GdevSystem, value: int) -> None:
    """Run the PTX compiler started from now on at niceness ``value`` (EINVAL if out of
    bounds)."""
    jit.set_compile_nice(check("ptx_compile_nice", value))


def set_compute_nice(system: GdevSystem, value: int) -> None:
    """Run every GPU's compute engine ``value`` nicer than the daemon (EINVAL if out of
    bounds, EPERM if the system refuses a less nice value)."""
    value = check("compute_nice", value)
    for gpu in system.physical:
        gpu.compute.set_nice(value)


def set_priority(system: GdevSystem, cid: int, prio: int | None) -> None:
    """Override (or with None clear) context ``cid``'s priority, as root."""
    handle = system.handles.get(cid)
    if handle is None:
        raise GdevError(errno.ESRCH, f"no context {cid}")
    system.scheduler.entity(handle).prio.set_override(prio, privileged=True,
                                                   now=trio.current_time())


def set_guest_override(system: GdevSystem, cid: int, guest: bool | None) -> None:
    """Make context ``cid`` a guest, a host, or (None) what its task and vGPU say."""
    handle = system.handles.get(cid)
    if handle is None:
        raise GdevError(errno.ESRCH, f"no context {cid}")
    system.scheduler.entity(handle).guest_override = guest
