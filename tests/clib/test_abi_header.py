"""The generated C header is current, and C encodes every request exactly as abi.py does."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

from libgdev import abi
from tests.clib.cbuild import CSRC, ROOT, compile_program

LIB_SOURCES = [CSRC / f for f in ("conn.c", "error.c")]


def test_generated_header_is_current() -> None:
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_abi_header.py"),
                          "--check"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _value(fmt: str, k: int) -> int | bytes:
    """A distinct value for field number ``k`` that fills the field's width."""
    if fmt.endswith("s"):
        return bytes((k * 37 + i) & 0xff for i in range(int(fmt[:-1])))
    bits = struct.calcsize(fmt) * 8
    if fmt.islower():
        return -((k * 0x1357 + 3) % (1 << (bits - 1)))
    return ((0x8877665544332211 * (k + 1)) ^ (k << 3)) & ((1 << bits) - 1)


def _samples() -> list[tuple[abi.Command, dict, int]]:
    """(command, field values, tail length) for every command."""
    out = []
    for n, cmd in enumerate(abi.COMMANDS):
        values = {name: _value(fmt, n * 16 + i) for i, (name, fmt) in
                  enumerate(cmd.request.fields) if not name.startswith("_pad")}
        out.append((cmd, values, 7 + n if cmd.request.tail else 0))
    return out


def _c_program(samples: list[tuple[abi.Command, dict, int]]) -> str:
    """A C program that sets each field by its member name and writes the encoded heads."""
    lines = ['#include <stdio.h>', '#include <string.h>', '#include "gdev_internal.h"',
             "int main(void) {", "    uint8_t buf[512]; size_t n;"]
    for i, (cmd, values, tail_len) in enumerate(samples):
        lay = cmd.request
        if lay.fields:
            lines.append(f"    {{ struct gdev_abi_{lay.name} a; memset(&a, 0xee, sizeof a);")
            for name, _fmt in lay.fields:
                v = values.get(name, 0)
                if isinstance(v, bytes):
                    lit = "".join(f"\\x{b:02x}" for b in v)
                    lines.append(f'      memcpy(a.{name}, "{lit}", {len(v)});')
                else:
                    lines.append(f"      a.{name} = ({'int64_t' if v < 0 else 'uint64_t'}){v}"
                                 f"{'LL' if v < 0 else 'ULL'};")
            args = "&a, sizeof a"
        else:
            lines.append("    {")
            args = "NULL, 0"
        lines.append(f"      n = gdev_abi_encode_head(buf, GDEV_CMD_{cmd.name}, {1000 + i}u, "
                     f"GDEV_CMD_{cmd.name}_REQUEST_SIZE + {tail_len}, {args});")
        lines.append("      fwrite(&n, sizeof n, 1, stdout); fwrite(buf, 1, n, stdout); }")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def test_c_encodes_every_request_like_python(tmp_path: Path) -> None:
    samples = _samples()
    src = tmp_path / "encode.c"
    src.write_text(_c_program(samples))
    exe = compile_program(src, tmp_path / "encode", None, *map(str, LIB_SOURCES), "-pthread")
    data = subprocess.run([str(exe)], capture_output=True, check=True).stdout
    off = 0
    for i, (cmd, values, tail_len) in enumerate(samples):
        (n,) = struct.unpack_from("<Q", data, off)
        got = data[off + 8:off + 8 + n]
        off += 8 + n
        want = abi.encode_request_head(cmd, 1000 + i, cmd.request.cls(**values), tail_len)
        assert got == want, cmd.name
    assert off == len(data)
    assert len(samples) == len(abi.COMMANDS)
