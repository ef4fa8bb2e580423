"""The interpreter's device ``malloc``/``free`` (and ``__nv_aligned_device_malloc``, which
nvcc emits as ``__cuda_syscall_aligned_malloc(size, align)``): each executing lane, in lane
order, calls the launch's heap allocator (``env.heap``: gdevd/gpu/heap.py, the context's
device heap that the runtime reserves before a kernel calling them first runs; None when
the launch has no heap, and then every malloc returns NULL).

``free`` of 0 does nothing; ``free`` of an address no malloc returned (or freed twice)
faults the launch as an illegal address naming the kernel and PTX line (CUDA leaves it
undefined: the allocator's metadata lives in the daemon, so nothing else can follow from
it).  The compiled engine runs the same C allocator (jit/heapops.py)."""

from __future__ import annotations

import numpy as np

from gdevd.errors import MmuFault
from gdevd.gpu.heap import BAD_FREE, GRANULE

from .syntax import Group

_U64 = np.dtype(np.uint64)
# arguments (size, alignment or pointer) and results of each call
SIGNATURES = {"malloc": (1, 1), "free": (1, 0), "__cuda_syscall_aligned_malloc": (2, 1)}


def heap_binder(ins, instr):
    """Binder of ``builtin.malloc``/``builtin.free``/``builtin.__cuda_syscall_aligned_malloc``
    (linker.py): arguments and result in the call's ``.param`` variables."""
    name = instr.opcode.split(".", 1)[1]
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and isinstance(instr.args[1], Group) \
        else ()
    if (len(params), len(rets)) != SIGNATURES[name]:
        raise ins.fail(f"{name} takes {SIGNATURES[name][0]} argument(s) and returns "
                       f"{SIGNATURES[name][1]} value(s)")

    def bind(env):
        args = [env.pvars[p.name] for p in params]
        stores = [env.pvars[r.name] for r in rets]

        def values(var, lanes) -> np.ndarray:
            return np.ascontiguousarray(var[lanes, :8]).view(_U64)[:, 0]

        def run_free(idx):
            heap = env.heap
            for va in values(args[0], env.lanes_all if idx is None else idx).tolist():
                if va and (heap is None or not heap.free(va)):
                    raise MmuFault(va, BAD_FREE)

        def run_malloc(idx):
            lanes = env.lanes_all if idx is None else idx
            sizes = values(args[0], lanes).tolist()
            aligns = values(args[1], lanes).tolist() if len(args) > 1 else [GRANULE] * \
                len(sizes)
            heap = env.heap
            out = np.array([heap.malloc(n, a) if heap is not None else 0
                            for n, a in zip(sizes, aligns, strict=True)], _U64)
            for s in stores:
                s[lanes, :8] = out.view(np.uint8).reshape(-1, 8)
        return run_free if name == "free" else run_malloc
    return bind
