"""A host launch of a kernel that uses the device runtime: the whole tree of grids it makes.

:class:`LaunchTree` is what :meth:`Module.launch` returns for such a kernel; it has the
contract of :class:`~.executor.Launch` (``run(budget)`` resumable, ``done``, ``stats``,
``printf``), so the compute engine, the scheduler's slices, preemption and the watchdog see
one launch, and the host's stream and events see it complete only when every grid of the
tree has.

Theory of operation
-------------------
The tree keeps a stack of frames, one per grid being run or waiting for its children (at
most :data:`~.devrt.MAX_DEPTH` + 1).  ``run`` runs the top frame's grid; once its blocks are
done, its next recorded launch (devrt.GridState.next_child: children in issue order, tail
launches last) is started on top of it (a recorded device-side memcpy or memset is done
then, in its turn), reading its parameters from its arena slot and
giving the slot back; a frame with no launch left is popped.  So a child grid completes,
with its own descendants, before the next launch of its parent starts, and tail launches run
after every other launch of their parent: a valid CDP2 schedule.  Each child runs on the
engine its own kernel is ready for (compiled if it is: a compiled kernel's device-runtime
calls go into the host, jit/devrtops.py).  A fault in any grid ends the tree;
its message names the faulting kernel and, for a child, its depth and its parent.
"""

from __future__ import annotations

import errno

from gdevd.errors import GdevError, KernelFault, MmuFault

from .devrt import Arena, Copy, GridState, TreeState

COPY_CHUNK = 16 << 20   # bytes a device-side copy moves per step


class LaunchTree:
    """The grids of one host launch (see module docstring)."""

    def __init__(self, module, root, arena: tuple | None) -> None:
        """``root``: the host grid's launch; ``arena``: (address, slot size, slots) of the
        parameter buffers in the context's memory, and optionally a dict of device
        attributes the GPU reports otherwise than devrt.ATTRIBUTES, or None (device launches
        then fail)."""
        kernels = {module.function_addresses[n]: n for n in module.kernels
                   if n in module.function_addresses}
        self.state = TreeState(module, Arena(*arena[:3]) if arena else None, kernels)
        if arena and len(arena) > 3:
            self.state.attributes.update(arena[3])
        self.module = module
        self.root = root
        root.devrt = GridState(self.state, 0, root.info.name)
        self.stack = [root]
        self.stats = root.stats
        self._printf = None
        self.done = False
        self.grids = 1                      # grids started, the root included
        self.children_by_engine: dict[str, int] = {}    # child grids each engine ran

    # the attributes the compute engine reads of the running grid
    @property
    def info(self):
        return self.stack[-1].info if self.stack else self.root.info

    @property
    def engine(self) -> str:
        return self.stack[-1].engine if self.stack else self.root.engine

    @property
    def budget_scale(self) -> int:
        """The running grid's (compute.py re-reads it every quantum)."""
        return self.stack[-1].budget_scale if self.stack else 1

    budget_key = None       # the tree's grids differ: nothing to learn across launches

    @property
    def printf(self):
        return self._printf

    @printf.setter
    def printf(self, sink) -> None:
        self._printf = sink
        for launch in self.stack:
            launch.printf = sink

    def run(self, budget: int | None = None) -> bool:
        """Run up to ``budget`` steps of the tree (all if None); True once every grid is done.
        Raises the KernelFault of the first grid that faults (the tree is then done)."""
        if self.done:
            return True
        try:
            return self._run(budget)
        except GdevError:
            self._stop()
            raise

    def _run(self, budget: int | None) -> bool:
        while self.stack:
            top = self.stack[-1]
            before = top.stats.instructions
            if not self._run_grid(top, budget):
                return False
            if budget is not None:
                budget -= max(1, top.stats.instructions - before)
            child = top.devrt.next_child() if top.devrt is not None else None
            if child is None:
                self.stack.pop()
                if top is not self.root:
                    self._count(top)
                continue
            if isinstance(child, Copy):
                self._copy(child, top)
                continue
            self.stack.append(self._start(child, top))
            if budget is not None and (budget <= 0 or self.stack[-1].engine != top.engine):
                return False        # the engine re-reads budget_scale for the new grid
        self.done = True
        return True

    def _run_grid(self, launch, budget: int | None) -> bool:
        if launch is self.root:
            return launch.run(budget)
        try:
            return launch.run(budget)
        except KernelFault as e:
            parent = self.stack[-2].info.name
            raise KernelFault(e.errno, f"{e.detail} (a grid launched from {parent}, depth "
                              f"{len(self.stack) - 1})") from e

    def _start(self, child, parent):
        """The launch of recorded ``child`` of ``parent``'s grid (ETIME if the tree's
        watchdog has expired); its slot is given back either way: the child has left its
        grid's queue, so the tree's stop would not find it."""
        arena = self.state.arena
        info = self.module.kernels[child.kernel]
        try:        # (the context may have freed its arena: that ends only its own launch)
            self._check_watchdog()
            params = parent.mmu.read(arena.va + child.slot * arena.size, info.param_size) \
                if info.param_size else b""
        except MmuFault as e:
            raise KernelFault(errno.EFAULT, f"the parameter buffer of a launch of "
                              f"{child.kernel} from {parent.info.name}: {e.detail}") from e
        finally:
            arena.give(child.slot)
            arena.pending -= 1
        wd = self.root.watchdog
        launch = self.module.engine_launch(child.kernel, child.grid, child.block, params,
                                           parent.mmu, parent.data_base, child.shared,
                                           None if wd is None else wd - self.elapsed(),
                                           textures=parent.textures, heap=parent.heap)
        launch.printf = self._printf
        launch.devrt = GridState(self.state, parent.devrt.depth + 1, child.kernel)
        self.grids += 1
        self.children_by_engine[launch.engine] = self.children_by_engine.get(launch.engine, 0) + 1
        return launch

    def _copy(self, copy: Copy, parent) -> None:
        """Do a recorded cudaMemcpyAsync/cudaMemsetAsync of ``parent``'s grid through its
        page table; an address it cannot reach faults the tree."""
        mmu = parent.mmu
        try:
            for off in range(0, copy.count, COPY_CHUNK):
                n = min(COPY_CHUNK, copy.count - off)
                data = mmu.read(copy.src + off, n) if copy.src is not None else \
                    bytes([copy.value]) * n
                mmu.write(copy.dst + off, data)
        except MmuFault as e:
            what = "cudaMemcpyAsync" if copy.src is not None else "cudaMemsetAsync"
            raise KernelFault(errno.EFAULT, f"a {what} of {copy.count} bytes from "
                              f"{parent.info.name}: {e.detail}") from e

    def elapsed(self) -> float:
        """Seconds the tree's grids have run (the root's watchdog bounds their sum)."""
        return self.stats.elapsed + sum(g.stats.elapsed for g in self.stack[1:])

    def _check_watchdog(self) -> None:
        wd = self.root.watchdog
        if wd is not None and self.elapsed() >= wd:
            raise KernelFault(errno.ETIME, f"watchdog: {self.root.info.name} and the grids "
                              f"it launched ran longer than {wd} s")

    def _count(self, launch) -> None:
        """Add a finished child grid's counters to the tree's (the root's)."""
        self.stats.instructions += launch.stats.instructions
        self.stats.thread_instructions += launch.stats.thread_instructions
        self.stats.elapsed += launch.stats.elapsed

    def _stop(self) -> None:
        """A fault (or an engine error) ends every grid; pending launches are dropped."""
        self.done = True
        for launch in self.stack:
            if launch.devrt is not None:
                launch.devrt.abandon()
        self.stack.clear()


def check_arena(arena) -> None:
    """EINVAL unless ``arena`` is None or (address, slot size, slots) of positive ints,
    optionally followed by a dict of int attributes."""
    if arena is None:
        return
    ok = isinstance(arena, tuple) and len(arena) in (3, 4) and \
        all(isinstance(x, int) and x > 0 for x in arena[:3]) and \
        (len(arena) == 3 or isinstance(arena[3], dict) and
         all(isinstance(k, int) and isinstance(v, int) for k, v in arena[3].items()))
    if not ok:
        raise GdevError(errno.EINVAL, f"bad device-runtime arena {arena!r}")
