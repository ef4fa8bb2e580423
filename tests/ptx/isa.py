"""Harness for hand-written PTX snippets: each thread loads inputs, runs a body, stores %y."""

from __future__ import annotations

import numpy as np

from gdevd.gpu.ptx import load_module

from .helpers import Device

HEADER = ".version 7.5\n.target sm_75\n.address_size 64\n"
_REGTYPE = {"u8": "b16", "s8": "b16", "u16": "b16", "s16": "b16", "f16": "b16"}


def kernel_text(in_types: list[str], out_type: str, body: str, extra_regs: str = "") -> str:
    """A kernel ``k(in0.., out)``: %x<i> = in<i>[gid]; <body>; out[gid] = %y."""
    params = ",\n".join([f".param .u64 in{i}" for i in range(len(in_types))] +
                        [".param .u64 out"])
    regs = [".reg .b64 %ad<4>;", ".reg .b32 %gid;", ".reg .pred %p<8>;",
            ".reg .b32 %r<8>;", ".reg .b64 %rd<8>;", ".reg .f32 %f<8>;", ".reg .f64 %fd<8>;",
            ".reg .b16 %rs<8>;"]
    loads = []
    for i, t in enumerate(in_types):
        rt = _REGTYPE.get(t, "b8" if t == "pred" else t)
        if t == "pred":
            regs.append(f".reg .pred %x{i};")
            loads += [f"ld.param.u64 %ad0, [in{i}];", "cvt.u64.u32 %ad1, %gid;",
                      "add.u64 %ad0, %ad0, %ad1;", "ld.global.u8 %rs7, [%ad0];",
                      f"setp.ne.u16 %x{i}, %rs7, 0;"]
            continue
        regs.append(f".reg .{rt} %x{i};")
        size = int(t[1:]) // 8
        loads += [f"ld.param.u64 %ad0, [in{i}];", f"mul.wide.u32 %ad1, %gid, {size};",
                  "add.u64 %ad0, %ad0, %ad1;", f"ld.global.{t} %x{i}, [%ad0];"]
    ort = _REGTYPE.get(out_type, out_type)
    if out_type == "pred":
        regs.append(".reg .pred %y;")
        store = ["selp.u16 %rs6, 1, 0, %y;", "ld.param.u64 %ad0, [out];",
                 "cvt.u64.u32 %ad1, %gid;", "add.u64 %ad0, %ad0, %ad1;",
                 "st.global.u8 [%ad0], %rs6;"]
    else:
        regs.append(f".reg .{ort} %y;")
        size = int(out_type[1:]) // 8
        store = ["ld.param.u64 %ad0, [out];", f"mul.wide.u32 %ad1, %gid, {size};",
                 "add.u64 %ad0, %ad0, %ad1;", f"st.global.{out_type} [%ad0], %y;"]
    gid = ["mov.u32 %r0, %tid.x;", "mov.u32 %r1, %ctaid.x;", "mov.u32 %r2, %ntid.x;",
           "mad.lo.u32 %gid, %r1, %r2, %r0;"]
    lines = regs + [extra_regs] + gid + loads + [body] + store + ["ret;"]
    return HEADER + f".visible .entry k(\n{params}\n)\n{{\n" + "\n".join(lines) + "\n}\n"


_NP = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32,
       "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "s64": np.int64, "b64": np.uint64,
       "f16": np.float16, "f32": np.float32, "f64": np.float64, "pred": np.uint8}


def run_snippet(body: str, inputs: list[tuple[str, np.ndarray]], out_type: str,
                block: int = 64, extra_regs: str = "") -> np.ndarray:
    """Run ``body`` over the inputs (one thread per element); returns the %y values."""
    n = len(inputs[0][1])
    mod = load_module(kernel_text([t for t, _ in inputs], out_type, body, extra_regs), "snippet")
    dev = Device(8 << 20)
    ptrs = [dev.put(np.asarray(a).astype(_NP[t])) for t, a in inputs]
    dt = np.dtype(_NP[out_type])
    out = dev.alloc(n * dt.itemsize)
    grid = (n + block - 1) // block
    padded = grid * block
    if padded != n:   # pad inputs so every thread reads in bounds
        ptrs = [dev.put(np.resize(np.asarray(a).astype(_NP[t]), padded)) for t, a in inputs]
        out = dev.alloc(padded * dt.itemsize)
    dev.launch(mod, "k", (grid,), (block,), *ptrs, out)
    res = dev.get(out, n, dt)
    return res.astype(bool) if out_type == "pred" else res
