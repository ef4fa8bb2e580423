"""Calls from compiled kernels into the daemon's Python: device ``printf`` and the device
runtime's calls (launches, streams, device-side copies and malloc: ops_devrt.py).

A kernel that prints calls ``c->host_printf(c->host_arg, lanes, n, fmt, buf, ret)``
(printfops.py) from its engine thread, which runs without the GIL, once per block step
with the lanes that print; the call takes the GIL (a cffi callback) and formats each
lane's call, in lane order, with the interpreter's own code
(:func:`~..ops_printf.print_lane`) on a :class:`~..memory.MemSys` laid over the compiled
block's buffers, so text, argument count and faults are the interpreter's.  Calls of one
launch take turns (``JitLaunch.host_lock``): the sink's "full?" and its write are one step,
as on the interpreter's single thread.  Any exception becomes the lane's fault: the call
returns nonzero and the launch raises what :attr:`HostCalls.fault` holds (launch.py).
"""

from __future__ import annotations

from typing import Any

import cffi
import numpy as np

from .. import ops_devrt
from ..memory import MemSys
from ..ops_printf import print_lane

_ffi = cffi.FFI()


class HostCalls:
    """One chunk's side of its host calls: the memory view over its buffers, the launch
    it runs (between bind and release) and the last call's exception."""

    def __init__(self, ctx, bufs: dict, pv_stride: int, nt: int, shared_size: int,
                 local_size: int) -> None:
        self.ctx = ctx          # the chunk's struct jctx: the block it runs
        self.mem = MemSys(None, nt, nt, shared_size, local_size)
        # the chunk's block is the view's one block and its lanes the view's threads: the
        # same offsets as prelude.h's sptr/lptr (strides rounded to 16 alike)
        self.mem.shared, self.mem.local = bufs["shared"], bufs["local"]
        self.pvars, self.stride = bufs["pvars"], pv_stride
        self.launch: Any = None
        self.fault: BaseException | None = None
        self._view: _GridView | None = None
        self._handle = _ffi.new_handle(self)

    def pointers(self, ffi) -> tuple[object, object, object]:
        """(host_printf, host_devrt, host_arg) for a ``struct jctx`` of ``ffi``."""
        return tuple(ffi.cast("void *", int(_ffi.cast("uintptr_t", p)))
                     for p in (_printf, _devrt, self._handle))

    def bind(self, launch) -> None:
        """Serve ``launch`` (its page table, parameters and printf sink) from now on."""
        self.launch, self.fault = launch, None
        self.mem.mmu, self.mem.params = launch.mmu, launch.param_buf

    def release(self) -> None:
        """Drop the finished launch (pooled chunks must not keep it alive)."""
        self.launch = self.mem.mmu = self._view = None

    def devrt(self, name: str, lanes: np.ndarray, places: list[int], ret: int,
              size: int) -> None:
        """Lanes ``lanes``' device-runtime call ``name``: argument variables at the
        (offset, size) ``places`` of their .param memory, each value written at ``ret``
        (``size`` bytes, if ``ret`` >= 0)."""
        rows = self.pvars.reshape(-1, self.stride)
        args = [rows[lanes, off:off + n] for off, n in zip(places[::2], places[1::2],
                                                             strict=True)]
        vals = ops_devrt.call(name, self._grid_view(), lanes, args)
        if ret >= 0:
            rows[lanes, ret:ret + size] = vals.view(np.uint8).reshape(-1, 8)[:, :size]

    def _grid_view(self) -> _GridView:
        """The handlers' view of this chunk's block (a new block: no last errors yet)."""
        block = int(self.ctx.block)
        if self._view is None or self._view.block != block:
            self._view = _GridView(self, block)
        self._view.devrt = self.launch.devrt
        return self._view

    def vprintf(self, lanes, fmt: int, buf: int, ret: int) -> None:
        """Lanes ``lanes``' calls, in order: format and argument addresses in their .param
        variables at offsets ``fmt`` and ``buf``, the count written at ``ret`` (if >= 0)."""
        launch, pv = self.launch, self.pvars
        block = int(self.ctx.block)
        for lane in lanes:
            base = lane * self.stride
            count = print_lane(self.mem, launch.order, block, lane,
                               int(pv[base + fmt:base + fmt + 8].view(np.uint64)[0]),
                               int(pv[base + buf:base + buf + 8].view(np.uint64)[0]))
            if ret >= 0:
                pv[base + ret:base + ret + 4] = np.frombuffer(
                    count.to_bytes(4, "little", signed=True), np.uint8)


def _serve(arg, work) -> int:
    """Run ``work(calls)`` for the chunk whose handle is ``arg``, in its launch's turn; 0,
    or 1 with the exception kept as the launch's fault."""
    calls = _ffi.from_handle(arg)
    try:
        with calls.launch.host_lock:
            work(calls)
        return 0
    except Exception as exc:    # noqa: BLE001 - every failure is the launch's fault
        calls.fault = exc
        return 1


@_ffi.callback("int32_t(void *, int32_t *, int32_t, int64_t, int64_t, int64_t)")
def _printf(arg, lanes, n: int, fmt: int, buf: int, ret: int) -> int:
    return _serve(arg, lambda calls: calls.vprintf(_ffi.unpack(lanes, n), fmt, buf, ret))


@_ffi.callback("int32_t(void *, char *, int32_t *, int32_t, int64_t *, int32_t, int64_t, "
               "int64_t)")
def _devrt(arg, name, lanes, n: int, places, nargs: int, ret: int, size: int) -> int:
    return _serve(arg, lambda calls: calls.devrt(
        _ffi.string(name).decode(), np.array(_ffi.unpack(lanes, n), np.int64),
        _ffi.unpack(places, 2 * nargs) if nargs else [], ret, size))


class _GridView:
    """What ops_devrt's handlers read of a grid (the interpreter's wave has the same):
    the chunk's memory, the launch's heap and device-runtime state, the block's threads'
    last errors, and the block of each lane."""

    def __init__(self, calls: HostCalls, block: int) -> None:
        self.block, self.mem, self.n = block, calls.mem, calls.mem.tpb
        self.heap = calls.launch.heap
        self.devrt = calls.launch.devrt
        self.devrt_errors: np.ndarray | None = None

    def block_of(self, lanes: np.ndarray) -> np.ndarray:
        """Every lane's block: the chunk's."""
        return np.full(len(lanes), self.block, np.int64)
