"""PTX fundamental types: sizes, numpy dtypes, signedness, and immediate literals."""

from __future__ import annotations

import struct

import numpy as np

# name -> numpy dtype (the natural element type of each PTX scalar type)
DTYPES: dict[str, np.dtype] = {
    "s8": np.dtype(np.int8), "s16": np.dtype(np.int16), "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16), "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "b8": np.dtype(np.uint8), "b16": np.dtype(np.uint16), "b32": np.dtype(np.uint32),
    "b64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16), "f16x2": np.dtype(np.uint32),
    "bf16x2": np.dtype(np.uint32),
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "pred": np.dtype(np.bool_),
}
TYPE_NAMES = frozenset(DTYPES)

UNSIGNED: dict[int, np.dtype] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16),
                                 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
SIGNED: dict[int, np.dtype] = {1: np.dtype(np.int8), 2: np.dtype(np.int16),
                               4: np.dtype(np.int32), 8: np.dtype(np.int64)}
FLOATS: dict[int, np.dtype] = {2: np.dtype(np.float16), 4: np.dtype(np.float32),
                               8: np.dtype(np.float64)}


def dtype_of(t: str) -> np.dtype:
    """The numpy dtype of PTX type ``t`` (KeyError if ``t`` is not a PTX type)."""
    return DTYPES[t]


def size_of(t: str) -> int:
    """Size in bytes of PTX type ``t`` (predicates count as 1)."""
    return DTYPES[t].itemsize


def is_signed(t: str) -> bool:
    """True for the signed integer types ``s8..s64``."""
    return t[0] == "s"


def is_float(t: str) -> bool:
    """True for ``f16``, ``f16x2``, ``f32`` and ``f64`` (the types with float arithmetic)."""
    return t in ("f16", "f16x2", "f32", "f64")


def uint_of(dt: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same width as ``dt``."""
    return UNSIGNED[dt.itemsize]


class FloatBits(float):
    """A ``0f``/``0d`` literal: its float value, and its exact bit pattern in ``bits``."""

    bits: int
    width: int

    def __new__(cls, value: float, bits: int, width: int) -> FloatBits:
        """A float equal to ``value`` whose literal had bit pattern ``bits``."""
        obj = super().__new__(cls, value)
        obj.bits, obj.width = bits, width
        return obj


def parse_number(text: str) -> int | float:
    """Value of a PTX numeric literal: decimal/hex/octal/binary ints (``U`` suffix allowed),
    ``0fXXXXXXXX`` single and ``0dXXXXXXXXXXXXXXXX`` double bit patterns, decimal floats.

    Raises ValueError on anything else.
    """
    t = text
    if len(t) == 10 and t[:2] in ("0f", "0F"):
        bits = int(t[2:], 16)
        return FloatBits(struct.unpack("<f", bits.to_bytes(4, "little"))[0], bits, 4)
    if len(t) == 18 and t[:2] in ("0d", "0D"):
        bits = int(t[2:], 16)
        return FloatBits(struct.unpack("<d", bits.to_bytes(8, "little"))[0], bits, 8)
    if t[-1:] in ("U", "u"):
        t = t[:-1]
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if any(c in t for c in ".eE"):
        return float(t)
    if len(t) > 1 and t[0] == "0":
        return int(t, 8)
    return int(t, 10)


def scalar(value: int | float, t: str):
    """``value`` as a numpy scalar of PTX type ``t``; integers wrap to the type's width."""
    dt = DTYPES[t]
    if dt.kind == "b":
        return np.bool_(bool(value))
    if isinstance(value, FloatBits) and value.width == dt.itemsize:
        return np.array(value.bits, dtype=UNSIGNED[dt.itemsize]).view(dt)[()]
    if dt.kind == "f":
        return dt.type(value)
    if isinstance(value, float):
        # a float literal given to an integer-typed instruction: its bit pattern (mov.b32 r, 0f..)
        bits = struct.unpack("<I", struct.pack("<f", value))[0] if dt.itemsize == 4 else \
            struct.unpack("<Q", struct.pack("<d", value))[0]
        value = bits
    mask = (1 << (8 * dt.itemsize)) - 1
    return np.array(int(value) & mask, dtype=UNSIGNED[dt.itemsize]).view(dt)[()]
