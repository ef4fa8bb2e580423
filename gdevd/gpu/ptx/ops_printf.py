"""The interpreter's ``vprintf`` (device printf): each executing lane, in lane order, formats
its call (printf.py) and hands the text to the launch's printf sink (``env.printf``: anything
with ``write(bytes)`` and optionally ``full()``, the runtime's per-context buffer; None drops
the text, as a kernel launched with no host to print it).  The return value is the number of
arguments, as CUDA's, or -1 without reading anything once the sink is full.
The format and ``%s`` strings are read through the lane's generic address space: a bad
address faults the launch like a load.  The compiled engine leaves kernels that print to
the interpreter (jit/cgen.py rejects ``builtin.vprintf``)."""

from __future__ import annotations

import numpy as np

from .assertion import c_string
from .printf import MAX_STRING, format_call
from .syntax import Group

_U8 = np.dtype(np.uint8)


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
            if env.printf is not None:
                full = getattr(env.printf, "full", lambda: False)
                for k, lane in enumerate(lanes):
                    # a full buffer costs nothing more (a kernel printing without end must
                    # not hold the engine formatting text nobody will see): -1, as CUDA's
                    # printf when its buffer is full
                    counts[k] = -1 if full() else _print(env, int(lane), fmt_var, buf_var)
            for s in stores:
                s[lanes, :4] = counts.view(np.uint8).reshape(-1, 4)
        return run
    return bind


def _print(env, lane: int, fmt_var: np.ndarray, buf_var: np.ndarray) -> int:
    fmt = int(fmt_var[lane, :8].view(np.uint64)[0])
    buf = int(buf_var[lane, :8].view(np.uint64)[0])
    if not fmt:
        return -1
    lanes = np.array([lane], np.int64)

    def read(addr: int, n: int) -> bytes:
        return env.mem.load("generic", np.array([addr], np.uint64), lanes, _U8, n).tobytes()

    def string(addr: int) -> bytes:
        return c_string(read, addr, MAX_STRING)

    text, count = format_call(string(fmt), lambda off, n: read(buf + off, n), string)
    env.printf.write(text)
    return count
