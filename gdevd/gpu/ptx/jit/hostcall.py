"""Calls from compiled kernels into the daemon's Python: device ``printf``.

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
        self._handle = _ffi.new_handle(self)

    def pointers(self, ffi) -> tuple[object, object]:
        """(host_printf, host_arg) for a ``struct jctx`` of ``ffi``."""
        return (ffi.cast("void *", int(_ffi.cast("uintptr_t", _printf))),
                ffi.cast("void *", int(_ffi.cast("uintptr_t", self._handle))))

    def bind(self, launch) -> None:
        """Serve ``launch`` (its page table, parameters and printf sink) from now on."""
        self.launch, self.fault = launch, None
        self.mem.mmu, self.mem.params = launch.mmu, launch.param_buf

    def release(self) -> None:
        """Drop the finished launch (pooled chunks must not keep it alive)."""
        self.launch = self.mem.mmu = None

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


@_ffi.callback("int32_t(void *, int32_t *, int32_t, int64_t, int64_t, int64_t)")
def _printf(arg, lanes, n: int, fmt: int, buf: int, ret: int) -> int:
    calls = _ffi.from_handle(arg)
    try:
        with calls.launch.host_lock:
            calls.vprintf(_ffi.unpack(lanes, n), fmt, buf, ret)
        return 0
    except Exception as exc:    # noqa: BLE001 - every failure is the launch's fault
        calls.fault = exc
        return 1
