"""Tiering up a running launch: an interpreted launch moves to its kernel's compiled form
at a wave boundary, as soon as that form is ready.

Under the tiered policy (``auto``) a launch made before its kernel compiled runs on the
interpreter; a long one (many blocks, or a kernel launched once over a large grid) would
run there to the end, whatever the compiler finished meanwhile.  Between two waves no
block is in flight: every block below ``next_block`` has finished and none above has
started, and a block's state (registers, shared and local memory) lives only while it
runs.  So the blocks not yet started can run compiled: :func:`compiled_rest` makes a
:class:`~.jit.launch.JitLaunch` of them (from ``next_block``), sharing the launch's printf
order and device-runtime state, and the launch delegates to it from then on
(:func:`run_rest`), its stats the sum of both parts.  Cooperative launches (one wave, every
block at once) and kernels with recursive calls never tier up; neither does a launch under
the ``interp`` or ``jit`` policy (``jit`` starts compiled).
"""

from __future__ import annotations

from . import jit


def ready(launch):
    """The kernel's compiled form (compiled module, C function) if ``launch`` (an
    interpreted :class:`~.executor.Launch` between two waves) may move to it now, else
    None."""
    if jit.engine() != "auto" or launch.grid_workspace or launch.info.frames is not None:
        return None
    if launch.next_block >= launch.total_blocks:
        return None
    return launch.module.jit.runnable(launch.info.name)


def compiled_rest(launch, native):
    """The compiled launch of ``launch``'s blocks not yet started, on ``native`` (what
    :func:`ready` returned)."""
    from .jit.launch import JitLaunch
    compiled, fname = native
    left = None if launch.watchdog is None else \
        max(launch.watchdog - launch.stats.elapsed, 1e-3)
    rest = JitLaunch(launch.module, launch.info, compiled, fname, launch.grid, launch.block,
                     launch.raw_params, launch.mmu, launch.data_base, launch.shared_dynamic,
                     left, textures=launch.textures, heap=launch.heap,
                     first_block=launch.next_block)
    rest.order, rest.devrt = launch.order, launch.devrt
    return rest


def run_rest(launch, budget: int | None) -> bool:
    """Run ``launch``'s compiled rest (``launch.rest``) for ``budget`` steps of its own;
    True once the grid is done.  ``launch.stats`` add the rest's to the interpreted part's
    (``launch.before_rest``); a fault ends the launch."""
    rest, (instr, thread, secs) = launch.rest, launch.before_rest
    try:
        done = rest.run(budget)
    except BaseException:
        launch.done = True
        raise
    finally:
        launch.stats.instructions = instr + rest.stats.instructions
        launch.stats.thread_instructions = thread + rest.stats.thread_instructions
        launch.stats.elapsed = secs + rest.stats.elapsed
    launch.done = done
    return done
