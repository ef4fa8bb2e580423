"""A context's device-printf buffer (gdevd/runtime/printfbuf.py) and gprintf_drain: bounded,
oldest first, nothing dropped without a line saying so, sizes checked, contexts apart."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import pytest

from gdevd import runtime as rt
from gdevd.gpu.ptx import load_module
from gdevd.runtime.printfbuf import PrintfBuffer

from .conftest import raises_errno, run_system

PTX = (Path(__file__).resolve().parents[1] / "ptx" / "data" / "printf.ptx").read_bytes()


def test_drain_takes_oldest_first_in_pieces() -> None:
    buf = PrintfBuffer(100)
    buf.write(b"abc")
    buf.write(b"defg")
    assert buf.drain(5) == b"abcde" and buf.drain(5) == b"fg" and buf.drain(5) == b""


def test_what_does_not_fit_is_dropped_and_said_once_drained() -> None:
    buf = PrintfBuffer(8)
    buf.write(b"12345")
    buf.write(b"6789AB")         # 3 fit, 3 dropped
    buf.write(b"more")           # all 4 dropped
    assert len(buf) == 8 and buf.full()
    assert buf.drain(4) == b"1234"
    out = buf.drain(1000)
    assert out.startswith(b"5678") and b"7 bytes of device printf output dropped" in out
    assert buf.drain(1000) == b"" and not buf.full()


@pytest.mark.parametrize("size", [0, -1, (1 << 20) + 1, True, 1.5])
def test_a_bad_drain_size_is_einval(size) -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        with raises_errno(errno.EINVAL):
            await rt.gprintf_drain(h, size)
    run_system(body)


def test_a_kernels_lines_go_to_its_own_context_only() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 0)
        code = await rt.gmalloc(a, len(PTX))
        await rt.gmemcpy_to_device(a, code, PTX, len(PTX))
        layout = load_module(PTX.decode()).data_layout()
        data = await rt.gmalloc(a, layout.size)
        await rt.gmemcpy_to_device(a, data, layout.image, layout.size)
        out = await rt.gmalloc(a, 4 * 4)
        k = rt.GdevKernel(code, len(PTX), "odd_lanes", grid=(1, 1, 1), block=(4, 1, 1),
                          params=struct.pack("<Q", out), data_addr=data)
        await rt.gsync(a, await rt.glaunch(a, k), timeout=60)
        assert await rt.gprintf_drain(b) == b""
        assert await rt.gprintf_drain(a) == b"block 0 lane 1: 1\nblock 0 lane 3: 9\n"
        assert await rt.gprintf_drain(a) == b""
        await rt.gclose(a)
        with raises_errno(errno.EBADF):
            await rt.gprintf_drain(a)
    run_system(body)
