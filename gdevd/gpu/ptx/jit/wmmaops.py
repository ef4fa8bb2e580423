"""Translation of ``wmma`` (:mod:`gdevd.gpu.ptx.ops_wmma`, layout and arithmetic in
:mod:`gdevd.gpu.ptx.wmma_frag`) and ``mma.sync`` (:mod:`gdevd.gpu.ptx.ops_mma`) to C.

``wmma.load``/``wmma.store`` are *ordered* statements: each lane, in lane order, resolves
the address of every element of its share of the fragment (lane l holds logical elements
``l*E ..`` modulo the matrix size) through the access's pointer function, with the
interpreter's faults, and moves the bytes between memory and its registers.
``wmma.mma`` and ``mma.sync`` are *raw*: they gather each warp's A, B and C from the
executing lanes' registers through each fragment's table of element positions (elements
no lane holds are 0, later lanes overwrite earlier ones, as the interpreter's fancy
indexing does), compute D element by element in the interpreter's order (C plus the exact
products in k order in double, or ``fma`` for ``.f64``, or 64-bit integers) and scatter D
back to every executing lane.
"""

from __future__ import annotations

from ..errors import PtxError
from ..ops_mma import mma_form
from ..ops_wmma import _frag_of, _mma_types, _shape
from ..syntax import Addr, Imm, Reg, Vec
from ..wmma_frag import frag
from .arith import tr
from .memops import ACC_R, ACC_W, address, pointer, space_of
from .operands import Unsupported

# element type -> C expression of its value (a double or int64_t) from raw bits q_
# (not named u_/f_/h_: the prelude's U2F-style macros declare those)
_VALUE = {"f16": "(double)H2F((uint16_t)q_)", "bf16": "(double)U2F((uint32_t)q_ << 16)",
          "tf32": "(double)U2F((uint32_t)q_ & 0xFFFFE000u)", "f32": "(double)U2F((uint32_t)q_)",
          "f64": "U2D(q_)", "s8": "(int64_t)(int8_t)q_", "u8": "(int64_t)(uint8_t)q_",
          "s32": "(int64_t)(int32_t)q_"}
# D's type -> bits of the value x_, and its saturation (satfinite)
_BITS = {"f16": "(uint64_t)F2H(x_)", "f32": "(uint64_t)F2U((float)x_)", "f64": "D2U(x_)",
         "s32": "(uint64_t)(uint32_t)x_"}
_SAT = {"f16": "if ((b_ & 0x7FFF) == 0x7C00) b_ = (b_ & 0x8000) | 0x7BFF;",
        "f32": "if ((b_ & 0x7FFFFFFF) == 0x7F800000) b_ = (b_ & 0x80000000) | 0x7F7FFFFF;",
        "f64": "if ((b_ & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull) "
               "b_ = (b_ & 0x8000000000000000ull) | 0x7FEFFFFFFFFFFFFFull;",
        "s32": ""}


def _checked(fn, ins, *args):
    try:
        return fn(ins, *args)
    except PtxError as exc:         # the interpreter refused it at load already
        raise Unsupported(f"wmma: {exc}") from exc


def _regs(operand, count: int) -> list:
    if not isinstance(operand, Vec) or len(operand.items) != count or \
            not all(isinstance(r, Reg) for r in operand.items):
        raise Unsupported("wmma registers")
    return list(operand.items)


@tr("wmma")
def t_wmma(ins, ops):
    """wmma.load / wmma.store / wmma.mma (every form the interpreter decodes)."""
    if "mma" in ins.flags:
        return _mma(ins, ops)
    if "load" not in ins.flags and "store" not in ins.flags:
        raise Unsupported("wmma operation")
    return "ordered", _memory(ins, ops, "load" in ins.flags)


def _memory(ins, ops, load: bool) -> str:
    f = _checked(_frag_of, ins, load)
    row = "col" not in ins.flags
    regs = _regs(ins.args[0 if load else 1], f.nregs)
    a = ins.args[1 if load else 0]
    if not isinstance(a, Addr) or len(ins.args) not in (2, 3):
        raise Unsupported("wmma operands")
    stride = ins.args[2] if len(ins.args) == 3 else Imm(f.cols if row else f.rows)
    space = "shared" if "shared::cta" in ins.flags else space_of(ins)
    sz, size, rsz = f.mem_dt.itemsize, f.rows * f.cols, 8 if f.reg_t == "b64" else 4
    off = "r_ * s_ + c_" if row else "c_ * s_ + r_"
    ptr = pointer(space, "(b_ + (uint64_t)(off_ * " + str(sz) + "))", sz, sz,
                  ACC_R if load else ACC_W)
    move = "memcpy(w_ + e_ * {0}, p_, {0});" if load else "memcpy(p_, w_ + e_ * {0}, {0});"
    ut = "uint64_t" if rsz == 8 else "uint32_t"
    regs_c = " ".join(
        f"{{ {ut} v_; memcpy(&v_, w_ + {k * rsz}, {rsz}); {ops.wr(r, f.reg_t, 'v_')} }}"
        if load else f"{{ {ut} v_ = {ops.rd(r, f.reg_t)}; memcpy(w_ + {k * rsz}, &v_, {rsz}); }}"
        for k, r in enumerate(regs))
    loop = (f"for (int e_ = 0; e_ < {f.per_lane}; e_++) {{ "
            f"int64_t ix_ = ((int64_t)(i & 31) * {f.per_lane} + e_) % {size}; "
            f"int64_t r_ = ix_ / {f.cols}, c_ = ix_ % {f.cols}; int64_t off_ = {off}; "
            f"uint8_t *p_ = {ptr}; if (!p_) FAULT({ins.line}); {move.format(sz)} }}")
    return (f"{{ uint64_t b_ = {address(ops, a)}; int64_t s_ = (int64_t){ops.rd(stride, 'u32')}; "
            f"uint8_t w_[{f.nregs * rsz}]; " +
            (f"{loop} {regs_c} }}" if load else f"{regs_c} {loop} }}"))


def _table(f, name: str) -> str:
    """A static table ``name`` of each lane's element positions (row-major in its matrix)."""
    return (f"static const uint16_t {name}[{32 * f.per_lane}] = "
            f"{{ {', '.join(str(int(x)) for x in f.table.ravel())} }};")


def _gather(ops, regs, f, name: str, table: str) -> str:
    """C for lane i: its registers' elements into the warp's matrix ``name``."""
    rsz, sz = (8 if f.reg_t == "b64" else 4), f.mem_dt.itemsize
    ut = "uint64_t" if rsz == 8 else "uint32_t"
    fill = " ".join(f"{{ {ut} v_ = {ops.rd(r, f.reg_t)}; memcpy(w_ + {k * rsz}, &v_, {rsz}); }}"
                    for k, r in enumerate(regs))
    return (f"{{ uint8_t w_[{f.nregs * rsz}]; {fill} for (int e_ = 0; e_ < {f.per_lane}; "
            f"e_++) {{ uint64_t q_ = 0; memcpy(&q_, w_ + e_ * {sz}, {sz}); "
            f"{name}[i >> 5][{table}[(i & 31) * {f.per_lane} + e_]] = {_VALUE[f.elem]}; }} }}")


def _mma(ins, ops):
    ab, tc, td = _checked(_mma_types, ins)
    shape = _checked(_shape, ins)
    frags = tuple(frag(k, shape, e) for k, e in (("a", ab), ("b", ab), ("c", tc), ("d", td)))
    if None in frags or len(ins.args) != 4:
        raise Unsupported("wmma.mma form")
    regs = [_regs(ins.args[k], f.nregs) for k, f in enumerate((frags[3], *frags[:3]))]
    return "raw", mma_c(ops, regs, frags, ab, td, "satfinite" in ins.flags)


@tr("mma")
def t_mma(ins, ops):
    """mma.sync.aligned (every form the interpreter decodes, :mod:`ops_mma`)."""
    regs, frags, ta, td, sat = _checked(mma_form, ins)
    return "raw", mma_c(ops, regs, frags, ta, td, sat)


def mma_c(ops, regs, frags, ab: str, td: str, sat: bool) -> str:
    """C of D = A x B + C per warp (``regs``: D, A, B, C; ``frags``: A, B, C, D)."""
    fa, fb, fc, fd = frags
    m, n, k = fa.rows, fb.cols, fa.cols
    num = "int64_t" if ab in ("s8", "u8") else "double"
    step = "x_ = fma(A_[w_][r_ * K_ + k_], B_[w_][k_ * N_ + c_], x_);" if ab == "f64" else \
        "x_ += A_[w_][r_ * K_ + k_] * B_[w_][k_ * N_ + c_];"
    clamp = ("if (x_ > 2147483647) x_ = 2147483647; if (x_ < -2147483648ll) x_ = -2147483648ll;"
             if td == "s32" and sat else "")
    dsz, drsz = fd.mem_dt.itemsize, 8 if fd.reg_t == "b64" else 4
    dut = "uint64_t" if drsz == 8 else "uint32_t"
    scatter = " ".join(f"{{ {dut} v_; memcpy(&v_, w_ + {j * drsz}, {drsz}); "
                       f"{ops.wr(r, fd.reg_t, 'v_')} }}" for j, r in enumerate(regs[0]))
    tables = " ".join(_table(f, f"T{x}_") for f, x in zip(frags, "ABCD", strict=True))
    return (
        f"{{ enum {{ M_ = {m}, N_ = {n}, K_ = {k} }}; {tables} "
        f"static __thread {num} A_[32][M_ * K_], B_[32][K_ * N_], C_[32][M_ * N_]; "
        f"static __thread uint64_t D_[32][M_ * N_]; uint8_t on_[32] = {{0}}; "
        f"LOOP(on_[i >> 5] = 1;); for (int w_ = 0; w_ < 32; w_++) if (on_[w_]) {{ "
        f"memset(A_[w_], 0, sizeof A_[w_]); memset(B_[w_], 0, sizeof B_[w_]); "
        f"memset(C_[w_], 0, sizeof C_[w_]); }} "
        f"LOOP({_gather(ops, regs[1], fa, 'A_', 'TA_')} {_gather(ops, regs[2], fb, 'B_', 'TB_')} "
        f"{_gather(ops, regs[3], fc, 'C_', 'TC_')}); "
        f"for (int w_ = 0; w_ < 32; w_++) if (on_[w_]) for (int r_ = 0; r_ < M_; r_++) "
        f"for (int c_ = 0; c_ < N_; c_++) {{ {num} x_ = C_[w_][r_ * N_ + c_]; "
        f"for (int k_ = 0; k_ < K_; k_++) {step} {clamp} uint64_t b_ = {_BITS[td]}; "
        f"{_SAT[td] if sat else ''} D_[w_][r_ * N_ + c_] = b_; }} "
        f"LOOP(uint8_t w_[{fd.nregs * drsz}]; for (int e_ = 0; e_ < {fd.per_lane}; e_++) {{ "
        f"uint64_t b_ = D_[i >> 5][TD_[(i & 31) * {fd.per_lane} + e_]]; "
        f"memcpy(w_ + e_ * {dsz}, &b_, {dsz}); }} {scatter}); }}")
