"""Device ``malloc``/``free`` in compiled kernels: one statement per lane, run in lane order
(an ``ordered`` instruction: every lane finishes the instruction before it), calling the
allocator of csrc/heap.h on the launch's heap (``c->heap``: the same C code and the same
struct the interpreter calls through gdevd/gpu/heap.py).  Arguments and results travel in
the call's ``.param`` variables, as the interpreter's ops_heap.py reads and writes them."""

from __future__ import annotations

from ..ops_heap import SIGNATURES
from ..syntax import Group
from .operands import Unsupported


def _pvar(ops, name: str) -> str:
    """Pointer expression of lane i's ``.param`` variable ``name``."""
    kind, off = ops.symbols.get(name, (None, 0))
    if kind != "pvar":
        raise Unsupported(f"heap call argument {name} is not a .param variable")
    return f"(c->pvars + (uint64_t)i * c->pv_stride + {off})"


def heap_call(instr, ops) -> str:
    """C statement of ``builtin.malloc``, ``builtin.free`` or
    ``builtin.__cuda_syscall_aligned_malloc`` for lane i (linker.py's builtin form)."""
    name = instr.opcode.split(".", 1)[1]
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and isinstance(instr.args[1], Group) \
        else ()
    if (len(params), len(rets)) != SIGNATURES[name]:
        raise Unsupported(f"{name} with {len(params)} arguments")
    args = [_pvar(ops, p.name) for p in params]
    if name == "free":
        # a free of an address no malloc returned faults as the interpreter's does
        return (f"{{ uint64_t v_; memcpy(&v_, {args[0]}, 8); if (heap_release(c->heap, v_)) "
                f"{{ c->fault_kind = F_HEAP; c->fault_va = v_; FAULT({instr.line}); }} }}")
    out = _pvar(ops, rets[0].name)
    align = f"memcpy(&a_, {args[1]}, 8); " if len(args) > 1 else ""
    return (f"{{ uint64_t n_, a_ = 16, v_; memcpy(&n_, {args[0]}, 8); {align}"
            f"v_ = c->heap ? heap_alloc(c->heap, n_, a_) : 0; memcpy({out}, &v_, 8); }}")
