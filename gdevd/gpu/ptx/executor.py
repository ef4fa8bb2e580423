"""The SIMT executor: runs a grid in waves of blocks, vectorized over all threads of a wave.

Theory of operation
-------------------
A *wave* is a run of consecutive blocks whose threads execute together; every register is a
numpy array over the wave's threads.  Each thread has a program counter naming a basic
block.  A step picks the smallest PC among runnable threads and runs that block for exactly
the threads at it (min-PC scheduling: structured code reconverges at the immediate
post-dominator because lagging threads always go first).  While all live threads share one
PC the wave is *uniform* and no PC array is consulted at all; this is the fast path.

A thread that reaches ``bar.sync`` while its block-mates are elsewhere waits (its PC is
offset by ``WAIT``) until no thread is runnable, which happens exactly when every live
thread of the wave has arrived at a barrier; then all waiting threads are released.  Exited
threads hold PC ``EXIT``.  All of this state lives in the :class:`Wave` object, so a launch
can stop after any block (``run(budget)``) and resume later with identical results.
"""

from __future__ import annotations

import errno
import threading
import time
from dataclasses import dataclass

import numpy as np

from gdevd.errors import GdevError, KernelFault, MmuFault
from gdevd.gpu.texture import TextureFault

from . import assertion, tierup
from .callstack import CallStack
from .coop import coresident
from .memory import MemSys
from .printorder import BlockOrder
from .program import ASSERT_SIZES, BAR, BRA, CALL, EXIT, FALL, RET, TRAP, warp_collective
from .state import Env, Geometry

_U8 = np.dtype(np.uint8)

WAIT = 1 << 29
PC_EXIT = 1 << 30
WAVE_THREADS = 1 << 17
WAVE_BYTES = 256 << 20
POOL_MAX_THREADS = 1 << 14
FAIRNESS_PERIOD = 64
DEFER_MAX = 4096     # picks a warp collective waits for its warp mates (_runnable)
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = ((1 << 31) - 1, 65535, 65535)


@dataclass
class LaunchStats:
    """Counters of a launch: warp-agnostic dynamic instructions (one per block step and
    instruction), thread-instructions (the same weighted by active threads), run seconds."""

    instructions: int = 0
    thread_instructions: int = 0
    elapsed: float = 0.0


class Wave:
    """Execution state of one wave (see module docstring)."""

    def __init__(self, launch: Launch, first_block: int, nblocks: int) -> None:
        info = launch.info
        self.launch = launch
        geom = Geometry(launch.grid, launch.block, first_block, nblocks)
        mem = MemSys(launch.mmu, geom.n, geom.tpb, launch.shared_total, info.local_size)
        mem.textures = launch.textures
        self.env = Env(info, geom, mem, launch.params, launch.symbols, launch.shared_dynamic,
                       launch.data_base)
        self.env.printf, self.env.heap = launch.order, launch.heap
        self.env.grid_ws = launch.grid_workspace
        self.env.devrt = launch.devrt     # the grid's device-runtime state (devrt.py)
        self.env.devrt_errors = None      # its threads' last errors (ops_devrt.py)
        self.code = [(tuple(b(self.env) for b in blk.binders), blk.term, blk.lines,
                      tuple(blk.pure)) for blk in info.blocks]
        # blocks that only return: a branch there is an exit (the common `if (i >= n)
        # return;`), so the other threads stay uniform instead of waiting for them
        self.exit_blocks = {k for k, blk in enumerate(info.blocks)
                            if not blk.binders and blk.term.kind == EXIT and
                            blk.term.guard is None}
        self.collective = [warp_collective(blk) for blk in info.blocks]
        self.n = geom.n
        self.pc = np.zeros(self.n, dtype=np.int32)
        self.n_alive = self.n
        self.upc = 0
        self.ulanes = None
        self.divergent_steps = 0
        self.deferred = 0     # picks the lowest PC's warp collective has waited (_runnable)
        # per-thread call stacks of recursive functions (callstack.py)
        self.calls = CallStack(self, info.frames, launch.stack_depth) if info.frames else None

    def reset(self, launch: Launch, first_block: int) -> None:
        """Reuse this bound wave for blocks from ``first_block`` of ``launch`` (same shape)."""
        self.launch = launch
        self.env.reset(launch.params, launch.data_base, launch.mmu, first_block)
        self.env.printf, self.env.heap = launch.order, launch.heap
        self.env.grid_ws = launch.grid_workspace
        self.env.devrt, self.env.devrt_errors = launch.devrt, None
        self.env.mem.textures = launch.textures
        self.pc.fill(0)
        self.n_alive = self.n
        self.upc, self.ulanes = 0, None
        self.deferred = 0
        if self.calls is not None:
            self.calls.reset(launch.stack_depth)

    # -- scheduling ------------------------------------------------------------------------
    def _pick(self):
        pcs = self.pc
        m = int(pcs.min())
        if m >= PC_EXIT:
            return None
        if m >= WAIT:   # every live thread waits at a barrier: release them all
            pcs[pcs < PC_EXIT] -= WAIT
            m = int(pcs.min())
        self.divergent_steps += 1
        lanes = None
        if self.divergent_steps % FAIRNESS_PERIOD == 0:
            # Now and then: release blocks whose live threads all wait at a barrier, and run
            # the threads furthest ahead, so that a lock holder or a flag setter progresses
            # while others spin at lower PCs (independent thread scheduling).
            self._release_complete_blocks()
            ahead = self._ahead()
            if ahead is not None:
                m, lanes = ahead
            else:
                m = int(pcs.min())
        if lanes is None:
            m, lanes = self._runnable(m, np.flatnonzero(pcs == m))
        if lanes.size == self.n_alive:
            self.upc = m
            self.ulanes = None if lanes.size == self.n else lanes
            return m, self.ulanes
        return m, lanes

    def _ahead(self):
        """(pc, lanes) of the threads furthest ahead that may run now (:meth:`_may_run`),
        or None.  A warp collective passed over for its missing warp mates has waited the
        FAIRNESS_PERIOD picks since the last step; once it has waited DEFER_MAX, its threads
        run (the mates may be outside its member mask, spinning on what its threads do
        next)."""
        pcs = self.pc
        for m in np.unique(pcs[pcs < WAIT])[::-1]:
            m = int(m)
            lanes = self._may_run(m)
            if not lanes.size and self.collective[m]:
                self.deferred += FAIRNESS_PERIOD
                if self.deferred >= DEFER_MAX:
                    self.deferred = 0
                    lanes = np.flatnonzero(pcs == m)
            if lanes.size:
                return m, lanes
        return None

    def _may_run(self, m: int) -> np.ndarray:
        """The threads at ``m`` that may run now.  At a block with a warp-collective
        instruction only those whose warp's live threads are all there: a shuffle must not
        read the registers of warp mates that are elsewhere (a GPU waits for the threads its
        member mask names)."""
        at = self.pc == m
        if not self.collective[m]:
            return np.flatnonzero(at)
        geom = self.env.geom
        nw = -(-geom.tpb // 32)
        pad = np.full((geom.nblocks, nw * 32), PC_EXIT, np.int32)
        pad[:, :geom.tpb] = self.pc.reshape(geom.nblocks, geom.tpb)
        warps = pad.reshape(geom.nblocks, nw, 32)
        whole = ((warps == m) | (warps >= PC_EXIT)).all(axis=2)      # (blocks, warps)
        return np.flatnonzero(np.repeat(whole, 32, axis=1)[:, :geom.tpb].reshape(-1) & at)

    def _runnable(self, m: int, lanes: np.ndarray):
        """(pc, lanes) to run when ``m`` is the lowest PC and ``lanes`` are there.  At a
        warp-collective block whose warps are not whole, the lowest PC from ``m`` up that
        may run: the warp mates elsewhere run until they arrive.  If none may (a partial
        member mask, a mate that never comes) or the collective has waited DEFER_MAX picks,
        every thread at ``m`` runs, and a source lane that is not there reads 0."""
        if not self.collective[m]:
            return m, lanes
        if lanes.size != self.n_alive and self.deferred < DEFER_MAX:
            pcs = self.pc
            for lo in np.unique(pcs[(pcs >= m) & (pcs < WAIT)]):
                ok = self._may_run(int(lo))
                if ok.size:
                    self.deferred += 1
                    return int(lo), ok
        self.deferred = 0       # the collective runs for every thread there
        return m, lanes

    def _release_complete_blocks(self) -> None:
        blk = self.pc.reshape(self.env.geom.nblocks, self.env.geom.tpb)
        waiting = (blk >= WAIT) & (blk < PC_EXIT)
        done = (blk >= WAIT).all(axis=1) & waiting.any(axis=1)
        if done.any():
            rows = blk[done]
            rows[waiting[done]] -= WAIT
            blk[done] = rows

    def _goto(self, lanes, target: int) -> None:
        if self.upc >= 0:
            self.upc = target
        elif lanes is None:
            self.pc[:] = target
        else:
            self.pc[lanes] = target

    def _split(self, pc: int, lanes, p: np.ndarray, target: int) -> None:
        """Lanes with ``p`` go to ``target``, the others fall through to ``pc + 1``."""
        dest = np.where(p, np.int32(target), np.int32(pc + 1))
        if lanes is None:
            self.pc[:] = dest
        else:
            self.pc[lanes] = dest
        self.upc = -1

    def _exit(self, lanes) -> None:
        if lanes is None:
            self.pc[:] = PC_EXIT
            self.n_alive = 0
        else:
            self.pc[lanes] = PC_EXIT
            self.n_alive -= lanes.size
        self.upc = -1

    def _guard(self, guard, lanes) -> np.ndarray:
        name, neg = guard
        p = self.env.regs[name]
        p = p if lanes is None else p[lanes]
        return ~p if neg else p

    def _terminate(self, pc: int, lanes, term) -> None:
        kind = term.kind
        if kind == FALL:
            self._goto(lanes, pc + 1)
        elif kind == BRA or kind == EXIT:
            if kind == BRA and term.target in self.exit_blocks:
                kind = EXIT
            if term.guard is None:
                return self._goto(lanes, term.target) if kind == BRA else self._exit(lanes)
            p = self._guard(term.guard, lanes)
            count = np.count_nonzero(p)
            if count == p.size:
                return self._goto(lanes, term.target) if kind == BRA else self._exit(lanes)
            if not count:
                return self._goto(lanes, pc + 1)
            if kind == BRA:
                return self._split(pc, lanes, p, term.target)
            lanes = np.arange(self.n) if lanes is None else lanes
            if self.upc >= 0:   # still uniform: the survivors stay together
                self.pc[lanes[p]] = PC_EXIT
                self.n_alive -= int(p.sum())
                self.upc, self.ulanes = pc + 1, lanes[~p]
            else:
                self.pc[lanes[p]] = PC_EXIT
                self.pc[lanes[~p]] = pc + 1
                self.n_alive -= int(p.sum())
        elif kind == BAR:
            if self.upc >= 0:
                self.upc = pc + 1
            else:
                self._goto(lanes, pc + 1 + WAIT)
        elif kind == CALL or kind == RET:
            calls = self.calls
            assert calls is not None    # only kernels with a frame region have these
            (calls.call if kind == CALL else calls.ret)(self, pc, lanes, term)
        elif kind == TRAP:
            hit = np.ones(1, bool) if term.guard is None else self._guard(term.guard, lanes)
            if hit.any():
                if term.assert_args:
                    which = self.env.lanes_all if lanes is None else lanes
                    raise self._assert_fault(term, int(which[np.argmax(hit)]))
                raise KernelFault(errno.EIO, f"trap in {self.launch.info.name} at line "
                                  f"{term.line}")
            self._goto(lanes, pc + 1)
        return None

    def _assert_fault(self, term, lane: int) -> KernelFault:
        """The fault of a failed device assert by wave lane ``lane`` (assertion.py)."""
        env = self.env
        values = [int.from_bytes(env.pvars[name][lane, :size].tobytes(), "little")
                  for name, size in zip(term.assert_args, ASSERT_SIZES, strict=True)]
        one = np.array([lane], np.int64)

        def read(addr: int, n: int) -> bytes:
            return env.mem.load("generic", np.array([addr], np.uint64), one, _U8, n).tobytes()

        def index(reg: str) -> list[int]:
            return [int(np.broadcast_to(env.special_value(f"{reg}.{c}"), (env.n,))[lane])
                    for c in "xyz"]
        return assertion.failure(self.launch.info.name, term.line, values, read,
                                 index("%ctaid"), index("%tid"))

    # -- execution --------------------------------------------------------------------
    def run(self, budget: int | None, deadline: float | None) -> tuple[bool, int]:
        """Run until the wave finishes (True) or ``budget`` instructions ran (False)."""
        stats = self.launch.stats
        code = self.code
        used = 0
        while True:
            if self.upc >= 0:
                pc, lanes = self.upc, self.ulanes
            else:
                sel = self._pick()
                if sel is None:
                    return True, used
                pc, lanes = sel
            ops, term, lines, pure = code[pc]
            k = 0
            try:
                if lanes is not None and self.upc >= 0:   # uniform, some threads exited
                    for f, p in zip(ops, pure, strict=True):
                        f(None if p else lanes)
                        k += 1
                else:
                    for f in ops:
                        f(lanes)
                        k += 1
            except MmuFault as e:
                raise KernelFault(errno.EFAULT, f"illegal address 0x{e.va:x} ({e.reason}) in "
                                  f"{self.launch.info.name} at line {lines[k]}") from e
            except TextureFault as e:
                raise KernelFault(errno.EFAULT, f"{e.reason} in {self.launch.info.name} at "
                                  f"line {lines[k]}") from e
            n = len(ops) + (term.kind != FALL)
            used += n
            stats.instructions += n
            stats.thread_instructions += n * (self.n_alive if lanes is None else lanes.size)
            self._terminate(pc, lanes, term)
            if self.upc >= 0 and self.n_alive == 0:
                self.upc = -1
            if deadline is not None and time.monotonic() > deadline:
                raise KernelFault(errno.ETIME, f"watchdog: {self.launch.info.name} ran longer "
                                  f"than {self.launch.watchdog} s")
            if budget is not None and used >= budget:
                return self._pick_done(), used

    def _pick_done(self) -> bool:
        return self.upc < 0 and self.n_alive == 0


class Launch:
    """One kernel launch; ``run(budget)`` executes it, resumably.  See Module.launch."""

    engine = "interp"
    order = None        # its device printf in block order (printorder.py), set by `printf`
    rest = None         # the compiled launch of its blocks once it tiered up (tierup.py)
    before_rest: tuple = ()     # its stats when it did (instructions, thread-instr., s)
    heap = None         # the context's device heap (gdevd/gpu/heap.py), for malloc/free
    devrt = None        # the grid's device-runtime state (devrt.GridState), set by its tree

    @property
    def printf(self):
        """Where device printf goes: anything with ``write(bytes)`` and optionally
        ``room()`` or ``full()`` (ops_printf.py, printorder.py), or None to drop it."""
        return None if self.order is None else self.order.sink

    @printf.setter
    def printf(self, sink) -> None:
        self.order = None if sink is None else BlockOrder(sink)

    @property
    def budget_scale(self) -> int:
        """How many of this engine's steps weigh one step of the compute engine's slice cap
        (compute.py): 1, an interpreted step is the unit (the compiled rest's once it
        tiered up)."""
        return 1 if self.rest is None else self.rest.budget_scale

    @property
    def budget_key(self) -> tuple:
        """What launches whose budgets transfer share: engine, kernel and shape (a hint for
        the compute engine's first quantum, compute.py; an id reused after the kernel is
        gone only costs one quantum of the wrong length)."""
        if self.rest is not None:
            return self.rest.budget_key
        return (type(self).__name__, id(self.info), self.grid, self.block)

    def __init__(self, module, info, grid, block, params: bytes, mmu, data_base: int,
                 shared_dynamic: int = 0, watchdog: float | None = None,
                 textures=None, grid_workspace: int = 0, heap=None) -> None:
        self.info = info
        self.heap = heap            # the context's device heap (None: malloc returns NULL)
        self.textures = textures    # the context's TextureTable (None: tex faults)
        self.grid = _dims(grid, MAX_GRID, "grid")
        self.block = _dims(block, MAX_BLOCK, "block")
        tpb = self.block[0] * self.block[1] * self.block[2]
        if tpb > 1024 or (info.max_threads and tpb > info.max_threads):
            raise GdevError(errno.EINVAL, f"block of {tpb} threads is too large")
        if info.cluster > 1:
            raise GdevError(errno.EINVAL, f"{info.name} needs clusters of {info.cluster} "
                            "blocks (.reqnctapercluster): this GPU runs clusters of one")
        params = bytes(params)
        if not info.param_size <= len(params) <= (info.param_size + 7) // 8 * 8:
            raise GdevError(errno.EINVAL, f"parameter buffer of {len(params)} bytes, kernel "
                            f"{info.name} takes {info.param_size}")
        if shared_dynamic < 0:
            raise GdevError(errno.EINVAL, "negative dynamic shared size")
        self.dyn_offset = (info.static_shared + 15) // 16 * 16
        self.shared_total = self.dyn_offset + shared_dynamic if shared_dynamic else \
            info.static_shared
        if self.shared_total > 64 * 1024:
            raise GdevError(errno.EINVAL, f"{self.shared_total} bytes of shared memory")
        if watchdog is not None and watchdog <= 0:
            raise GdevError(errno.EINVAL, "watchdog must be positive")
        self.raw_params = params    # as given (a compiled rest takes them: tierup.py)
        self.params = params + bytes(16 - len(params) % 16)
        self.mmu, self.shared_dynamic, self.watchdog = mmu, shared_dynamic, watchdog
        self.data_base = data_base
        self.module = module
        self.symbols = self._symbols(module)
        self.stats = LaunchStats()
        self.total_blocks = self.grid[0] * self.grid[1] * self.grid[2]
        per_thread = sum(np.dtype(np.uint64).itemsize for _ in info.regs) + \
            sum(info.pvars.values()) + info.local_size + 64
        self.stack_depth = 0    # the depth limit of recursive calls (callstack.py)
        if info.frames is not None:
            self.stack_depth, stack = info.frames.reservation(tpb, WAVE_BYTES)
            per_thread += stack
        wave_threads = max(tpb, min(WAVE_THREADS, WAVE_BYTES // per_thread))
        self.wave_blocks = max(1, wave_threads // tpb)
        # a cooperative launch (a grid workspace) runs all its blocks at once (coop.py)
        self.grid_workspace = coresident(self, per_thread, grid_workspace)
        if grid_workspace:
            self.wave_blocks = self.total_blocks
        self.next_block = 0
        self.wave: Wave | None = None
        self.done = False

    def _symbols(self, module) -> dict[str, tuple[str, int]]:
        info = self.info
        syms: dict[str, tuple[str, int]] = {}
        for name, off in module.data_layout().offsets.items():
            syms[name] = ("global", off)        # relative to the launch's data_base
        for name, off in info.shared_offsets.items():
            syms[name] = ("shared", off)
        for name in info.dynamic_shared:
            syms[name] = ("shared", self.dyn_offset)
        for name, off in info.local_offsets.items():
            syms[name] = ("local", off)
        for p in info.params:
            syms[p.name] = ("kparam", p.offset)
        for name, addr in module.function_addresses.items():
            syms.setdefault(name, ("func", addr))
        return syms

    def run(self, budget: int | None = None) -> bool:
        """Execute up to ``budget`` instructions (all if None); True once the grid is done.

        Raises KernelFault (EFAULT illegal address, EIO trap or engine error, ETIME
        watchdog); a faulted launch is finished (later calls return True at once).
        """
        if self.done:
            return True
        if budget is not None and budget <= 0:
            return False
        if self.rest is None and self.wave is None and (native := tierup.ready(self)):
            self.before_rest = (self.stats.instructions, self.stats.thread_instructions,
                                self.stats.elapsed)
            self.rest = tierup.compiled_rest(self, native)
            self.engine = "jit"
        if self.rest is not None:
            return tierup.run_rest(self, budget)
        t0 = time.monotonic()
        deadline = None if self.watchdog is None else t0 + self.watchdog - self.stats.elapsed
        try:
            with np.errstate(all="ignore"):      # PTX arithmetic never traps
                done = self._run(budget, deadline)
        except GdevError:
            self.done, self.wave = True, None
            raise
        except Exception as exc:   # an engine bug must not take the daemon down
            self.done, self.wave = True, None
            raise KernelFault(errno.EIO, f"engine error in {self.info.name}: {exc!r}") from exc
        finally:
            self.stats.elapsed += time.monotonic() - t0
            if self.done and self.order is not None:
                self.order.flush()
        if done is None:        # at a wave boundary, its compiled form ready: tier up
            return self.run(budget)
        return done

    def _run(self, budget: int | None, deadline: float | None) -> bool | None:
        """Run waves (see :meth:`run`); None at a wave boundary where the launch may tier
        up (tierup.py)."""
        while True:
            if self.wave is None:
                if self.next_block >= self.total_blocks:
                    self.done = True
                    return True
                if self.next_block and tierup.ready(self) is not None:
                    return None
                nb = min(self.wave_blocks, self.total_blocks - self.next_block)
                self.wave = self._wave(nb)
                self.next_block += nb
            finished, used = self.wave.run(budget, deadline)
            if budget is not None:
                budget -= used
            if finished:
                self._release(self.wave)
                self.wave = None
                if self.order is not None:      # every block below next_block finished
                    self.order.release_below(self.next_block)
                # a spent budget ends the slice here too, or grids of tiny waves never yield
                if budget is not None and budget <= 0 and self.next_block < self.total_blocks:
                    return False
                continue
            if budget is not None and budget <= 0:
                return False


    def _key(self, nblocks: int) -> tuple:
        return (self.info.name, self.grid, self.block, nblocks, self.shared_total,
                self.shared_dynamic)

    def _wave(self, nblocks: int) -> Wave:
        """A bound wave for the next blocks: reused from the module's pool if one of the same
        shape is idle (binding costs ~20 us per instruction), else a new one."""
        wave = self.module.wave_pool.take(self._key(nblocks))
        if wave is None:
            return Wave(self, self.next_block, nblocks)
        wave.reset(self, self.next_block)
        return wave

    def _release(self, wave: Wave) -> None:
        if wave.calls is not None:
            wave.calls.reset(0)     # the pool keeps no stacks
        if wave.n <= POOL_MAX_THREADS:
            wave.launch = None  # type: ignore[assignment]  # keep no context alive in the pool
            wave.env.devrt = None
            wave.env.mem.mmu = wave.env.mem.textures = None
            self.module.wave_pool.give(self._key(wave.env.geom.nblocks), wave)


class WavePool:
    """Idle bound waves of one module, a few per shape, most recently used kept."""

    def __init__(self, capacity: int = 8) -> None:
        self.capacity = capacity
        self._waves: dict[tuple, Wave] = {}
        self._lock = threading.Lock()

    def take(self, key: tuple) -> Wave | None:
        """Remove and return the idle wave of shape ``key``, if any."""
        with self._lock:
            return self._waves.pop(key, None)

    def give(self, key: tuple, wave: Wave) -> None:
        """Keep ``wave`` for reuse, evicting the least recently given one if full."""
        with self._lock:
            self._waves.pop(key, None)
            self._waves[key] = wave
            while len(self._waves) > self.capacity:
                del self._waves[next(iter(self._waves))]


def _dims(d, limits, what: str) -> tuple[int, int, int]:
    try:
        t = tuple(int(x) for x in d)
    except TypeError:
        t = (int(d),)
    t = t + (1,) * (3 - len(t))
    if len(t) != 3 or any(x <= 0 for x in t) or any(x > m for x, m in zip(t, limits, strict=False)):
        raise GdevError(errno.EINVAL, f"bad {what} dimensions {d!r}")
    return t
