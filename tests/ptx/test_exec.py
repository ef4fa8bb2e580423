"""Executor semantics on nvcc kernels (tests/ptx/data/exec.cu): divergence, barriers,
memory spaces, atomics, warp operations, globals, faults, watchdog and resumption."""

from __future__ import annotations

import errno
import re
import struct

import numpy as np
import pytest

from gdevd.errors import GdevError, KernelFault

from .helpers import Device, load

MOD = load("exec")


@pytest.fixture
def dev():
    return Device()


def _nested_model(t: int) -> int:
    if t < 0:
        return -1
    acc = 0
    for a in range(t):
        for b in range(a + 1):
            if (a + b) % 3 == 0:
                continue
            acc += a * b + 1
            if acc > 100000:
                break
    return acc


@pytest.mark.parametrize("budget", [None, 7, 50])
def test_divergent_nested_loops_and_early_exit(dev, budget):
    trip = np.random.default_rng(0).integers(-3, 40, 192).astype(np.int32)
    pt, po = dev.put(trip), dev.put(np.full(192, -1, np.int32))
    dev.launch(MOD, "nested", (3,), (64,), pt, po, budget_steps=budget)
    assert dev.get(po, 192, np.int32).tolist() == [_nested_model(int(t)) for t in trip]


@pytest.mark.parametrize("block", [32, 64, 256])
def test_dynamic_shared_reduction(dev, block):
    x = np.random.default_rng(1).integers(-100, 100, 4 * block).astype(np.int32)
    px, po = dev.put(x), dev.alloc(16)
    dev.launch(MOD, "dyn_reduce", (4,), (block,), px, po, shared=block * 4)
    assert np.array_equal(dev.get(po, 4, np.int32), x.reshape(4, block).sum(1))


def test_dynamic_shared_out_of_bounds_faults(dev):
    x = np.zeros(64, np.int32)
    px, po = dev.put(x), dev.alloc(16)
    with pytest.raises(KernelFault) as ei:
        dev.launch(MOD, "dyn_reduce", (1,), (64,), px, po, shared=32 * 4)
    assert ei.value.errno == errno.EFAULT and "shared" in str(ei.value)


@pytest.mark.parametrize("which", [0, 1, 2])
def test_generic_pointers_to_shared_local_global(dev, which):
    po = dev.put(np.zeros(128, np.int32))
    dev.launch(MOD, "generic_ptrs", (1,), (64,), po, which)
    out = dev.get(po, 128, np.int32)
    t = np.arange(64)
    if which == 0:
        assert np.array_equal(out[64:], t + 1000)
    elif which == 1:
        assert np.array_equal(out[64:], (t & 3) * t + 1000)
    else:
        assert np.array_equal(out[:64], np.full(64, 1000))


def test_atomics_all_operations(dev):
    n = 1000
    i32 = dev.put(np.array([0, 0, -5], np.int32))
    u32 = dev.put(np.array([0xFFFFFFFF, 0, 0, 0, 0, 0], np.uint32))
    u64 = dev.put(np.array([0, 0, 0], np.uint64))
    f32 = dev.put(np.array([0, -1], np.float32))
    f64 = dev.put(np.array([0], np.float64))
    dev.launch(MOD, "atomics", (4,), (256,), i32, u32, u64, f32, f64, n)
    idx = np.arange(n)
    assert dev.get(i32, 3, np.int32).tolist() == [idx.sum(), -(n - 1), n - 1]
    got = dev.get(u32, 6, np.uint32).tolist()
    x = 0
    for i in idx:
        x ^= int(i)
    inc = dec = 0
    for _ in idx:
        inc = 0 if inc >= 16 else inc + 1
        dec = 16 if dec == 0 or dec > 16 else dec - 1
    assert got == [0, 0xFFFFFFFF, x, inc, dec, 42]
    g64 = dev.get(u64, 3, np.uint64).tolist()
    assert g64[0] == (int(idx.sum()) << 32) & (2**64 - 1)
    assert g64[1] == 3 * (n - 1)
    assert 1 <= g64[2] <= n                         # exactly one CAS won
    assert dev.get(f32, 2, np.float32).tolist() == [n * 0.5, 96.0]
    assert dev.get(f64, 1, np.float64).tolist() == [n * 0.25]


def _shfl_model(v, width, mode, arg):
    out = np.empty_like(v)
    for i in range(v.size):
        lane = i % 32
        base = i - lane + (lane // width) * width
        sub = lane % width
        if mode == "idx":
            j = arg % width
        elif mode == "up":
            j = sub - arg if sub - arg >= 0 else sub
        elif mode == "down":
            j = sub + arg if sub + arg < width else sub
        else:
            j = sub ^ arg if (sub ^ arg) < width else sub
        out[i] = v[base + j]
    return out


@pytest.mark.parametrize("width", [32, 16, 8])
def test_shuffles_votes_block_reductions(dev, width):
    v = np.random.default_rng(2).integers(0, 1000, 128).astype(np.int32)
    pv, po = dev.put(v), dev.alloc(128 * 32)
    dev.launch(MOD, "warps", (2,), (64,), pv, po, width)
    out = dev.get(po, 128 * 8, np.int32).reshape(128, 8)
    assert np.array_equal(out[:, 0], _shfl_model(v, width, "idx", 3))
    assert np.array_equal(out[:, 1], _shfl_model(v, width, "up", 2))
    assert np.array_equal(out[:, 2], _shfl_model(v, width, "down", 5))
    assert np.array_equal(out[:, 3], _shfl_model(v, width, "xor", 6))
    w = v.reshape(-1, 32)
    assert np.array_equal(out[:, 4], np.repeat((w > 900).any(1), 32))
    assert np.array_equal(out[:, 5], np.ones(128))
    b = v.reshape(2, 64)
    assert np.array_equal(out[:, 6], np.repeat((b & 1).sum(1), 64))
    assert np.array_equal(out[:, 7], np.repeat(2 * (b < 1000).all(1) + (b == 0).any(1), 64))


def test_globals_constants_struct_params(dev):
    base = dev.load_data(MOD)
    lay = MOD.data_layout()
    params = struct.pack("<i f d", 3, 2.0, 0.5)   # Pair{a, b, c}: c at offset 8
    po, pt = dev.alloc(64), dev.alloc(8)
    dev.launch(MOD, "globals_and_params", (1,), (16,), (params, "16s"), po, pt, data_base=base)
    coeffs = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    exp = np.tile(coeffs, 4) * 2.0 + 3 + 0.5 + 7
    assert np.array_equal(dev.get(po, 16, np.float32), exp.astype(np.float32))
    assert dev.get(base + lay.offsets["counter"], 1, np.int32)[0] == 8
    assert dev.get(pt, 1, np.uint64)[0] == 2**64 - 3


@pytest.mark.parametrize("grid,block", [((2, 3, 2), (4, 2, 3)), ((1, 1, 5), (8, 1, 1))])
def test_3d_geometry(dev, grid, block):
    n = int(np.prod(grid) * np.prod(block))
    po = dev.alloc(n * 4)
    dev.launch(MOD, "grid3d", grid, block, po)
    out = dev.get(po, n, np.int32)
    exp = []
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for tz in range(block[2]):
                    for ty in range(block[1]):
                        for tx in range(block[0]):
                            exp.append(tx << 24 | ty << 16 | tz << 12 | bx << 8 | by << 4 | bz)
    assert out.tolist() == exp


def test_illegal_address_faults_with_line(dev):
    p = dev.alloc(64)
    with pytest.raises(KernelFault) as ei:
        dev.launch(MOD, "faulty", (1,), (32,), p, 1 << 30)
    assert ei.value.errno == errno.EFAULT
    assert "faulty at line" in str(ei.value)
    dev.launch(MOD, "faulty", (1,), (16,), p, 0)     # the device still works
    assert dev.get(p, 16, np.int32).tolist() == [1] * 16


def test_assert_traps_and_printf_runs(dev):
    good = dev.put(np.arange(32, dtype=np.int32) + 12330)
    po = dev.alloc(128)
    dev.launch(MOD, "checked", (1,), (32,), good, po)
    assert np.array_equal(dev.get(po, 32, np.int32), np.arange(32) + 12330)
    bad = dev.put(np.array([1, 1, 1, -1] * 8, np.int32))
    with pytest.raises(KernelFault) as ei:
        dev.launch(MOD, "checked", (1,), (32,), bad, po)
    # CUDA's line for the first failing thread, the errno every client maps to
    # CUDA_ERROR_ASSERT, and where in the PTX it was
    assert ei.value.errno == errno.ENOTRECOVERABLE
    assert re.search(r"exec\.cu:118: void checked\(const int \*, int \*\): block: "
                     r"\[0,0,0\], thread: \[3,0,0\] Assertion `in\[i\] >= 0` failed\. "
                     r"\(kernel checked, PTX line \d+\)", str(ei.value)), str(ei.value)


def test_watchdog_aborts_long_kernel(dev):
    po = dev.alloc(128)
    launch = dev.prepare(MOD, "spin", (1,), (32,), po, 10**9, watchdog=0.2)
    with pytest.raises(KernelFault) as ei:
        launch.run()
    assert ei.value.errno == errno.ETIME
    assert launch.run() is True     # a dead launch stays finished


def test_resume_in_pieces_equals_one_run(dev):
    po1, po2 = dev.alloc(128), dev.alloc(128)
    dev.launch(MOD, "spin", (1,), (32,), po1, 500)
    launch = dev.prepare(MOD, "spin", (1,), (32,), po2, 500)
    pieces = 0
    while not launch.run(budget=13):
        pieces += 1
    assert pieces > 10
    assert np.array_equal(dev.get(po1, 32, np.int32), dev.get(po2, 32, np.int32))


def test_clock_advances(dev):
    po = dev.alloc(32 * 16)
    dev.launch(MOD, "clocks", (1,), (32,), po)
    out = dev.get(po, 64, np.int64).reshape(32, 2)
    assert (out[:, 0] > 0).all()
    assert out[:, 1].tolist() == [sum(k * t for k in range(100)) for t in range(32)]


@pytest.mark.parametrize("grid,block,shared,plen", [
    ((1,), (1025,), 0, 16), ((0,), (32,), 0, 16), ((1,), (32,), 70000, 16),
    ((1,), (32,), 0, 4), ((1, 1, 1, 1), (32,), 0, 16)])
def test_launch_checks(dev, grid, block, shared, plen):
    with pytest.raises(GdevError) as ei:
        MOD.launch("faulty", grid, block, bytes(plen), dev.mmu, 0, shared_dynamic=shared)
    assert ei.value.errno == errno.EINVAL


def test_32bit_shared_address_wraps(dev):
    """[%r+imm] with a 32-bit register wraps modulo 2**32 (nvcc's tile addressing)."""
    from gdevd.gpu.ptx import load_module
    text = """.version 7.5
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<4>; .reg .b64 %rd<3>;
.shared .align 4 .b8 sm[64];
mov.u32 %r0, sm;
add.u32 %r1, %r0, -16;
mov.u32 %r2, 77;
st.shared.u32 [%r1+20], %r2;
ld.shared.u32 %r3, [%r0+4];
ld.param.u64 %rd0, [out];
st.global.u32 [%rd0], %r3;
ret;
}
"""
    mod = load_module(text)
    po = dev.alloc(4)
    dev.launch(mod, "k", (1,), (1,), po)
    assert dev.get(po, 1, np.uint32)[0] == 77


@pytest.mark.parametrize("engine", ["interp"], indirect=True)   # the interpreter's pool
def test_bound_waves_are_reused_across_launches_correctly():
    """A second launch of the same shape reuses the bound wave: new parameters, data
    segment, address space and block numbers must all take effect; state starts clean."""
    dev1, dev2 = Device(), Device()
    mod = load("exec")
    for dev, base_fill in ((dev1, 0), (dev2, 100)):
        dev.alloc(4096 * (1 + base_fill // 100))     # different data_base per device
        x = np.arange(128, dtype=np.int32) + base_fill
        px, po = dev.put(x), dev.alloc(16)
        dev.launch(mod, "dyn_reduce", (2,), (64,), px, po, shared=256)
        assert dev.get(po, 2, np.int32).tolist() == x.reshape(2, 64).sum(1).tolist()
    assert mod.wave_pool._waves                     # the shape was pooled
    # globals follow the data segment of each launch
    params = struct.pack("<i f d", 1, 1.0, 0.0)
    for dev in (dev1, dev2):
        base = dev.load_data(mod)
        po, pt = dev.alloc(64), dev.alloc(8)
        dev.launch(mod, "globals_and_params", (1,), (16,), (params, "16s"), po, pt,
                   data_base=base)
        assert dev.get(po, 4, np.float32).tolist() == [8.5, 7.0, 10.0, 8.25]
