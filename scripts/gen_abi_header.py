#!/usr/bin/env python3
"""Generate the C header of the gdev ioctl ABI from its one definition, ``libgdev/messages.py``.

The header (``libgdev/csrc/gdev_abi.h``) holds the message header, the reply status, one
struct per layout (natural alignment checked against abi.py's packed offsets by static
asserts), the command numbers, an X-macro listing every command, and the constants of
``libgdev/abi.py`` and ``libgdev/constants.py``.  ``--check`` exits 1 when the committed file
differs from what would be generated (tests/clib/test_abi_header.py runs it).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from typing import NamedTuple

from libgdev import abi, constants, moduletable

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   "libgdev", "csrc", "gdev_abi.h")
C_TYPES = {"Q": "uint64_t", "q": "int64_t", "I": "uint32_t", "i": "int32_t",
           "H": "uint16_t", "h": "int16_t", "B": "uint8_t", "b": "int8_t"}
ABI_CONSTANTS = ("MAGIC", "ABI_VERSION", "HEADER_SIZE", "MAX_PAYLOAD", "INLINE_MAX",
                 "FLAG_REPLY", "KNOWN_FLAGS", "HOST_INLINE", "HOST_STAGING", "HOST_DMA",
                 "GSYNC_TIMEOUT", "PRIO_CLEAR", "PRIO_GET", "PRIO_FLAGS", "GUEST_CLEAR",
                 "GUEST_GET", "GUEST_FLAGS", "STREAM_NON_BLOCKING", "STREAM_FLAGS",
                 "STREAM_SYNC_TIMEOUT", "TEX_NORMALIZED_COORDS", "TEX_READ_NORMALIZED",
                 "TEX_FILTER_LINEAR", "TEX_SURFACE", "TEX_MIPMAP_LINEAR", "TEX_FLAGS",
                 "TEX_SHAPE_PLAIN", "TEX_SHAPE_3D", "TEX_SHAPE_LAYERED_1D", "TEX_SHAPE_LAYERED_2D",
                 "TEX_SHAPE_CUBEMAP", "TEX_SHAPE_CUBEMAP_LAYERED", "LAUNCH_COOPERATIVE",
                 "LAUNCH_FLAGS", "LIMIT_SET", "LIMIT_FLAGS", "TOKEN_SIZE", "MSG_MAX",
                 "IPC_SYNC_TIMEOUT")


def c_field(name: str, fmt: str) -> str:
    """One struct member for a ``(name, struct format)`` field."""
    if fmt.endswith("s"):
        return f"uint8_t {name}[{int(fmt[:-1])}];"
    return f"{C_TYPES[fmt]} {name};"


class CStruct(NamedTuple):
    """What the header needs of a struct: its name, (name, format) fields and size."""

    name: str
    fields: tuple[tuple[str, str], ...]
    struct: struct.Struct


def layout_struct(lay: abi.Layout | CStruct) -> list[str]:
    """The C struct of a non-empty layout with its size and offset asserts."""
    lines = [f"struct gdev_abi_{lay.name} {{"]
    lines += [f"    {c_field(n, f)}" for n, f in lay.fields]
    lines.append("};")
    off = 0
    for n, f in lay.fields:
        lines.append(f"_Static_assert(offsetof(struct gdev_abi_{lay.name}, {n}) == {off}, "
                     f"\"{lay.name}.{n}\");")
        off += struct.calcsize("<" + f)
    lines.append(f"_Static_assert(sizeof(struct gdev_abi_{lay.name}) == {lay.struct.size}, "
                 f"\"{lay.name} size\");")
    return lines


# The MODULE_LOAD reply's records (libgdev/moduletable.py names them in its docstring).
TABLE_RECORDS = (
    ("modtab_function", moduletable.FUNCTION,
     ("name_len", "n_params", "param_size", "max_threads", "static_shared", "local_size",
      "num_regs", "const_size", "max_dynamic_shared", "flags")),
    ("modtab_param", moduletable.PARAM, ("offset", "size", "align", "_pad0", "type")),
    ("modtab_global", moduletable.GLOBAL, ("addr", "size", "name_len", "space")),
)


def table_records() -> list[CStruct]:
    """The module table's record layouts, checked field by field against moduletable."""
    out = []
    for name, st, names in TABLE_RECORDS:
        fmts = [f for f in _formats(st.format.lstrip("<"))]
        if len(fmts) != len(names):
            raise ValueError(f"{name}: {len(fmts)} fields in moduletable, {len(names)} named")
        out.append(CStruct(name, tuple(zip(names, fmts, strict=True)), st))
    return out


def _formats(fmt: str) -> list[str]:
    """Split a struct format into one format per field ("4I8s" -> I, I, I, I, 8s)."""
    out, count = [], ""
    for ch in fmt:
        if ch.isdigit():
            count += ch
        elif ch == "s":
            out.append(count + "s")
            count = ""
        else:
            out += [ch] * int(count or 1)
            count = ""
    return out


def layouts() -> list[abi.Layout]:
    """Every distinct layout, in order of first use."""
    seen: dict[str, abi.Layout] = {}
    for cmd in abi.COMMANDS:
        for lay in (cmd.request, cmd.reply):
            if seen.setdefault(lay.name, lay) is not lay and seen[lay.name].fields != lay.fields:
                raise ValueError(f"two layouts named {lay.name}")
    return list(seen.values())


def command_lines() -> list[str]:
    """Command numbers, per-command sizes and the X-macro."""
    lines = [f"#define GDEV_CMD_{c.name} 0x{c.number:x}" for c in abi.COMMANDS]
    lines.append("")
    for c in abi.COMMANDS:
        lines.append(f"#define GDEV_CMD_{c.name}_REQUEST_SIZE {c.request.struct.size}")
        lines.append(f"#define GDEV_CMD_{c.name}_REPLY_SIZE {c.reply.struct.size}")
    lines += ["", "/* X(NAME, number, request layout, reply layout, request size, reply size,",
              "     request takes a tail, reply has a tail, reply passes an fd) */",
              "#define GDEV_ABI_COMMANDS(X) \\"]
    for c in abi.COMMANDS:
        lines.append(f"    X({c.name}, 0x{c.number:x}, {c.request.name}, {c.reply.name}, "
                     f"{c.request.struct.size}, {c.reply.struct.size}, {int(c.request.tail)}, "
                     f"{int(c.reply.tail)}, {int(c.passes_fd)}) \\")
    lines.append("")
    return lines


def constant_lines() -> list[str]:
    """The protocol's and the API's constants."""
    lines = [f"#define GDEV_ABI_{n.removeprefix('ABI_')} {_c_int(getattr(abi, n))}"
             for n in ABI_CONSTANTS]
    lines += [f"#define GDEV_ABI_{n} {_c_int(v)}" for n, v in vars(abi).items()
              if n.startswith("FEATURE_") or n == "FEATURES"]
    lines.append("")
    lines += [f"#define {n} {_c_int(v)}" for n, v in vars(constants).items()
              if n.startswith("GDEV_") and isinstance(v, int)]
    return lines


def _c_int(v: int) -> str:
    return f"0x{v:x}u" if v > 0xff else str(v)


def render() -> str:
    """The whole header text."""
    out = ["/* Generated by scripts/gen_abi_header.py from libgdev/abi.py and",
           "   libgdev/constants.py: do not edit (make abi-header regenerates it). */",
           "#ifndef GDEV_ABI_H", "#define GDEV_ABI_H", "",
           "#include <stddef.h>", "#include <stdint.h>", ""]
    out += constant_lines() + [""]
    out += ["struct gdev_abi_header {"]
    out += [f"    {c_field(n, f)}" for n, f in zip(
        ("magic", "version", "flags", "command", "payload_len", "request_id", "reserved"),
        abi.HEADER.format.lstrip("<"), strict=True)]
    out += ["};", f"_Static_assert(sizeof(struct gdev_abi_header) == {abi.HEADER_SIZE}, "
                  "\"header size\");", "",
            "/* A reply's payload starts with this; on success the output struct follows. */",
            "struct gdev_abi_status {", "    int32_t status;",
            "    uint32_t msg_len; /* an error reply: its message follows */", "};",
            f"_Static_assert(sizeof(struct gdev_abi_status) == {abi.STATUS.size}, "
            "\"status size\");", ""]
    for lay in layouts():
        if lay.fields:
            out += layout_struct(lay) + [""]
    out.append("/* MODULE_LOAD's reply tail: records padded to 8 bytes (moduletable.py). */")
    for lay in table_records():
        out += layout_struct(lay) + [""]
    out += [f"#define GDEV_MODTAB_FUNC_PRINTS 0x{moduletable.FUNC_PRINTS:x}u "
            "/* modtab_function.flags: the kernel calls printf */", ""]
    out += command_lines()
    out += ["#endif /* GDEV_ABI_H */", ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the header is stale")
    ap.add_argument("--output", default=OUT)
    args = ap.parse_args()
    text = render()
    if args.check:
        try:
            with open(args.output) as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if not same:
            print(f"{args.output} is stale: run scripts/gen_abi_header.py", file=sys.stderr)
        return 0 if same else 1
    with open(args.output, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
