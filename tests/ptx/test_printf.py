"""Device printf (gdevd/gpu/ptx/ops_printf.py, printf.py) on both engines (the compiling
engine calls into the host for each lane's call: jit/printfops.py, jit/hostcall.py): the
text is glibc's for every conversion, lanes print in order, a launch's text comes block
after block (printorder.py), a lane that does not call printf prints nothing, and printf
returns its argument count."""

from __future__ import annotations

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit
from gdevd.gpu.ptx.printf import format_call

from .helpers import Device, load


class Sink:
    """What the runtime's per-context buffer is to the engine: ``write(bytes)``."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, text: bytes) -> None:
        self.data += text


def _run(kernel: str, grid, block, args, sink: Sink | None = None, budget=None):
    dev, mod = Device(), load("printf")
    launch = dev.prepare(mod, kernel, grid, block, *args(dev), data_base=dev.load_data(mod))
    launch.printf = sink
    while not launch.run(budget):
        pass
    if jit.engine() == "jit":        # the compiling engine ran it, not the interpreter
        assert launch.engine == "jit", mod.jit.compiled.rejected
    return dev, launch


def test_every_conversion_prints_as_glibc_does(engine):
    sink = Sink()
    _run("formats", (1,), (2,), lambda dev: (dev.put(np.frombuffer(b"gdev\0", np.uint8)),
                                              -(1 << 40), 2.5), sink=sink)
    line = ("t{} 3 -4 -1099511627776 1.500000 2.500000e+00 0.1 str Z (nil) ff  3.14|7   |0042 "
            "% -3 200 99 010 0x1.8p+1 gdev\n")
    assert sink.data.decode() == line.format(0) + line.format(1)


def test_only_the_lanes_that_call_print_and_get_the_argument_count(engine):
    sink = Sink()
    box = {}

    def args(dev):
        box["out"] = dev.alloc(4 * 64)
        return (box["out"],)
    dev, _ = _run("odd_lanes", (2,), (32,), args, sink=sink)
    want = "".join(f"block {b} lane {t}: {(32 * b + t) ** 2}\n"
                   for b in range(2) for t in range(1, 32, 2))
    assert sink.data.decode() == want
    out = dev.get(box["out"], 64, np.int32)
    assert (out[1::2] == 3).all() and (out[0::2] == -7).all()


def test_without_a_sink_nothing_is_printed_and_the_kernel_runs(engine):
    box = {}

    def args(dev):
        box["out"] = dev.alloc(4 * 32)
        return (box["out"],)
    dev, launch = _run("odd_lanes", (1,), (32,), args)
    assert launch.done and (dev.get(box["out"], 32, np.int32)[0::2] == -7).all()


def test_a_bad_string_pointer_faults_the_launch(engine):
    sink = Sink()
    try:
        _run("formats", (1,), (1,), lambda dev: (0xdead0000, 1, 2.0), sink=sink)
    except KernelFault as exc:
        # the interpreter's words on both engines, with the call's line
        assert "illegal address 0xdead0000 (unmapped) in formats at line " in str(exc), exc
    else:
        raise AssertionError("a %s of an unmapped address printed")


@pytest.mark.parametrize("budget", [None, 50])
def test_a_launch_prints_block_after_block(engine, budget):
    """Sixteen blocks of eight threads, two calls each: the interpreter runs the blocks as
    one wave and the compiling engine on several threads, in slices of ``budget`` steps;
    the text is the same, block after block."""
    sink = Sink()
    box = {}

    def args(dev):
        box["out"] = dev.alloc(4 * 128)
        return (box["out"],)
    dev, _ = _run("two_calls", (16,), (8,), args, sink=sink, budget=budget)
    want = "".join(f"b{b} t{t} first\n" * (k == 0) + f"b{b} t{t} sum 28\n" * (k == 1)
                   for b in range(16) for k in (0, 1) for t in range(8))
    assert sink.data.decode() == want
    assert (dev.get(box["out"], 128, np.int32) == 3).all()


def test_held_text_counts_against_the_room(engine):
    """Blocks above the lowest hold their text until it is their turn: it takes room as if
    written, so the launch prints no more than the sink holds (here five lines)."""
    sink = Full(5 * 18)
    box = {}

    def args(dev):
        box["out"] = dev.alloc(4 * 128)
        return (box["out"],)
    dev, _ = _run("odd_lanes", (4,), (32,), args, sink=sink)
    out = dev.get(box["out"], 128, np.int32)[1::2]
    assert (out == 3).sum() == 5 and (out[out != 3] == -1).all()
    lines = sink.data.decode().splitlines()
    assert len(lines) == 5 and lines == sorted(lines, key=lambda s: int(s.split()[1]))


def test_star_width_and_precision_and_unknown_conversions():
    vals = (7).to_bytes(4, "little") + (3).to_bytes(4, "little") + \
        np.float64(2.0).tobytes()
    text, n = format_call(b"[%*.*f] %y %5%", lambda o, k: vals[o:o + k], lambda a: b"")
    assert (text, n) == (b"[  2.000] %y %", 3)


class Full(Sink):
    """A sink with room for ``cap`` bytes (the runtime's buffer once full)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def room(self) -> int:
        return self.cap - len(self.data)


def test_a_full_sink_stops_formatting_and_printf_returns_minus_one(engine):
    sink = Full(36)                       # two lines (18 bytes each), then it is full
    box = {}

    def args(dev):
        box["out"] = dev.alloc(4 * 64)
        return (box["out"],)
    # one block: which of two blocks running in parallel takes the room first is timing
    dev, _ = _run("odd_lanes", (1,), (64,), args, sink=sink)
    assert sink.data.decode() == "block 0 lane 1: 1\nblock 0 lane 3: 9\n"
    out = dev.get(box["out"], 64, np.int32)
    assert out[1] == 3 and out[3] == 3 and (out[5::2] == -1).all()
