"""The per-lane fragment layouts of ``mma.sync`` (unlike WMMA's, specified by the PTX ISA),
as :class:`~gdevd.gpu.ptx.wmma_frag.Frag` tables, so that both engines run ``mma.sync`` with
WMMA's gather-multiply-scatter and its arithmetic.

With ``g`` = lane >> 2 (the group) and ``t`` = lane & 3 (the thread in the group), element
``i`` of a lane's fragment sits at (row, column):

| fragment | shapes | row | column |
|---|---|---|---|
| A 16-bit | m16n8k16 | g + 8*((i>>1)&1) | 2t + (i&1) + 8*(i>>2) |
| A 16-bit | m16n8k8 | g + 8*(i>>1) | 2t + (i&1) |
| B 16-bit | m16n8k16 | 2t + (i&1) + 8*(i>>1) | g |
| B 16-bit | m16n8k8 | 2t + i | g |
| A tf32 | m16n8k8 | g + 8*(i&1) | t + 4*(i>>1) |
| A tf32 | m16n8k4 | g + 8*i | t |
| B tf32 | m16n8k8 | t + 4*i | g |
| B tf32 | m16n8k4 | t | g |
| A 8-bit | m16n8k32 | g + 8*((i>>2)&1) | 4t + (i&3) + 16*(i>>3) |
| A 8-bit | m16n8k16 | g + 8*(i>>2) | 4t + (i&3) |
| B 8-bit | m16n8k32 | 4t + (i&3) + 16*(i>>2) | g |
| B 8-bit | m16n8k16 | 4t + i | g |
| C/D | m16n8k* | g + 8*(i>>1) | 2t + (i&1) |
| A f64 | m8n8k4 | g | t |
| B f64 | m8n8k4 | t | g |
| C/D f64 | m8n8k4 | g | 2t + i |
"""

from __future__ import annotations

import numpy as np

from .wmma_frag import Frag

SHAPES = {"m16n8k16": (16, 8, 16), "m16n8k8": (16, 8, 8), "m16n8k4": (16, 8, 4),
          "m16n8k32": (16, 8, 32), "m8n8k4": (8, 8, 4)}
_WIDTH = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8, "f64": 64}

# (kind, element width, shape) -> (per-lane count, row(g, t, i), column(g, t, i))
_LAYOUTS = {
    ("a", 16, "m16n8k16"): (8, lambda g, t, i: g + 8 * ((i >> 1) & 1),
                            lambda g, t, i: 2 * t + (i & 1) + 8 * (i >> 2)),
    ("a", 16, "m16n8k8"): (4, lambda g, t, i: g + 8 * (i >> 1), lambda g, t, i: 2 * t + (i & 1)),
    ("b", 16, "m16n8k16"): (4, lambda g, t, i: 2 * t + (i & 1) + 8 * (i >> 1),
                            lambda g, t, i: g),
    ("b", 16, "m16n8k8"): (2, lambda g, t, i: 2 * t + i, lambda g, t, i: g),
    ("a", 32, "m16n8k8"): (4, lambda g, t, i: g + 8 * (i & 1), lambda g, t, i: t + 4 * (i >> 1)),
    ("a", 32, "m16n8k4"): (2, lambda g, t, i: g + 8 * i, lambda g, t, i: t),
    ("b", 32, "m16n8k8"): (2, lambda g, t, i: t + 4 * i, lambda g, t, i: g),
    ("b", 32, "m16n8k4"): (1, lambda g, t, i: t, lambda g, t, i: g),
    ("a", 8, "m16n8k32"): (16, lambda g, t, i: g + 8 * ((i >> 2) & 1),
                           lambda g, t, i: 4 * t + (i & 3) + 16 * (i >> 3)),
    ("a", 8, "m16n8k16"): (8, lambda g, t, i: g + 8 * (i >> 2), lambda g, t, i: 4 * t + (i & 3)),
    ("b", 8, "m16n8k32"): (8, lambda g, t, i: 4 * t + (i & 3) + 16 * (i >> 2), lambda g, t, i: g),
    ("b", 8, "m16n8k16"): (4, lambda g, t, i: 4 * t + i, lambda g, t, i: g),
    ("a", 64, "m8n8k4"): (1, lambda g, t, i: g, lambda g, t, i: t),
    ("b", 64, "m8n8k4"): (1, lambda g, t, i: t, lambda g, t, i: g),
    ("c", 64, "m8n8k4"): (2, lambda g, t, i: g, lambda g, t, i: 2 * t + i),
}
# the shapes each input type takes
INPUT_SHAPES = {"f16": {"m16n8k16", "m16n8k8"}, "bf16": {"m16n8k16", "m16n8k8"},
                "tf32": {"m16n8k8", "m16n8k4"}, "s8": {"m16n8k32", "m16n8k16"},
                "u8": {"m16n8k32", "m16n8k16"}, "f64": {"m8n8k4"}}


_C16 = (4, lambda g, t, i: g + 8 * (i >> 1), lambda g, t, i: 2 * t + (i & 1))


def mma_frag(kind: str, shape_name: str, elem: str) -> Frag | None:
    """The ``mma.sync`` fragment, or None where the ISA has no such one."""
    kind = "c" if kind == "d" else kind
    if (elem == "f64") != (shape_name == "m8n8k4") or elem not in _WIDTH | {"f32": 0, "s32": 0}:
        return None
    if kind == "c":
        layout = _LAYOUTS[("c", 64, "m8n8k4")] if elem == "f64" else _C16
    elif shape_name in INPUT_SHAPES.get(elem, ()):
        layout = _LAYOUTS[(kind, _WIDTH[elem], shape_name)]
    else:
        return None
    count, row, col = layout
    lane = np.arange(32)[:, None]
    g, t, i = lane >> 2, lane & 3, np.arange(count)[None, :]
    m, n, k = SHAPES[shape_name]
    cols = {"a": k, "b": n, "c": n}[kind]
    return Frag(kind, SHAPES[shape_name], elem, table=row(g, t, i) * cols + col(g, t, i))
