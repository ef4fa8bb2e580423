"""Cooperative launches: every block of the grid resident at once, for grid-wide barriers.

Theory of operation
-------------------
``cooperative_groups::this_grid().sync()`` as nvcc emits it is a spin on global memory: the
kernel reads the *grid workspace* address the driver passes in ``%envreg1`` (high 32 bits)
and ``%envreg2`` (low: ``bfi.b64 ws, envreg1, envreg2, 32, 32``), traps if it is 0 (a
launch that is not cooperative), and at each barrier thread 0 of every block adds to the
word at ``[ws + 4]`` (block 0 adds ``0x80000001 - nblocks``, the others 1) and spins on
``ld.acquire`` until its top bit flips, with a ``bar.sync`` on each side.  So a grid
barrier completes only if every block of the grid has started and each keeps making
progress while others spin: on a GPU, all blocks co-resident on the multiprocessors.

The engines give that guarantee to a launch with a nonzero ``grid_workspace``:

* the interpreter (``executor.py``) runs the whole grid as one wave, so every block's
  threads are lanes of one min-PC schedule (a spinning lane never starves a lagging one,
  which has the lower PC and runs first; blocks waiting at a ``bar.sync`` are released by
  the fairness step);
* the compiled engine (``jit/launch.py``) gives every block its own slot and has each slot
  yield to the next after :data:`QUANTUM` basic-block steps, so the slots of one engine
  thread run round-robin and a block spinning at the barrier hands its thread to the
  blocks it waits for; slots on different engine threads run in parallel.

A barrier that can never complete (a block exited, or never reaches it) spins until the
compute engine's watchdog ends the launch (ETIME), like any endless kernel; run(budget)
slicing and preemption are unchanged, since all the state is in the launch.

How many blocks may be co-resident is the runtime's policy (CUDA's occupancy:
``libgdev.kernel.coresident_blocks_per_mp`` times the multiprocessors); the engines only
refuse a grid whose thread state would not fit one wave (:data:`COOP_BYTES`).
"""

from __future__ import annotations

import errno

from gdevd.errors import GdevError

# the compiled engine's turn of one block of a cooperative launch, in basic-block steps
QUANTUM = 64
# at most this much thread state (registers, local and call-parameter memory) for a whole
# cooperative grid, which runs at once
COOP_BYTES = 256 << 20


def coresident(launch, per_thread: int, grid_workspace: int) -> int:
    """Check a launch's grid workspace (0: not cooperative) and that a cooperative grid's
    thread state fits at once; the workspace address.  EINVAL for an address that is not
    a 64-bit integer; EOVERFLOW (CUDA's COOPERATIVE_LAUNCH_TOO_LARGE) for a grid too big."""
    if isinstance(grid_workspace, bool) or not isinstance(grid_workspace, int) or \
            not 0 <= grid_workspace < 1 << 64:
        raise GdevError(errno.EINVAL, f"grid workspace must be a 64-bit address: "
                                      f"{grid_workspace!r}")
    if not grid_workspace:
        return 0
    threads = launch.total_blocks * launch.block[0] * launch.block[1] * launch.block[2]
    if threads * per_thread > COOP_BYTES:
        raise GdevError(errno.EOVERFLOW, f"cooperative launch of {launch.info.name}: "
                        f"{threads} threads of {per_thread} bytes of state each exceed the "
                        f"{COOP_BYTES >> 20} MiB a grid resident at once may hold")
    return grid_workspace
