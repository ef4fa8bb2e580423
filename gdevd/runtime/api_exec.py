"""Gdev verbs for execution: glaunch, gsync, gbarrier, and the check of a GdevKernel.

A launch reads its code (PTX text) from the context's own address space, as the GPU fetches
code from device memory, decodes it once per distinct module (the physical GPU's decode
cache, keyed by a hash of the bytes), prepares the grid (errors in the descriptor surface
here, synchronously), and queues it on one of the handle's streams (``streams.py``); the
compute engine runs it when the work that stream orders it behind has finished.  Faults
surface at ``gsync``/``gbarrier``.
"""

from __future__ import annotations

import errno
from typing import Any

import trio

from libgdev import linkimage
from libgdev.kernel import Dim3, GdevKernel

from ..errors import GdevError
from ..gpu.compute import LaunchJob
from ..gpu.ptx import link_units, load_module
from . import defaults as D
from .coop import check_coresident, free_workspace, new_workspace
from .devrt import new_arena
from .handle import Fence, Handle, check_handle
from .heap import launch_heap
from .limits import launch_slot
from .mm.memory import MemObject
from .mm.residency import resident_all, touching
from .streams import LEGACY


def _check_dim3(what: str, dims: Any) -> Dim3:
    try:
        x, y, z = dims
    except (TypeError, ValueError):
        raise GdevError(errno.EINVAL, f"{what} must be three integers: {dims!r}") from None
    for d in (x, y, z):
        if isinstance(d, bool) or not isinstance(d, int) or d <= 0:
            raise GdevError(errno.EINVAL, f"{what} dimensions must be positive: {dims!r}")
    return (x, y, z)


def _check_kernel(k: Any) -> None:
    if not isinstance(k, GdevKernel):
        raise GdevError(errno.EINVAL, f"not a GdevKernel: {type(k).__name__}")
    _check_dim3("grid", k.grid)
    _check_dim3("block", k.block)
    if not isinstance(k.name, str) or not k.name:
        raise GdevError(errno.EINVAL, "kernel name must be a non-empty string")
    if not isinstance(k.params, bytes | bytearray | memoryview):
        raise GdevError(errno.EINVAL, "params must be bytes")
    for field in ("code_size", "shared_dynamic", "data_addr", "code_addr"):
        v = getattr(k, field)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise GdevError(errno.EINVAL, f"{field} must be a non-negative integer: {v!r}")
    if k.code_size == 0:
        raise GdevError(errno.EINVAL, "code_size must be > 0")
    if not isinstance(k.cooperative, bool):
        raise GdevError(errno.EINVAL, f"cooperative must be a bool: {k.cooperative!r}")


async def _decode(handle: Handle, code: bytes) -> Any:
    """The decoded module of ``code``: from the GPU's cache, else parsed on a worker thread."""
    cache = handle.gpu.modules
    key = cache.key(code)
    mod = cache.lookup(key)
    if mod is None:
        mod = await trio.to_thread.run_sync(_load, handle.system.module_loader, code)
        cache.insert(key, mod, owner=handle.cred.uid)
    return mod


def _load(loader: Any, code: bytes) -> Any:
    """The decoded module of ``code``: PTX text through ``loader`` (default the PTX
    executor's), or a linked-module image of several PTX texts through the unit linker."""
    if linkimage.is_linked(code):
        try:
            units = linkimage.decode(code)
        except GdevError as exc:
            raise GdevError(errno.EINVAL, exc.detail) from None
        return link_units(units)
    try:
        text = code.rstrip(b"\0").decode("utf-8")
    except UnicodeDecodeError:
        raise GdevError(errno.EINVAL, "module code is not PTX text") from None
    return (loader or load_module)(text)


async def glaunch(handle: Handle, kernel: GdevKernel, stream: int = LEGACY) -> int:
    """Launch ``kernel`` in ``stream`` (0: the legacy stream); its fence id for ``gsync``.

    Errors: EBADF; EINVAL (bad descriptor, unknown entry, bad geometry or parameters,
    unknown stream);
    ENOENT/EFAULT (code or data address not in this context); the sticky error of a
    faulted context; for a cooperative kernel, EOVERFLOW (a grid larger than can be
    resident at once) and ENOMEM (no room for its grid workspace): coop.py.
    """
    check_handle(handle)
    handle.check_fault()
    _check_kernel(kernel)
    handle.streams.get(stream)
    handle.lookup(kernel.code_addr, kernel.code_size)
    async with touching(handle, (kernel.code_addr, kernel.code_size)):
        code = handle.mmu.read(kernel.code_addr, kernel.code_size)
    mod = await _decode(handle, code)
    return await launch_decoded(handle, mod, kernel, stream)


async def launch_decoded(handle: Handle, mod: Any, kernel: GdevKernel,
                         stream: int = LEGACY) -> int:
    """Enqueue ``kernel`` of the decoded module ``mod`` in ``stream`` (the second half of
    glaunch, for callers that hold the decoded module: ``gmodule_launch``); its fence id."""
    check_handle(handle)
    handle.streams.get(stream)
    layout = mod.data_layout()
    if layout.size:
        handle.lookup(kernel.data_addr, layout.size)
    ws = await _cooperative(handle, mod, kernel) if kernel.cooperative else None
    owned = [ws] if ws is not None else []      # freed when the launch retires
    try:
        # (only a cooperative launch passes a workspace: the engine's default is none)
        extra: dict[str, Any] = {"grid_workspace": ws.va} if ws is not None else {}
        heap = await launch_heap(handle, mod.kernels.get(kernel.name))
        if heap is not None:        # (likewise only a kernel calling malloc gets a heap)
            extra["heap"] = heap
        await _compiled_ready(mod, kernel.name)
        arena = await new_arena(handle, mod, kernel.name)
        if arena is not None:
            owned.append(arena[0])
            extra["device_runtime"] = arena[1]
        launch = mod.launch(kernel.name, grid=tuple(kernel.grid), block=tuple(kernel.block),
                            params=bytes(kernel.params), mmu=handle.mmu,
                            data_base=kernel.data_addr, shared_dynamic=kernel.shared_dynamic,
                            textures=handle.textures, **extra)
        launch.printf = handle.printf
        await launch_slot(handle)  # bounded queue: waits while launches_queued_max are in flight
        return handle.enqueue("launch", lambda fence: _run_launch(handle, fence, launch, owned),
                              stream).id
    except BaseException:
        with trio.CancelScope(shield=True):
            for obj in owned:
                await free_workspace(handle, obj)
        raise


async def _compiled_ready(mod: Any, name: str) -> None:
    """Under the ``jit`` engine policy a launch runs its kernel compiled: wait for that
    kernel's compile on a worker thread, never on the event loop, so that every other call
    of every tenant goes on meanwhile (a cancelled caller stops waiting; the compile goes on)."""
    if name in mod.kernels and mod.jit.must_wait(name):
        await trio.to_thread.run_sync(mod.jit.wait_kernel, name, abandon_on_cancel=True)


async def _cooperative(handle: Handle, mod: Any, kernel: GdevKernel) -> MemObject:
    """A cooperative launch's grid workspace, once its grid is known to fit (coop.py)."""
    info = mod.kernels.get(kernel.name)
    if info is not None:        # (an unknown entry is the engine's EINVAL)
        check_coresident(handle, info, kernel)
    return await new_workspace(handle)


async def _run_launch(handle: Handle, fence: Fence, launch: Any,
                      owned: list[MemObject]) -> None:
    """Run ``launch`` on the compute engine, one slice per grant, until it ends; then free
    the memory it ``owned`` (a cooperative launch's grid workspace, coop.py; the device
    runtime's parameter buffers, devrt.py).

    Each slice: wait for the engine (the scheduler), pin and bring back the context's memory,
    hand the job to the engine and wait for its interrupt.  A job the scheduler preempted
    comes back *suspended*: its pins are dropped (so a suspended launch never holds memory
    another context's swap-in waits for) and it arrives again (docs/scheduling.md).
    """
    try:
        await _run_slices(handle, fence, launch)
    finally:
        with trio.CancelScope(shield=True):
            for obj in owned:
                await free_workspace(handle, obj)


async def _run_slices(handle: Handle, fence: Fence, launch: Any) -> None:
    sched = handle.system.scheduler
    job = LaunchJob(launch, lambda j: None, tag=fence, limit_s=sched.preempter.limit(handle),
                    group=handle)
    fence.job = job
    while True:
        await sched.compute_begin(handle)
        job.suspended = False               # a slice that fails before the engine: counted
        try:
            async with resident_all(handle):  # the paper: swap back every evicted object
                await _slice(handle, job)
        finally:
            sched.compute_end(handle, job, suspended=job.suspended and job.error is None)
        if not job.suspended:
            break
    if job.error is not None:
        if job.error.errno == errno.ETIME:
            sched.timed_out(handle)
        raise job.error


async def _slice(handle: Handle, job: LaunchJob) -> None:
    """Give ``job`` the engine until it ends or yields; a cancelled caller cancels the job
    and still waits for the engine to let it go (the job cannot be recalled)."""
    token = handle.system.token
    assert token is not None
    done = trio.Event()
    job.notify = lambda j: token.run_sync_soon(done.set)
    handle.system.scheduler.compute_started(handle, job)
    handle.phys.compute.submit(job)
    try:
        await done.wait()
    except trio.Cancelled:
        job.cancel()
        with trio.CancelScope(shield=True):
            await done.wait()
        raise


async def gsync(handle: Handle, fence_id: int, timeout: float | None = None) -> None:
    """Wait for the operation ``fence_id`` (from glaunch or an _async copy) to finish.

    ``fence_id`` 0 returns at once; an id no longer in flight has finished.  ``timeout`` in
    seconds (None: forever).  Errors: EBADF; EINVAL (id out of range); ETIME (timeout); the
    context's sticky fault (a KernelFault with EFAULT for an illegal address).
    """
    check_handle(handle)
    if isinstance(fence_id, bool) or not isinstance(fence_id, int) or \
            not 0 <= fence_id < 4096:
        raise GdevError(errno.EINVAL, f"fence id out of range: {fence_id!r}")
    check_timeout(timeout)
    fence = handle.pending.get(fence_id) if fence_id else None
    if fence is not None:
        await wait_all([fence.done], timeout, f"fence {fence_id}")
    else:
        await trio.lowlevel.checkpoint()
    handle.check_fault()


async def gbarrier(handle: Handle, timeout: float | None = None) -> None:
    """Wait until every operation the handle issued so far, in every stream, has finished
    (Gdev's barrier).

    Errors: EBADF; ETIME (timeout); the context's sticky fault.
    """
    check_handle(handle)
    check_timeout(timeout)
    await wait_all(handle.streams.tails(), timeout, "barrier")
    handle.check_fault()


async def gprintf_drain(handle: Handle, size: int = D.PRINTF_FIFO) -> bytes:
    """Take up to ``size`` bytes (1..PRINTF_FIFO) of what the context's kernels printed,
    oldest first (printfbuf.py).  Errors: EBADF; EINVAL for a bad size."""
    await trio.lowlevel.checkpoint()
    check_handle(handle)
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= D.PRINTF_FIFO:
        raise GdevError(errno.EINVAL, f"printf drain size must be 1..{D.PRINTF_FIFO}: {size!r}")
    return handle.printf.drain(size)


def check_timeout(timeout: float | None) -> None:
    """EINVAL unless ``timeout`` is None or a number of seconds >= 0."""
    if timeout is not None and (isinstance(timeout, bool) or
                                not isinstance(timeout, int | float) or not timeout >= 0):
        raise GdevError(errno.EINVAL, f"timeout must be None or >= 0 seconds: {timeout!r}")


async def wait_all(events: list[trio.Event], timeout: float | None, what: str) -> None:
    """Wait for every one of ``events``; ETIME naming ``what`` after ``timeout`` seconds
    (None: forever; 0: a poll, with one checkpoint)."""
    if not events:
        await trio.lowlevel.checkpoint()
    with trio.move_on_after(float("inf") if timeout is None else timeout):
        for ev in events:
            await ev.wait()
    if not all(ev.is_set() for ev in events):
        raise GdevError(errno.ETIME, f"{what} did not complete within {timeout} s")
