"""Translation of warp- and block-collective instructions (shfl, vote, activemask, match,
redux, the reduction half of bar.red) to C.

These read other lanes, so each is a *raw* statement with its own loops instead of a
statement inside the block's lane loop: shfl first copies the source register of every
active lane of the block (an inactive source lane reads 0, as in the interpreter), then
computes each active lane's source lane; vote and activemask first take, per 32-lane
warp, the bits of the active lanes and of those whose predicate holds.  vote, match and
redux combine, for each lane, its group: the lanes of its member mask that execute the
instruction (``g_``), as :func:`gdevd.gpu.ptx.ops_warp.members` does; match compares the
lane's value with those of its group, redux folds its group's values.  bar.red's reduction
(``barred``, the block after the barrier) counts over the block's active lanes, as the
interpreter does.
"""

from __future__ import annotations

from ..syntax import Pair, Sink
from .arith import tr
from .operands import Unsupported

RAW = "raw"


@tr("shfl")
def t_shfl(ins, ops):
    """shfl[.sync].{up,down,bfly,idx}.b32 d[|p], a, b, c[, mask]."""
    modes = [m for m in ("up", "down", "bfly", "idx") if m in ins.flags]
    if len(modes) != 1:
        raise Unsupported("shfl mode")
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    a, b, c = ins.args[1:4]
    j = {"up": "lane_ - b_", "down": "lane_ + b_", "bfly": "lane_ ^ b_",
         "idx": "min_ | (b_ & ~seg_)"}[modes[0]]
    ok = "j_ >= max_" if modes[0] == "up" else "j_ <= max_"
    return RAW, (
        f"{{ uint32_t src_[1024]; for (int i = 0; i < n; i++) src_[i] = 0; "
        f"LOOP(src_[i] = {ops.rd(a, 'b32')};); "
        f"LOOP(int64_t lane_ = i & 31, b_ = (int64_t)({ops.rd(b, 'u32')}) & 31, "
        f"c_ = (int64_t)({ops.rd(c, 'u32')}); int64_t seg_ = (c_ >> 8) & 31, "
        f"clamp_ = c_ & 31; int64_t max_ = (lane_ & seg_) | (clamp_ & ~seg_), "
        f"min_ = lane_ & seg_; int64_t j_ = {j}; int64_t start_ = i - lane_; "
        f"int64_t size_ = n - start_ < 32 ? n - start_ : 32; "
        f"int ok_ = ({ok}) && j_ < size_ && j_ >= 0; if (!ok_) j_ = lane_; "
        f"uint32_t v_ = src_[start_ + j_]; {ops.wr(d, 'b32', 'v_')} "
        f"{ops.wr(p, 'pred', 'ok_')}); }}")


_VOTE = {"all": "(g_ & ~wb_[i >> 5]) == 0", "any": "(g_ & wb_[i >> 5]) != 0",
         "uni": "((g_ & wb_[i >> 5]) == 0 || (g_ & wb_[i >> 5]) == g_)",
         "ballot": "g_ & wb_[i >> 5]"}


def _census(pred: str) -> str:
    """Per warp: ``we_`` the executing lanes' bits, ``wb_`` those whose ``pred`` holds."""
    return ("uint32_t we_[32] = {0}, wb_[32] = {0}; "
            f"LOOP(uint32_t p_ = ({pred}) != 0; we_[i >> 5] |= 1u << (i & 31); "
            "wb_[i >> 5] |= p_ << (i & 31););")


def _group(ops, mask) -> str:
    """C declaring ``g_``, lane i's group: its warp's executing lanes in its member mask
    (all of them when ``mask`` is None)."""
    if mask is None:
        return "const uint32_t g_ = we_[i >> 5];"
    return f"const uint32_t g_ = we_[i >> 5] & (uint32_t)({ops.rd(mask, 'b32')});"


@tr("vote")
def t_vote(ins, ops):
    """vote[.sync].{all,any,uni,ballot}."""
    modes = [m for m in _VOTE if m in ins.flags]
    if len(modes) != 1:
        raise Unsupported("vote mode")
    d, a = ins.args[:2]
    mask = ins.args[2] if "sync" in ins.flags else None
    t = "b32" if modes[0] == "ballot" else "pred"
    return RAW, (f"{{ {_census(ops.rd(a, 'pred'))} "
                 f"LOOP({_group(ops, mask)} {ops.wr(d, t, _VOTE[modes[0]])}); }}")


@tr("activemask")
def t_activemask(ins, ops):
    """activemask.b32: the executing lanes of the warp."""
    return RAW, f"{{ {_census('1')} LOOP({ops.wr(ins.args[0], 'b32', 'wb_[i >> 5]')}); }}"


@tr("match")
def t_match(ins, ops):
    """match.{any,all}.sync.b32/.b64 d[|p], a, mask."""
    modes = [m for m in ("any", "all") if m in ins.flags]
    if len(modes) != 1:
        raise Unsupported("match mode")
    t = ins.type()
    dst = ins.args[0]
    d, p = (dst.first, dst.second) if isinstance(dst, Pair) else (dst, Sink())
    same = ("uint32_t m_ = 0; int w0_ = i & ~31; for (int j = 0; j < 32; j++) "
            "if (((g_ >> j) & 1) && v_[w0_ + j] == v_[i]) m_ |= 1u << j;")
    if modes[0] == "any":
        out = ops.wr(d, "b32", "m_")
    else:
        out = (f"int ok_ = m_ == g_; {ops.wr(d, 'b32', 'ok_ ? m_ : 0u')} "
               f"{ops.wr(p, 'pred', 'ok_')}")
    return RAW, (f"{{ static __thread uint64_t v_[1024]; {_census('1')} "
                 f"LOOP(v_[i] = (uint64_t){ops.rd(ins.args[1], t)};); "
                 f"LOOP({_group(ops, ins.args[2])} {same} {out}); }}")


_REDUX = {"add": "a_ + v_", "min": "v_ < a_ ? v_ : a_", "max": "v_ > a_ ? v_ : a_",
          "and": "a_ & v_", "or": "a_ | v_", "xor": "a_ ^ v_"}
# what each leaves unchanged (an empty group's result, as the interpreter's)
_UNIT = {("min", "int32_t"): "INT32_MAX", ("max", "int32_t"): "INT32_MIN",
         ("min", "uint32_t"): "UINT32_MAX", ("and", "uint32_t"): "UINT32_MAX"}


@tr("redux")
def t_redux(ins, ops):
    """redux.sync.{add,min,max,and,or,xor}: the reduction over each lane's group."""
    kinds = [m for m in _REDUX if m in ins.flags]
    t = ins.type()
    if len(kinds) != 1 or t not in ("u32", "s32", "b32"):
        raise Unsupported("redux form")
    ct = "int32_t" if t == "s32" and kinds[0] in ("min", "max") else "uint32_t"
    unit = _UNIT.get((kinds[0], ct), "0")
    return RAW, (f"{{ {ct} src_[1024]; {_census('1')} "
                 f"LOOP(src_[i] = ({ct}){ops.rd(ins.args[1], t)};); "
                 f"LOOP({_group(ops, ins.args[2])} {ct} a_ = {unit}; const int w0_ = i & ~31; "
                 f"for (int j = 0; j < 32; j++) if ((g_ >> j) & 1) {{ const {ct} v_ = "
                 f"src_[w0_ + j]; a_ = ({ct})({_REDUX[kinds[0]]}); }} "
                 f"{ops.wr(ins.args[0], t, 'a_')}); }}")


@tr("barred")
def t_barred(ins, ops):
    """bar.red.{popc.u32,and.pred,or.pred}'s reduction over the block's active lanes."""
    kinds = [m for m in ("popc", "and", "or") if m in ins.flags]
    if len(kinds) != 1:
        raise Unsupported("bar.red kind")
    pred = ops.rd(ins.args[-1], "pred")
    res = {"popc": ("u32", "t_"), "and": ("pred", "t_ == a_"), "or": ("pred", "t_ > 0")}
    t, expr = res[kinds[0]]
    return RAW, (f"{{ uint32_t t_ = 0, a_ = 0; LOOP(a_++; t_ += ({pred}) != 0;); "
                 f"LOOP({ops.wr(ins.args[0], t, expr)}); }}")
