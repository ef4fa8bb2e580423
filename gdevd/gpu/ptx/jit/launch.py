"""A launch on the compiled engine: the interpreter's contract, run by native code.

The grid's blocks are dealt to a few *slots* (at least 8 when the grid has that many
blocks) in turn, as a GPU dispatches blocks to its multiprocessors: slot ``s`` runs blocks
``s, s + R, s + 2R...``, so the blocks in flight are consecutive and a block spinning on a
flag that a nearby block sets does not starve it (the interpreter's waves give the same
guarantee).  Each slot has its own execution state (a ``struct jctx`` and numpy buffers
for registers, program counters, shared, local and call-parameter memory), so slots run in
parallel on the engine thread pool while the GIL is released.  ``run(budget)`` shares the
budget of instruction steps among the unfinished slots (each gets ``budget * threads /
slots``), so a slice lasts about as long as ``budget`` steps of one thread whatever the
number of slots and threads; each slot stops after a basic block, and resumption is exact
because all state lives in those buffers.
"""

from __future__ import annotations

import errno
import os
import threading
import time

import numpy as np

from gdevd.errors import GdevError, KernelFault, MmuFault
from gdevd.gpu._core import ffi as core_ffi

from ...heap import BAD_FREE
from ...texsample import GEOMETRIES
from ...texture import ADDRESS_MODES, SHAPES
from .. import assertion, ops_surf
from ..coop import QUANTUM
from ..executor import Launch
from ..program import ASSERT_SIZES
from . import runtime
from .hostcall import HostCalls
from .lanes import SLOTS

F_TEX = 9       # a handle not in the launch's texture table (tex.h)
JTEX = np.dtype([("handle", "<u8"), ("addr", "<u8"), ("width", "<u8"), ("height", "<u8"),
                 ("pitch", "<u8"), ("depth", "<u8"), ("slice_pitch", "<u8"),
                 ("pitch2d", "<u4"), ("kind", "<u4"), ("esize", "<u4"),
                 ("channels", "<u4"), ("normalized", "<u4"), ("read_norm", "<u4"),
                 ("linear", "<u4"), ("floats", "<u4"), ("shape", "<u4"), ("surface", "<u4"),
                 ("modes", "<u4", (3,)), ("norm", "<f4"),
                 ("border", "<f4", (4,)), ("levels", "<u4"), ("mip_linear", "<u4"),
                 ("lod_bias", "<f4"), ("min_lod", "<f4"), ("max_lod", "<f4"),
                 ("pad2", "<u4")])    # tex.h's struct jtex
_REASONS = {1: "unmapped", 2: "misaligned", 3: "protection", 4: "out-of-bounds shared",
            5: "out-of-bounds local", 6: "out-of-bounds param",
            7: "protection (kernel parameters are read-only)"}
F_TRAP = 8
F_ASSERT = 10     # (9: F_TEX) fault_va = the failing lane
F_TEXKIND = 11    # a geometry the texture lacks: fault_va = geometry * 8 + shape (tex.h)
F_SURF, F_SURFKIND, F_SURFOUT = 13, 14, 15   # surf.h: no such surface, a geometry it lacks
# (fault_va = geometry * 8 + shape), out of range under .trap
F_HOST = 16       # a call into the host failed: the chunk's HostCalls.fault says how
_REASONS[12] = BAD_FREE     # F_HEAP: a free of an address malloc did not return (heapops.py)
MIN_SLOTS = 8
# A compiled step (one instruction of one block, every lane) costs about a nanosecond per
# lane, an interpreted one microseconds of Python per wave: the compute engine's slice cap
# (compute_slice steps, sized for the interpreter) is scaled by LANE_STEPS / block width, so
# a capped quantum is a few ms of lane-instructions whatever the block width
LANE_STEPS = 8192
THREADS = os.cpu_count() or 1
# A grid of at most this many threads runs on one engine thread: its blocks take turns
# block by block as the interpreter's wave runs them, so what they do in the order they
# start (an atomic counter handing out ids, the text they print) comes out the same on both
# engines, run after run; its work is too small to gain from a hand-off to another thread
ONE_THREAD_MAX = 256


def set_threads(n: int) -> None:
    """Size of the engine thread pool used by later launches (1 = the calling thread)."""
    global THREADS
    if n < 1:
        raise GdevError(errno.EINVAL, "engine threads must be >= 1")
    THREADS = n


_NO_TEX = np.zeros(0, JTEX)


def tex_snapshot(table) -> np.ndarray:
    """The texture and surface objects of ``table`` (a TextureTable or None) as tex.h's
    struct jtex array, taken when the launch is prepared (a later gtex_create or
    gtex_destroy is seen by the next launch; the interpreter looks the table up at every
    fetch)."""
    items = list(table.items()) if table is not None else []
    if not items:
        return _NO_TEX
    out = np.zeros(len(items), JTEX)
    for row, (handle, t) in zip(out, items, strict=True):
        kind = {"u": 0, "i": 1}.get(t.dtype.kind, 2 if t.dtype.itemsize == 4 else 3)
        row["handle"], row["addr"], row["width"] = handle, t.addr, t.width
        row["height"], row["pitch"], row["pitch2d"] = t.height, t.pitch, t.pitch2d
        row["kind"], row["esize"], row["channels"] = kind, t.dtype.itemsize, t.channels
        row["normalized"], row["read_norm"] = t.normalized_coords, t.read_normalized
        row["linear"], row["floats"], row["norm"] = t.linear_filter, t.float_result, t.norm
        row["modes"] = [ADDRESS_MODES.index(m) for m in t.modes]
        row["border"] = t.border
        row["depth"], row["slice_pitch"] = t.depth, t.slice_pitch
        row["shape"], row["surface"] = SHAPES.index(t.shape), t.surface
        row["levels"], row["mip_linear"] = t.levels, t.mip_linear
        row["lod_bias"], row["min_lod"], row["max_lod"] = t.lod_bias, t.min_lod, t.max_lod
    return np.ascontiguousarray(out)


def _surface_fault(ctx) -> str:
    """The interpreter's words (ops_surf.py) for a surface fault of surf.h."""
    if ctx.fault_kind == F_SURF:
        return ops_surf.INVALID
    if ctx.fault_kind == F_SURFOUT:
        return ops_surf.OUT_OF_RANGE
    return ops_surf.wrong_geometry(list(ops_surf.GEOMETRY)[ctx.fault_va >> 3],
                                   SHAPES[ctx.fault_va & 7])


class _Chunk:
    """Execution state of one range of blocks (see module docstring): buffers sized by the
    kernel and block shape, reused by later launches of that shape (``bind``)."""

    def __init__(self, launch: JitLaunch) -> None:
        ffi = launch.compiled.ffi
        nt = launch.tpb
        info = launch.info
        self.ctx = ctx = ffi.new("struct jctx *")
        stride = (nt * 8 + 63) // 64 * 64
        self.bufs: dict[str, np.ndarray] = {
            "regs": np.zeros(max(len(info.regs), 1) * stride, np.uint8),
            "pc": np.zeros(nt, np.int32), "act": np.zeros(nt, np.int32),
            "cc": np.zeros(nt, np.uint8), "xa": np.zeros(nt * 8 * SLOTS, np.uint8),
            "shared": np.zeros(max(launch.shared_total, 16), np.uint8),
            "local": np.zeros(nt * launch.lo_stride if info.local_size else 16, np.uint8),
            "pvars": np.zeros(max(nt * launch.pv_stride, 16), np.uint8),
        }
        lin = np.arange(nt)
        bx, by, _ = launch.block
        self.bufs.update(tid_x=(lin % bx).astype(np.int32),
                         tid_y=((lin // bx) % by).astype(np.int32),
                         tid_z=(lin // (bx * by)).astype(np.int32), iota=lin.astype(np.int32))
        for name, arr in self.bufs.items():
            ctype = "int32_t *" if arr.dtype == np.int32 else \
                "uint64_t *" if name == "xa" else "uint8_t *"
            setattr(ctx, name, ffi.cast(ctype, arr.ctypes.data))
        ctx.xb = ctx.shared
        ctx.shared_size = launch.shared_total
        ctx.local_size = info.local_size
        ctx.lo_stride = launch.lo_stride
        ctx.pv_stride = launch.pv_stride
        ctx.reg_stride = stride
        ctx.ntid = list(launch.block)
        ctx.nt = nt
        ctx.rt = ffi.cast("void *", launch.compiled.runtime)
        self.host = None        # its host calls (hostcall.py): kernels that print or
        if info.prints or info.launches:        # call the device runtime only
            self.host = HostCalls(ctx, self.bufs, launch.pv_stride, nt, launch.shared_total,
                                  info.local_size)
            ctx.host_printf, ctx.host_devrt, ctx.host_arg = self.host.pointers(ffi)
        self.coop = False       # ctx holds a cooperative launch's workspace and quantum
        self.done = False

    def bind(self, launch: JitLaunch, first: int, step: int) -> _Chunk:
        """Set the launch's own fields (blocks, parameters, address space) and clear the
        run state; every block start resets the rest (block_init)."""
        ctx, ffi = self.ctx, launch.compiled.ffi
        ctx.params = ffi.cast("uint8_t *", launch.param_buf.ctypes.data)
        ctx.param_size = len(launch.params)
        ctx.data_base = launch.data_base
        ctx.block, ctx.block_end, ctx.block_step = first, launch.total_blocks, step
        ctx.nctaid = list(launch.grid)
        ctx.dyn_shared = launch.shared_dynamic
        ctx.mmu = launch.mmu_ptr
        ctx.tex, ctx.ntex = launch.tex_ptr, len(launch.tex_table)
        ctx.heap = launch.heap_ptr
        ctx.instructions = ctx.thread_instructions = ctx.fault_va = 0
        ctx.started = ctx.upc = ctx.nlive = ctx.nact = ctx.act_ok = 0
        ctx.fault_line = ctx.fault_kind = ctx.divsteps = ctx.deferred = 0
        ctx.pcw = 1     # a reused chunk's pc[] may hold an unfinished block's
        if launch.grid_workspace or self.coop:  # (cffi writes cost: only when they change)
            ctx.grid_ws = launch.grid_workspace
            ctx.quantum = QUANTUM if launch.grid_workspace else 0
            self.coop = bool(launch.grid_workspace)
        if self.host is not None:
            self.host.bind(launch)
        self.done = False
        return self


POOLED = 64     # idle chunks kept per kernel and shape


def _pop(idle: list) -> _Chunk | None:
    try:
        return idle.pop()
    except IndexError:      # another thread took the last one
        return None


class JitLaunch(Launch):
    """One kernel launch on the compiled engine; same contract as :class:`Launch`."""

    engine = "jit"

    def __init__(self, module, info, compiled, fname: str, grid, block, params: bytes, mmu,
                 data_base: int, shared_dynamic: int = 0, watchdog: float | None = None,
                 threads: int | None = None, textures=None, grid_workspace: int = 0,
                 heap=None, first_block: int = 0) -> None:
        """``first_block``: the blocks below it are done already (an interpreted launch
        tiering up runs the rest so: tierup.py)."""
        super().__init__(module, info, grid, block, params, mmu, data_base, shared_dynamic,
                         watchdog, textures, grid_workspace, heap=heap)
        from .cgen import symbols
        self.compiled = compiled
        self.fn = compiled.function(fname)
        self.tpb = self.block[0] * self.block[1] * self.block[2]
        self.lo_stride = (max(info.local_size, 1) + 15) // 16 * 16
        self.pv_stride = symbols(module, info)[2]
        self.param_buf = np.frombuffer(self.params, np.uint8)
        self.host_lock = threading.Lock()   # the chunks' host calls take turns (hostcall.py)
        self.tex_table = tex_snapshot(textures)
        # one pointer for every chunk (NULL without textures: most launches)
        self.tex_ptr = compiled.ffi.cast("void *", self.tex_table.ctypes.data) \
            if len(self.tex_table) else compiled.ffi.NULL
        threads = THREADS if threads is None else threads
        if self.total_blocks * self.tpb <= ONE_THREAD_MAX:
            threads = 1
        self.threads = threads
        self.mmu_ptr = compiled.ffi.cast("void *", int(core_ffi.cast("uintptr_t", mmu._p)))
        # (self.heap, the HeapAllocator, keeps the C heap alive while the launch runs)
        self.heap_ptr = compiled.ffi.NULL if heap is None else \
            compiled.ffi.cast("void *", int(core_ffi.cast("uintptr_t", heap.ptr)))
        slots = min(self.total_blocks - first_block, max(threads, MIN_SLOTS))
        if grid_workspace:      # cooperative: a slot per block, taking turns (coop.py)
            slots = self.total_blocks
        self.key = (fname, self.block, self.shared_total, self.lo_stride, self.pv_stride)
        idle = compiled.pool.setdefault(self.key, [])
        self.chunks = [(_pop(idle) or _Chunk(self)).bind(self, first_block + k, slots)
                       for k in range(slots)]

    @property
    def budget_scale(self) -> int:
        """Compiled steps per step of the compute engine's slice cap (see LANE_STEPS)."""
        return max(1, LANE_STEPS // max(32, self.tpb))

    def _return_chunks(self) -> None:
        """A finished launch hands its chunks to later launches of the same shape."""
        idle = self.compiled.pool.setdefault(self.key, [])
        for ch in self.chunks:
            if ch.host is not None:
                ch.host.release()
        idle.extend(self.chunks[:max(0, POOLED - len(idle))])
        self.chunks = []

    def run(self, budget: int | None = None) -> bool:
        """Execute up to ``budget`` instruction steps per chunk (all if None); True once done.

        Raises KernelFault (EFAULT illegal address, EIO trap, ETIME watchdog); a faulted
        launch is finished.
        """
        if self.done:
            return True
        if budget is not None and budget <= 0:
            return False
        t0 = time.monotonic()
        try:
            while True:
                self._slice(budget if budget is not None else 1 << 24)
                if all(ch.done for ch in self.chunks):
                    self.done = True
                    return True
                if self.watchdog is not None and \
                        self.stats.elapsed + time.monotonic() - t0 > self.watchdog:
                    raise KernelFault(errno.ETIME, f"watchdog: {self.info.name} ran longer "
                                      f"than {self.watchdog} s")
                if budget is not None:
                    return False
        except GdevError:
            self.done = True
            raise
        finally:
            self.stats.elapsed += time.monotonic() - t0
            self._count()
            if self.done:
                if self.order is not None:
                    self.order.flush()
                self._return_chunks()

    def _slice(self, budget: int) -> None:
        live = [ch for ch in self.chunks if not ch.done]
        n = min(self.threads, len(live))
        budget = max(1, budget * n // len(live))
        # one group per engine thread (the calling thread runs the first, team.h): a small
        # launch costs one hand-off per thread, not one per chunk; each thread takes a run of
        # consecutive chunks, so it runs runs of neighbouring blocks (whose memory is often
        # adjacent: one thread, not two, then fetches each pair of cache lines)
        counts = [(k + 1) * len(live) // n - k * len(live) // n for k in range(n)]
        ctxs = self.compiled.ffi.new("struct jctx *[]", [ch.ctx for ch in live])
        runtime.parallel(self.compiled.runtime, self.fn, ctxs, counts, budget)
        if self.order is not None:      # a chunk's blocks below its next one finished
            self.order.release_below(min(ch.ctx.block for ch in self.chunks))
        faulted = [ch for ch in live if ch.ctx.status < 0]
        if faulted:
            # each chunk runs its blocks in increasing order and stops at its first fault,
            # so the lowest faulting block of the slice is the one reported (deterministic
            # whatever the threads' timing; the interpreter run one block per wave agrees)
            raise self._fault(min(faulted, key=lambda ch: ch.ctx.block))
        for ch in live:
            ch.done = ch.ctx.status == 1

    def _fault(self, chunk: _Chunk) -> BaseException:
        ctx = chunk.ctx
        from .cgen import line0
        # the translation records lines from the kernel's first (cgen.relative)
        name, line = self.info.name, ctx.fault_line + line0(self.info)
        if ctx.fault_kind == F_ASSERT:
            return self._assert_fault(chunk, line)
        if ctx.fault_kind == F_HOST:
            exc = chunk.host.fault if chunk.host is not None else None
            if isinstance(exc, MmuFault):       # the interpreter's words (executor.py)
                return KernelFault(errno.EFAULT, f"illegal address 0x{exc.va:x} "
                                   f"({exc.reason}) in {name} at line {line}")
            if isinstance(exc, GdevError):
                return exc
            return KernelFault(errno.EIO, f"engine error in {name}: {exc!r}")
        if ctx.fault_kind == F_TRAP:
            return KernelFault(errno.EIO, f"trap in {name} at line {line}")
        if ctx.fault_kind == F_TEX:
            return KernelFault(errno.EFAULT, f"invalid texture object in {name} at line {line}")
        if ctx.fault_kind == F_TEXKIND:
            geom, shape = list(GEOMETRIES)[ctx.fault_va >> 3], SHAPES[ctx.fault_va & 7]
            what = "1D/2D" if shape == "plain" else shape
            return KernelFault(errno.EFAULT, f"tex.{geom} on a {what} texture object in "
                               f"{name} at line {line}")
        if ctx.fault_kind in (F_SURF, F_SURFKIND, F_SURFOUT):
            return KernelFault(errno.EFAULT, f"{_surface_fault(ctx)} in {name} at line {line}")
        reason = _REASONS.get(ctx.fault_kind, "unmapped")
        return KernelFault(errno.EFAULT, f"illegal address 0x{ctx.fault_va:x} ({reason}) in "
                           f"{name} at line {line}")

    def _assert_fault(self, chunk: _Chunk, line: int) -> KernelFault:
        """The fault of a failed device assert (assertion.py): the failing lane's
        ``__assertfail`` arguments are in its .param variables (memory, never promoted)."""
        lane, ctx, bufs = chunk.ctx.fault_va, chunk.ctx, chunk.bufs
        term = next(b.term for b in self.info.blocks
                    if b.term.assert_args and b.term.line == line)
        from .cgen import symbols
        offs = symbols(self.module, self.info)[1]
        pv = bufs["pvars"][lane * self.pv_stride:]
        values = [int.from_bytes(pv[offs[v]:offs[v] + size].tobytes(), "little")
                  for v, size in zip(term.assert_args, ASSERT_SIZES, strict=True)]
        thread = [int(bufs[t][lane]) for t in ("tid_x", "tid_y", "tid_z")]
        return assertion.failure(self.info.name, line, values, self.mmu.read,
                                 list(ctx.ctaid), thread)

    def _count(self) -> None:
        self.stats.instructions = sum(ch.ctx.instructions for ch in self.chunks)
        self.stats.thread_instructions = sum(ch.ctx.thread_instructions for ch in self.chunks)
