"""Shared-memory accesses that cannot fault: the address's range, proven within a block.

A table lookup ``T[(x >> 8) & 0xff]`` computes its shared address as a symbol's offset plus
a masked index; when every value the address can take lies inside the kernel's static
shared memory, aligned to the access, the bounds check (and its fault bookkeeping) is
dropped.  The proof is an interval and known-trailing-zeros evaluation of the block's
straight-line code from the registers known to be constants at each instruction
(:meth:`.uniform.Uniformity.constants`); a register written by an instruction this module
does not model, or read before the block writes it, is unknown (any value of its width).
A guarded write makes its register unknown.
"""

from __future__ import annotations

from ..regalloc import defs_uses
from ..syntax import Addr, Imm, Reg
from .uniform import _int_bits

Range = tuple[int, int, int]     # (lowest, highest, known trailing zero bits)


def _tz(v: int) -> int:
    return 64 if v == 0 else (v & -v).bit_length() - 1


def _read(op, env: dict[str, Range], consts: dict[str, int], bits: int) -> Range | None:
    """Range of an operand read as a ``bits``-wide unsigned value."""
    if isinstance(op, Imm) and isinstance(op.value, int):
        v = op.value & ((1 << bits) - 1)
        return v, v, _tz(v)
    if isinstance(op, Reg):
        if op.name in env:
            return env[op.name]
        if op.name in consts:
            v = consts[op.name] & ((1 << bits) - 1)
            return v, v, _tz(v)
    return None


def _eval(base: str, a: Range | None, b: Range | None, bits: int) -> Range | None:
    """Range of ``a <op> b`` when it cannot wrap (None when not modelled)."""
    top = (1 << bits) - 1
    if base == "and" and b is not None and b[0] == b[1]:
        return 0, b[1], b[2]
    if base == "and" and a is not None and a[0] == a[1]:
        return 0, a[1], a[2]
    if base == "shr" and b is not None and b[0] == b[1] and b[0] < bits:
        lo, hi = (a[0], a[1]) if a is not None else (0, top)
        return lo >> b[0], hi >> b[0], 0
    if a is None or b is None:
        return None
    if base == "shl" and b[0] == b[1] and (a[1] << b[0]) <= top:
        return a[0] << b[0], a[1] << b[0], min(a[2] + b[0], 64)
    if base == "add" and a[1] + b[1] <= top:
        return a[0] + b[0], a[1] + b[1], min(a[2], b[2])
    if base == "mov":
        return a
    return None


def _step(ins, env: dict[str, Range], consts: dict[str, int]) -> None:
    """Update ``env`` with the ranges of the registers instruction ``ins`` writes."""
    defs, _ = defs_uses(ins)
    parts = ins.opcode.split(".")
    bits = _int_bits(parts[-1])
    out = None
    if ins.guard is None and len(defs) == 1 and bits is not None and \
            parts[0] in ("and", "shr", "shl", "add", "mov") and 2 <= len(ins.args) <= 3:
        srcs = [_read(x, env, consts, bits) for x in ins.args[1:]]
        if parts[0] == "shr" and "s" + str(bits) == parts[-1]:
            srcs[0] = srcs[0] if srcs[0] is not None and srcs[0][1] >> (bits - 1) == 0 \
                else None      # an arithmetic shift of a possibly negative value
            if srcs[0] is None:
                srcs = []
        if srcs:
            out = _eval(parts[0], srcs[0], srcs[1] if len(srcs) > 1 else srcs[0], bits)
    for d in defs:
        env.pop(d, None)
    if out is not None:
        env[defs[0]] = out


def safe_shared(blk, consts: list[dict[str, int]], static_shared: int) -> set[int]:
    """Indices of the block's unguarded ``ld``/``st.shared`` whose every possible address is
    aligned and inside the first ``static_shared`` bytes of shared memory."""
    env: dict[str, Range] = {}
    safe = set()
    for k, ins in enumerate(blk.instrs):
        parts = ins.opcode.split(".")
        if parts[0] in ("ld", "st") and "shared" in parts and ins.guard is None:
            a = ins.args[1] if parts[0] == "ld" else ins.args[0]
            size = _access_size(parts)
            if isinstance(a, Addr) and isinstance(a.base, Reg) and size:
                r = _read(a.base, env, consts[k], 64)
                if r is not None and a.offset >= 0 and \
                        r[1] + a.offset + size <= min(static_shared, 1 << 32) and \
                        min(r[2], _tz(a.offset)) >= _tz(size):
                    safe.add(k)
        _step(ins, env, consts[k])
    return safe


def _access_size(parts: list[str]) -> int | None:
    """Bytes of an ld/st (vector count times the element width)."""
    bits = _int_bits(parts[-1]) or {"f32": 32, "f64": 64, "f16": 16}.get(parts[-1])
    if bits is None or bits < 8:
        return None
    n = 4 if "v4" in parts else 2 if "v2" in parts else 1
    return n * bits // 8
