"""Device ``printf`` (``vprintf``) of both engines: each executing lane, in lane order,
formats its call (printf.py) and hands the text to the launch's printf sink (the runtime's
per-context buffer, or None to drop the text, as a kernel launched with no host to print it)
through the launch's :class:`~.printorder.BlockOrder` (``env.printf``), which keeps the
launch's text in block order on both engines.  The return value is
the number of arguments, as CUDA's, or -1 without reading anything once the sink is full.
The format and ``%s`` strings are read through the lane's generic address space: a bad
address faults the launch like a load.  The interpreter calls :func:`print_lane` from its
binder; the compiling engine from its kernels' call into the host (jit/hostcall.py), on a
view of the compiled block's memory."""

from __future__ import annotations

import numpy as np

from .assertion import c_string
from .printf import MAX_STRING, format_call
from .syntax import Group


def vprintf_binder(ins, instr):
    """Binder of ``builtin.vprintf`` (linker.py): returns in the call's return variable."""
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and isinstance(instr.args[1], Group) \
        else ()
    if len(params) != 2:
        raise ins.fail("vprintf takes a format and an argument buffer")

    def bind(env):
        stores = [env.pvars[r.name] for r in rets]
        fmt_var, buf_var = (env.pvars[p.name] for p in params)

        def run(idx):
            lanes = env.lanes_all if idx is None else idx
            counts = np.zeros(len(lanes), np.int32)
            first, tpb = env.geom.first_block, env.geom.tpb
            for k, lane in enumerate(lanes):
                counts[k] = print_lane(env.mem, env.printf, first + int(lane) // tpb, int(lane),
                                       int(fmt_var[lane, :8].view(np.uint64)[0]),
                                       int(buf_var[lane, :8].view(np.uint64)[0]))
            for s in stores:
                s[lanes, :4] = counts.view(np.uint8).reshape(-1, 4)
        return run
    return bind


def print_lane(mem, order, block: int, lane: int, fmt: int, buf: int) -> int:
    """The ``vprintf(fmt, buf)`` of lane ``lane`` (block ``block``): its text written to
    ``order`` (the launch's :class:`~.printorder.BlockOrder`), its return value.

    ``mem`` reads the lane's generic addresses (a :class:`~.memory.MemSys`; its MmuFault
    is the launch's fault).  Without a sink nothing is read and 0 returned; a full sink
    costs nothing more (a kernel printing without end must not hold the engine formatting
    text nobody will see): -1, as CUDA's printf when its buffer is full."""
    if order is None:
        return 0
    if order.full() or not fmt:
        return -1
    def read(addr: int, n: int) -> bytes:
        return mem.load_bytes(addr, n, lane)

    def string(addr: int) -> bytes:
        return c_string(read, addr, MAX_STRING)

    text, count = format_call(string(fmt), lambda off, n: read(buf + off, n), string)
    order.write(block, text)
    return count
