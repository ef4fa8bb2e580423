"""The runtime's figures as typed, immutable records (as trio's ``MemoryChannelStatistics``).

Readers outside the runtime (``/proc/gdev``, gmonitor, the metrics file) take a snapshot
here instead of walking the runtime's objects: one function per record, each reading the
runtime through the attributes named in it and nothing else, so a change of the runtime's
layout is mended in this module alone.  A snapshot is taken on the trio loop (or with the
loop stopped), so its fields are consistent with each other.

Units are those of the /proc files: bytes, microseconds, milliseconds and percent as ints;
times of a context in seconds as floats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import trio

from gdevd.gpu.ptx import jit

from .constants import GDEV_MEM_DEVICE
from .handle import Handle
from .limits import limits_text
from .sched import COMPUTE, MEMORY, POLICY_NAMES, QUEUEING
from .sched.state import Entity
from .system import GdevSystem, VirtualGpu

System = GdevSystem          # what a global entry receives
Vgpu = VirtualGpu            # what a per-vGPU entry receives
POLICIES: tuple[str, ...] = tuple(POLICY_NAMES)
QUEUEINGS: tuple[str, ...] = tuple(QUEUEING)
ENGINES: tuple[str, ...] = tuple(jit.ENGINES)


@dataclass(frozen=True)
class VgpuShares:
    """A virtual GPU's shares, tunables and memory (cheap: no scheduler arithmetic)."""

    minor: int
    gpu: int
    compute_bandwidth: int
    memory_bandwidth: int
    memory_share: int
    memory_overcommit: int        # percent by which its GPU's memory shares exceed 100
    period_us: int
    watchdog_ms: int
    guest: int
    memory_size: int
    memory_used: int
    contexts: int


@dataclass(frozen=True)
class VgpuSwap:
    """A virtual GPU's swap figures."""

    host_swap_held: int
    swap_out_bytes: int
    swap_out_count: int
    swap_in_bytes: int
    swap_in_count: int
    swapped_bytes: int


@dataclass(frozen=True)
class VgpuUsage:
    """A virtual GPU's scheduler usage: utilisation over the window, busy times, counts."""

    compute_bandwidth_used: int   # percent over the utilisation window
    memory_bandwidth_used: int
    compute_time_us: int
    memory_time_us: int
    wait_time_us: int
    launches: int
    copies: int
    bytes_copied: int
    preemptions: int
    timeouts: int


@dataclass(frozen=True)
class VgpuStats:
    """One virtual GPU whole."""

    shares: VgpuShares
    swap: VgpuSwap
    usage: VgpuUsage


@dataclass(frozen=True)
class ContextStats:
    """One open context (what ``/proc/gdev/contexts`` lists)."""

    cid: int
    pid: int
    uid: int
    name: str
    vgpu: int
    prio: int
    prio_override: int | None
    guest: bool
    guest_override: bool | None
    memory: int                  # device bytes it allocated (attached segments not counted)
    resident: int
    swapped: int
    compute_s: float
    copy_s: float
    wait_s: float
    launches: int
    copies: int
    bytes_copied: int
    swap_out_bytes: int
    swap_out_count: int
    swap_in_bytes: int
    swap_in_count: int
    faulted: bool
    chunk_size: int              # its memcpy tunables (gtune, else the defaults at open)
    pipeline_count: int
    copy_paths: tuple[tuple[str, int], ...]   # (path, copies) per path taken


@dataclass(frozen=True)
class SchedulerStats:
    """The scheduler's tunables as /proc shows them."""

    policy: str
    queueing: str
    band_wait_us: int
    util_window_us: int
    instances_max: int
    slice_us: int
    kernel_time_max_ms: int
    guest_freq: int
    guest_piece_us: int
    guest_mem_threshold: int


@dataclass(frozen=True)
class SystemStats:
    """The machine, its swap areas and the system-wide tunables."""

    device_count: int
    virtual_device_count: int
    swap_percent: int
    swap_size: int
    swap_used: int
    host_swap_size: int
    host_swap_used: int
    ioctl_poll_us: int
    chunk_size: int              # memcpy defaults of contexts opened from now on
    pipeline_count: int
    iowrite_limit: int           # HtoD copies up to this size take the direct path
    ioread_limit: int            # DtoH copies up to this size take the direct path
    ptx_engine: str
    ptx_compile_nice: int        # niceness of the background compiler's processes
    compute_nice: int            # how much nicer than the daemon the compute engines run


@dataclass(frozen=True)
class GuestMode:
    """The guest class on one GPU: its mode, transitions, and the last ones (seconds ago)."""

    gpu: int
    mode: str
    transitions: int
    recent: tuple[tuple[float, str], ...]


@dataclass(frozen=True)
class PtxModuleStats:
    """One decoded PTX module and its engine status."""

    gpu: int
    name: str
    status: str
    compile_s: float
    kernels_compiled: int
    kernels: int


def _usage(vgpu: VirtualGpu, field: str, kinds: tuple[str, ...] = (COMPUTE, MEMORY)) -> float:
    """A usage field summed over the vGPU's resources (SDQ charges copies to compute)."""
    return float(sum(getattr(vgpu.scheduler.vres(vgpu, k).usage, field) for k in kinds))


def _overcommit(vgpu: VirtualGpu) -> int:
    system = vgpu.system
    shares = [w.memory_share for w in system.virtual if w.phys is vgpu.phys] \
        if system is not None else [vgpu.memory_share]
    return max(0, sum(shares) - 100)


def vgpu_shares(vgpu: VirtualGpu) -> VgpuShares:
    """``vgpu``'s shares, tunables and memory."""
    return VgpuShares(vgpu.minor, vgpu.phys.index, vgpu.compute_bandwidth,
                      vgpu.memory_bandwidth, vgpu.memory_share, _overcommit(vgpu),
                      vgpu.period_us, vgpu.watchdog_ms, vgpu.guest, vgpu.memory_size,
                      vgpu.memory_used, len(vgpu.handles))


def vgpu_swap(vgpu: VirtualGpu) -> VgpuSwap:
    """``vgpu``'s swap figures."""
    s = vgpu.swap
    area = vgpu.gpu.swap
    return VgpuSwap(area.host_by_vgpu.get(vgpu.minor, 0),
                    s.swap_out_bytes, s.swap_out_count, s.swap_in_bytes, s.swap_in_count,
                    s.swapped_bytes)


def vgpu_usage(vgpu: VirtualGpu) -> VgpuUsage:
    """``vgpu``'s scheduler usage."""
    return VgpuUsage(
        vgpu.compute_bandwidth_used, vgpu.memory_bandwidth_used,
        round(_usage(vgpu, "compute_s", (COMPUTE,)) * 1e6),
        round(_usage(vgpu, "copy_s", (MEMORY,)) * 1e6),
        round(_usage(vgpu, "wait_s") * 1e6), int(_usage(vgpu, "launches")),
        int(_usage(vgpu, "copies")), int(_usage(vgpu, "bytes_copied", (MEMORY,))),
        int(_usage(vgpu, "preemptions")), int(_usage(vgpu, "timeouts")))


def vgpu_stats(vgpu: VirtualGpu) -> VgpuStats:
    """A snapshot of ``vgpu`` whole."""
    return VgpuStats(vgpu_shares(vgpu), vgpu_swap(vgpu), vgpu_usage(vgpu))


# Each per-vGPU figure's record: what a reader of one figure snapshots.
VGPU_FIELDS: dict[str, Callable[[VirtualGpu], object]] = {
    f.name: snap for cls, snap in ((VgpuShares, vgpu_shares), (VgpuSwap, vgpu_swap),
                                   (VgpuUsage, vgpu_usage))
    for f in fields(cls)}


def _residency(system: GdevSystem) -> dict[int, tuple[int, int]]:
    """Per context id: (resident, swapped) bytes of the device blocks it owns."""
    owned: dict[int, tuple[int, int]] = {}
    for gpu in system.gpus:
        for b in gpu.blocks:
            if b.owner is not None:
                res, swp = owned.get(b.owner.cid, (0, 0))
                owned[b.owner.cid] = (res + b.resident_bytes, swp + b.size - b.resident_bytes)
    return owned


def _context(h: Handle, se: Entity, owned: tuple[int, int], guest: bool,
             now: float) -> ContextStats:
    u, c = se.usage, h.counters.swap
    memory = sum(o.size for o in h.space.objects if o.kind == GDEV_MEM_DEVICE and not o.ref)
    paths = tuple(sorted((p, n) for p, n in h.counters.copies.items() if not p.endswith("_bytes")))
    return ContextStats(
        h.cid, h.cred.pid, h.cred.uid, h.cred.name, h.vgpu.minor, se.prio.effective(now),
        se.prio.override, guest, se.guest_override, memory, owned[0], owned[1], u.compute_s,
        u.copy_s, u.wait_s, u.launches, u.copies, u.bytes_copied, c.swap_out_bytes,
        c.swap_out_count, c.swap_in_bytes, c.swap_in_count, h.fault is not None,
        h.bounce.chunk_size, h.bounce.pipeline_count, paths)


def context_stats(system: GdevSystem) -> list[ContextStats]:
    """A snapshot of every open context, by context id."""
    now, owned, guests = trio.current_time(), _residency(system), system.scheduler.guests
    return [_context(h, se, owned.get(h.cid, (0, 0)), guests.is_guest(se), now)
            for h, se in system.scheduler.entities()]


def scheduler_stats(system: GdevSystem) -> SchedulerStats:
    """The scheduler's tunables."""
    s, g = system.scheduler, system.scheduler.guests
    return SchedulerStats(
        str(s.policy.name), str(s.queueing), round(s.band_wait * 1e6), round(s.window * 1e6),
        int(s.instances_max), round(s.preempter.slice_s * 1e6),
        round(s.preempter.kernel_time_max * 1e3), round(g.freq), round(g.piece_s * 1e6),
        round(g.mem_threshold))


def system_stats(system: GdevSystem) -> SystemStats:
    """The machine's counts, its swap areas (all GPUs together) and the global tunables."""
    areas, c = [g.swap for g in system.gpus], system.config
    return SystemStats(
        len(system.physical), len(system.virtual),
        areas[0].percent if areas else c.swap_percent,
        sum(a.device_size for a in areas), sum(a.device_used for a in areas),
        sum(a.host_limit for a in areas), sum(a.host_used for a in areas), c.ioctl_poll_us,
        c.chunk_size, c.pipeline_count, c.iowrite_limit, c.ioread_limit, jit.engine(),
        jit.compile_nice(), system.physical[0].compute.nice if system.physical else 0)


def guest_modes(system: GdevSystem) -> list[GuestMode]:
    """The guest class's mode on every GPU."""
    g, now, out = system.scheduler.guests, trio.current_time(), []
    for gpu in system.physical:
        st = g.state_of(gpu.index)
        if st is None:
            out.append(GuestMode(gpu.index, "periodic", 0, ()))
        else:
            recent = tuple((now - t, mode) for t, mode in st.log)
            out.append(GuestMode(gpu.index, st.mode, st.transitions, recent))
    return out


def ptx_modules(system: GdevSystem) -> list[PtxModuleStats]:
    """Every decoded PTX module of every GPU."""
    out = []
    for k, phys in enumerate(system.physical):
        for mod in phys.modules.modules():
            state = mod.jit
            done = len(state.compiled.kernels) if state.compiled is not None else 0
            out.append(PtxModuleStats(k, mod.name, state.status, state.seconds, done,
                                      len(mod.kernels)))
    return out


def ptx_interpreted(system: GdevSystem) -> list[tuple[int, str, str, str]]:
    """(gpu, module, kernel, reason) of every kernel the compiling engine left on the
    interpreter in a compiled module (a texture fetch, an unsupported instruction)."""
    out = []
    for k, phys in enumerate(system.physical):
        for mod in phys.modules.modules():
            c = mod.jit.compiled
            if c is not None:
                out += [(k, mod.name, name, why) for name, why in sorted(c.rejected.items())]
    return out


def vgpus(system: GdevSystem) -> list[VirtualGpu]:
    """The vGPUs in minor order (the targets of the per-vGPU entries)."""
    return list(system.virtual)


def shm_listing(system: GdevSystem) -> str:
    """The shared segments, as ``/proc/sysvipc/shm`` lists them."""
    return str(system.shm.listing())


def limits(system: GdevSystem) -> str:
    """The per-tenant limits and each user's use of them."""
    return limits_text(system)
