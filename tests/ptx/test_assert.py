"""Device assert on both engines: the failing thread's CUDA line, its errno, the PTX line.

``assert(e)`` compiles to ``__assertfail(message, file, line, function, charSize)``; the
launch stops with a KernelFault whose errno (ENOTRECOVERABLE) every client maps to
CUDA_ERROR_ASSERT, and whose text is the line CUDA prints for the first failing thread."""

import errno
import re

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit

from .helpers import Device, load

MOD = load("assert")


@pytest.fixture
def dev():
    return Device()


def test_a_passing_assert_costs_nothing_and_the_kernel_compiles(dev, engine):
    src = dev.put(np.arange(256, dtype=np.int32) % 100)
    out = dev.alloc(1024)
    dev.launch(MOD, "bounded", (4,), (64,), src, out, 256)
    assert np.array_equal(dev.get(out, 256, np.int32), (np.arange(256) % 100) * 2)
    if engine == "jit":     # the assert must not send the kernel to the interpreter
        assert MOD.jit.engine_of("bounded") == "jit", MOD.jit.compiled.rejected


def test_the_first_failing_thread_is_reported_as_cuda_prints_it(dev):
    data = np.arange(256, dtype=np.int32) % 100
    data[[200, 201, 250]] = 100                     # block 3, threads 8, 9 and 58
    src, out = dev.put(data), dev.alloc(1024)
    with pytest.raises(KernelFault) as ei:
        dev.launch(MOD, "bounded", (4,), (64,), src, out, 256)
    assert ei.value.errno == errno.ENOTRECOVERABLE
    text = str(ei.value)
    assert ": assert.cu:7: void bounded(const int *, int *, int): block: [3,0,0], thread: " \
        "[8,0,0] Assertion `in[i] < 100` failed. (kernel bounded" in text, text
    assert re.search(r"\(kernel bounded, PTX line \d+\)$", text), text


def test_every_thread_failing_reports_thread_zero(dev):
    src, out = dev.put(np.full(128, 500, np.int32)), dev.alloc(512)
    with pytest.raises(KernelFault) as ei:        # (a uniform wave: no lane list)
        dev.launch(MOD, "bounded", (2,), (64,), src, out, 128)
    assert "block: [0,0,0], thread: [0,0,0] Assertion `in[i] < 100` failed." in str(ei.value)


def test_two_dimensional_indices(dev):
    data = np.zeros(16 * 16, np.int32)
    data[5 * 16 + 11] = 7          # y = 5, x = 11: block (1, 1), thread (3, 1) of 8x4 blocks
    src, out = dev.put(data), dev.alloc(data.nbytes)
    with pytest.raises(KernelFault) as ei:
        dev.launch(MOD, "grid2d", (2, 4), (8, 4), src, out)
    assert "block: [1,1,0], thread: [3,1,0] Assertion `in[i] != 7` failed." in str(ei.value)


def test_a_guarded_assert_of_only_some_lanes_does_not_fire_for_the_others(dev):
    data = np.full(64, 5, np.int32)
    data[40:] = 500                 # beyond n: the assert is never reached for them
    src, out = dev.put(data), dev.alloc(256)
    dev.launch(MOD, "bounded", (1,), (64,), src, out, 40)
    assert np.array_equal(dev.get(out, 40, np.int32), np.full(40, 10))


def test_the_engine_policy_is_what_the_test_runs_on(engine):
    assert jit.engine() == engine
