"""Translation of surface loads and stores (``suld.b``, ``sust.b``, see ``ops_surf.py``): two
passes over the active lanes (surf.h): every lane's place first, with the fault the
interpreter would raise, then the elements moved through the page table.  The statement
tests its own guard (lanes whose guard is false take no part in either pass)."""

from __future__ import annotations

from ..ops_surf import GEOMETRY, MODES, operands
from ..ptxtypes import size_of
from .arith import tr
from .operands import Unsupported

# a raw statement (its own lane loops) that tests the instruction's guard itself (cgen.py)
GUARDED_RAW = "raw-guarded"
_CTYPES = {"b8": "uint8_t", "b16": "uint16_t", "b32": "uint32_t", "b64": "uint64_t"}
_IDLE = 255     # a lane whose guard is false: no place, no fault, no element


def _parsed(ins, addr_k: int):
    try:
        return operands(ins, addr_k)
    except Exception as exc:    # a PtxError: the interpreter rejected it at load already
        raise Unsupported(f"{ins.base}: {exc}") from exc


def _access(ins, ops, addr_k: int, move) -> tuple[str, str]:
    """The two passes of a surface access; ``move(ctype, esize, vec, registers, line)`` is
    the C of lane i's elements once all lanes are placed (``sva_[i]`` its address, ``st_[i]``
    what surf_locate found)."""
    geom, vec, t, mode, obj, coords, vals = _parsed(ins, addr_k)
    esize, g, line = size_of(t), list(GEOMETRY).index(geom), ins.line
    x, y, z = ("0" if c is None else f"(int32_t){ops.rd(c, 's32')}" for c in coords)
    guard = "1" if ins.instr.guard is None else ops.guard(ins.instr.guard)
    locate = (f"const struct jtex *t_ = 0; uint64_t va_ = 0; const uint64_t h_ = "
              f"{ops.rd(obj, 'u64')}; const int r_ = surf_locate(c, h_, {g}, {x}, {y}, {z}, "
              f"{esize * vec}, {esize}, {MODES.index(mode)}, &t_, &va_); "
              f"st_[i] = (uint8_t)r_; sva_[i] = va_; "
              f"if (r_ >= SURF_INVALID && surf_worse(r_, h_, &kr_, &kh_)) "
              f"{{ kt_ = t_; kva_ = va_; }}")
    return GUARDED_RAW, (
        f"{{ uint64_t sva_[1024]; uint8_t st_[1024]; int kr_ = SURF_OK; "
        f"uint64_t kh_ = 0, kva_ = 0; const struct jtex *kt_ = 0; "
        f"LOOP(st_[i] = {_IDLE}; if ({guard}) {{ {locate} }}); "
        f"if (kr_ != SURF_OK) {{ surf_fault(c, kr_, kt_, {g}, kva_); FAULT({line}); }} "
        f"LOOP({move(_CTYPES[t], esize, vec, vals, line)}); }}")


def _elements(acc: str, esize: int, vec: int, body: str, line: int) -> str:
    return (f"for (int e_ = 0; e_ < {vec}; e_++) {{ uint8_t *p_ = gptr(c, sva_[i] + "
            f"(uint64_t)e_ * {esize}u, {esize}, {acc}); if (!p_) FAULT({line}); {body} }}")


@tr("suld")
def t_suld(ins, ops) -> tuple[str, str]:
    """suld.b.{1d,2d,3d,a1d,a2d}{,.v2,.v4}.{b8..b64}.{trap,clamp,zero}: lanes .zero leaves
    out read zeros."""
    def move(ct: str, esize: int, vec: int, dests, line: int) -> str:
        writes = " ".join(ops.wr(d, ins.types[0], f"v_[{k}]") for k, d in enumerate(dests))
        load = _elements("GDEV_ACC_READ", esize, vec, f"memcpy(&v_[e_], p_, {esize});", line)
        return (f"if (st_[i] != {_IDLE}) {{ {ct} v_[{vec}] = {{0}}; "
                f"if (st_[i] == SURF_OK) {{ {load} }} {writes} }}")
    return _access(ins, ops, 1, move)


@tr("sust")
def t_sust(ins, ops) -> tuple[str, str]:
    """sust.b of the same forms: lanes .zero leaves out store nothing."""
    def move(ct: str, esize: int, vec: int, srcs, line: int) -> str:
        reads = " ".join(f"v_[{k}] = ({ct}){ops.rd(s, ins.types[0])};"
                         for k, s in enumerate(srcs))
        store = _elements("GDEV_ACC_WRITE", esize, vec, f"memcpy(p_, &v_[e_], {esize});", line)
        return f"if (st_[i] == SURF_OK) {{ {ct} v_[{vec}]; {reads} {store} }}"
    return _access(ins, ops, 0, move)
