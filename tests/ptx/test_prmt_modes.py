"""``prmt``'s special modes (f4e, b4e, rc8, ecl, ecr, rc16) and its default mode, on both
engines (the compiling engine translates every mode: jit/arith.py, bits.h), against the PTX
ISA's table: result byte k is byte sel(s, k) of the 8 bytes b:a, s the selector's low two
bits."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module

from .helpers import Device

MODES = ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
# PTX ISA, "prmt": the source byte of result bytes 3..0 for each s = 0..3
TABLE = {
    "f4e": ((3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)),
    "b4e": ((5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)),
    "rc16": ((1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)),
}


def _ptx(mode: str) -> str:
    flag = f".{mode}" if mode else ""
    return f""".version 7.0
.target sm_75
.address_size 64
.visible .entry perm(.param .u64 out, .param .u32 a, .param .u32 b)
{{
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    mov.u32 %r3, %tid.x;
    mul.lo.u32 %r3, %r3, 0x01010101;    // selectors whose high bits are set too
    add.u32 %r3, %r3, 0x76540000;
    prmt.b32{flag} %r4, %r1, %r2, %r3;
    mov.u32 %r5, %tid.x;
    mul.wide.u32 %rd2, %r5, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
}}
"""


def _model(mode: str, a: int, b: int, c: int) -> int:
    src = (a | b << 32).to_bytes(8, "little")
    if not mode:
        out = 0
        for k in range(4):
            sel = (c >> 4 * k) & 15
            byte = src[sel & 7]
            out |= (0xFF if sel & 8 and byte & 0x80 else 0 if sel & 8 else byte) << 8 * k
        return out
    order = TABLE[mode][c & 3]
    return sum(src[order[3 - k]] << 8 * k for k in range(4))


@pytest.mark.parametrize("mode", ["", *MODES])
def test_prmt_every_mode(engine, mode):
    mod = load_module(_ptx(mode), "perm")
    a, b, n = 0x83A2C1D0, 0x47F6E5B4, 64
    dev = Device()
    out = dev.alloc(4 * n)
    launch = dev.launch(mod, "perm", (1,), (n,), out, a, b)
    got = dev.get(out, n, np.uint32).tolist()
    want = [_model(mode, a, b, (t * 0x01010101 + 0x76540000) & 0xFFFFFFFF) for t in range(n)]
    assert got == want
    if jit.engine() == "jit":
        assert launch.engine == "jit", mod.jit.compiled.rejected
