"""Dynamic parallelism (gdevd/gpu/ptx/devrt.py, ops_devrt.py, devlaunch.py) on both engines:
under ``jit`` the kernels that launch kernels run compiled (their calls go to the host:
jit/devrtops.py), and so do their children.  Kernels: tests/ptx/data/devrt.cu and
devrt_heap.cu (nvcc -ptx -rdc=true -arch=compute_75)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.heap import HeapAllocator
from gdevd.gpu.ptx import devrt, jit, load_module

from .helpers import Device, load


@pytest.fixture(scope="module")
def mod():
    return load("devrt")


def _launch(dev: Device, mod, kernel: str, grid, block, *args, slots: int = 64,
            budget: int | None = None, watchdog=None, printf=None, heap=None):
    """Run ``kernel`` with an arena of ``slots`` parameter buffers; the launch tree."""
    slot = mod.arena_slot()
    arena = dev.alloc(slot * slots)
    tree = dev.prepare(mod, kernel, grid, block, *args, watchdog=watchdog, heap=heap,
                       device_runtime=(arena, slot, slots))
    tree.printf = printf
    while not tree.run(budget):
        pass
    if jit.engine() == "jit":           # the compiling engine ran the parent
        assert tree.root.engine == "jit", mod.jit.compiled.rejected
    return tree


def _zeros(dev: Device, n: int, dtype=np.int32) -> int:
    return dev.put(np.zeros(n, dtype))


def test_children_write_memory_after_their_parent(mod, engine):
    dev = Device()
    out = _zeros(dev, 4 * 32)
    tree = _launch(dev, mod, "parent", (4,), (32,), out, budget=50)
    assert dev.get(out, 128, np.int32).tolist() == list(range(128))
    assert tree.grids == 5 and tree.state.arena.pending == 0
    assert tree.engine == engine                     # a kernel that launches, compiled too
    assert tree.children_by_engine == {engine: 4}    # and its children
    assert len(tree.state.arena.free) == 64          # every slot given back


def test_streams_keep_issue_order_and_the_tail_launch_runs_last(mod):
    dev = Device()
    log, count, errs = _zeros(dev, 64), _zeros(dev, 1), _zeros(dev, 3)
    _launch(dev, mod, "ordered", (1,), (32,), log, count, errs)
    assert dev.get(count, 1, np.int32)[0] == 5
    assert dev.get(log, 5, np.int32).tolist() == [1, 2, 3, 4, 100]
    assert dev.get(log + 4 * 63, 1, np.int32)[0] == 7
    assert dev.get(errs, 3, np.int32).tolist() == [0, 0, 0]


def test_nesting_to_the_depth_limit(mod):
    dev = Device()
    depth, err = _zeros(dev, 32), _zeros(dev, 32)
    tree = _launch(dev, mod, "nest", (1,), (1,), depth, err, 0, devrt.MAX_DEPTH)
    assert dev.get(depth, 32, np.int32).tolist() == list(range(25)) + [0] * 7
    assert not dev.get(err, 32, np.int32).any()
    assert tree.grids == devrt.MAX_DEPTH + 1


def test_beyond_the_depth_limit_the_launch_fails_with_cudas_error(mod):
    dev = Device()
    depth, err = _zeros(dev, 32), _zeros(dev, 32)
    _launch(dev, mod, "nest", (1,), (1,), depth, err, 0, 30)
    assert dev.get(depth, 32, np.int32).tolist() == list(range(25)) + [0] * 7
    errs = dev.get(err, 32, np.int32)
    assert not errs[:24].any() and errs[24] == devrt.MAX_DEPTH_EXCEEDED


def test_more_launches_than_pending_slots(mod):
    dev = Device()
    out, err = _zeros(dev, 256), _zeros(dev, 256)
    tree = _launch(dev, mod, "many", (2,), (128,), out, err, slots=40)
    done = dev.get(out, 256, np.int32) == np.arange(256)
    errs = dev.get(err, 256, np.int32)
    assert done[:40].all() and done.sum() == 40     # the first 40 lanes took the slots
    assert (errs[done] == 0).all() and (errs[~done] == devrt.PENDING_EXCEEDED).all()
    assert tree.state.arena.pending == 0 and len(tree.state.arena.free) == 40


def test_a_faulting_child_is_the_launchs_fault_naming_it(mod):
    dev = Device()
    out = _zeros(dev, 4)
    with pytest.raises(KernelFault, match=r"illegal address 0x10 .*in bad at line \d+ "
                                          r"\(a grid launched from faulting, depth 1\)"):
        _launch(dev, mod, "faulting", (1,), (1,), out)
    assert dev.get(out, 1, np.int32)[0] == 1


def test_a_freed_arena_faults_the_launch_at_its_childs_start(mod):
    dev = Device()
    out = _zeros(dev, 32)
    slot = mod.arena_slot()
    arena = dev.alloc(4096, align=4096)
    tree = dev.prepare(mod, "parent", (1,), (32,), out, device_runtime=(arena, slot, 8))
    assert not tree.run(20)                          # the parent ran, its child is pending
    dev.mmu.unmap(arena, 4096)
    with pytest.raises(KernelFault, match="parameter buffer of a launch of fill from parent"):
        while not tree.run(20):
            pass
    assert tree.done and tree.state.arena.pending == 0


def _bomb(mod, dev):
    """(the launch tree of a launch bomb with a 1 s watchdog and 16 parameter buffers, its
    launch count)."""
    count, err = _zeros(dev, 1, np.uint64), _zeros(dev, 1)
    slot = mod.arena_slot()
    arena = dev.alloc(slot * 16)
    return dev.prepare(mod, "bomb", (1,), (1,), count, err, watchdog=1.0,
                       device_runtime=(arena, slot, 16)), count


def test_a_launch_bomb_ends_by_the_watchdog_with_bounded_state(mod):
    dev = Device()
    tree, count = _bomb(mod, dev)
    deepest = 0
    with pytest.raises(KernelFault) as exc:
        while not tree.run(200):
            deepest = max(deepest, len(tree.stack))
            assert tree.state.arena.pending <= 16
    assert exc.value.errno == errno.ETIME
    assert deepest <= devrt.MAX_DEPTH + 1
    assert dev.get(count, 1, np.uint64)[0] > 24
    assert tree.done and not tree.stack and tree.state.arena.pending == 0


def test_a_child_whose_start_meets_the_watchdog_gives_its_slot_back(mod):
    """The watchdog expired when a recorded child grid is due to start: the tree ends with
    ETIME and the child's parameter buffer is free again (it had left its grid's queue)."""
    tree, _ = _bomb(mod, Device())
    assert not tree.run(200)                         # the root ran and launched a child
    assert tree.state.arena.pending >= 1
    tree.root.watchdog = tree.elapsed()              # no time left from here on
    with pytest.raises(KernelFault) as exc:
        while not tree.run(200):
            pass
    assert exc.value.errno == errno.ETIME
    assert tree.done and tree.state.arena.pending == 0 and not tree.state.arena.taken


class Sink:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, text: bytes) -> None:
        self.data += text


def test_children_print_through_the_launchs_sink(mod):
    sink = Sink()
    _launch(Device(), mod, "hello", (1,), (1,), 0, 2, printf=sink)
    lines = sink.data.decode().splitlines()
    # depth first: each child completes (with its own children) before the next starts
    assert lines == ["depth 0 block 0", "depth 1 block 0", "depth 1 block 1",
                     "depth 2 block 0", "depth 2 block 1", "depth 2 block 0",
                     "depth 2 block 1"]


def test_queries_and_errors(mod):
    dev = Device()
    out = _zeros(dev, 11)
    _launch(dev, mod, "queries", (1,), (1,), out)
    got = dev.get(out, 11, np.int32).tolist()
    assert got[:4] == [0, 0, 0, 1024]
    assert got[4] == devrt.INVALID_VALUE and got[6] == devrt.INVALID_VALUE
    assert got[7] == devrt.INVALID_VALUE and got[8] == 0    # GetLastError cleared it
    assert got[9:] == [40, 7]                                # devrt.ATTRIBUTES' defaults


def test_the_gpu_gives_its_own_attributes(mod):
    dev = Device()
    out = _zeros(dev, 11)
    slot = mod.arena_slot()
    tree = dev.prepare(mod, "queries", (1,), (1,), out, device_runtime=(
        dev.alloc(slot), slot, 1, {devrt.MP_COUNT: 3, devrt.CC_MAJOR: 8}))
    assert tree.run()
    assert dev.get(out + 36, 2, np.int32).tolist() == [3, 8]


def test_without_an_arena_device_launches_fail(mod):
    dev = Device()
    out, err = _zeros(dev, 64), _zeros(dev, 64)
    launch = dev.prepare(mod, "many", (1,), (64,), out, err)
    assert launch.run()
    assert not dev.get(out, 64, np.int32)[1:].any()
    assert (dev.get(err, 64, np.int32) == devrt.PENDING_EXCEEDED).all()


V1 = """
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 r) cudaGetParameterBuffer (.param .b64 a, .param .b64 s);
.extern .func (.param .b32 r) cudaLaunchDevice (.param .b64 f, .param .b64 b,
    .param .align 4 .b8 g[12], .param .align 4 .b8 k[12], .param .b32 sh, .param .b64 st);
.visible .entry kid (.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    st.global.u32 [%rd1], 42;
    ret;
}
.visible .entry dad (.param .u64 out)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<3>;
    ld.param.u64 %rd1, [out];
    {
    .param .b64 a;
    .param .b64 s;
    .param .b64 r;
    st.param.b64 [a], 8;
    st.param.b64 [s], 8;
    call.uni (r), cudaGetParameterBuffer, (a, s);
    ld.param.b64 %rd2, [r];
    }
    st.u64 [%rd2], %rd1;
    mov.u64 %rd3, kid;
    {
    .param .b64 f;
    .param .b64 b;
    .param .align 4 .b8 g[12];
    .param .align 4 .b8 k[12];
    .param .b32 sh;
    .param .b64 st;
    .param .b32 r;
    st.param.b64 [f], %rd3;
    st.param.b64 [b], %rd2;
    st.param.v2.b32 [g], {1, 1};
    st.param.b32 [g+8], 1;
    st.param.v2.b32 [k], {1, 1};
    st.param.b32 [k+8], 1;
    st.param.b32 [sh], 0;
    st.param.b64 [st], 0;
    call.uni (r), cudaLaunchDevice, (f, b, g, k, sh, st);
    ld.param.b32 %r1, [r];
    }
    st.global.u32 [%rd1+4], %r1;
    ret;
}
"""


def test_a_kernel_that_launches_prints_if_its_module_prints(mod):
    # (the host fetches printf output after a kernel that prints: its children may)
    assert mod.kernels["parent"].prints and not mod.kernels["fill"].prints
    assert not load_module(V1, "v1").kernels["dad"].prints


def test_the_v1_launch_pair_of_older_toolkits():
    mod = load_module(V1, "v1")
    dev = Device()
    out = _zeros(dev, 2)
    tree = _launch(dev, mod, "dad", (1,), (1,), out)
    assert dev.get(out, 2, np.int32).tolist() == [42, 0] and tree.grids == 2


def test_a_child_with_dynamic_shared_memory_over_a_2d_grid(mod, engine):
    dev = Device()
    data = np.arange(6 * 64, dtype=np.int32) * 3 - 100
    src, out = dev.put(data), _zeros(dev, 6)
    tree = _launch(dev, mod, "sums", (1,), (1,), src, out)
    assert dev.get(out, 6, np.int32).tolist() == data.reshape(6, 64).sum(axis=1).tolist()
    assert tree.children_by_engine == {engine: 1}


def test_parameter_slots_keep_every_kernels_alignment():
    text = (".version 7.0\n.target sm_75\n.address_size 64\n"
            ".visible .entry a (.param .align 32 .b8 p[40]) { ret; }\n"
            ".visible .entry b (.param .u64 q) { ret; }\n")
    assert load_module(text, "aligned").arena_slot() == 64
    assert load_module(V1, "v1").arena_slot() == 16


def test_device_side_memset_and_memcpy_keep_their_place_among_the_launches(mod):
    # memset(0x01 bytes), a child adding 1, a memcpy of the result: in issue order
    dev = Device()
    buf, copy, errs = _zeros(dev, 32), _zeros(dev, 32), _zeros(dev, 5)
    _launch(dev, mod, "copies", (1,), (32,), buf, copy, 32, errs)
    assert dev.get(buf, 32, np.int32).tolist() == [0x01010102] * 32
    assert dev.get(copy, 32, np.int32).tolist() == [0x01010102] * 32
    got = dev.get(errs, 5, np.int32).tolist()
    assert got[:4] == [0, 0, devrt.INVALID_VALUE, devrt.INVALID_VALUE]
    assert got[4].to_bytes(4, "little") == b"inva"      # "invalid argument"


def test_a_device_side_copy_of_unmapped_memory_faults_naming_it(mod):
    dev = Device()
    out = _zeros(dev, 16)
    with pytest.raises(KernelFault, match="a cudaMemcpyAsync of 64 bytes from copy_unmapped"):
        _launch(dev, mod, "copy_unmapped", (1,), (1,), out)


@pytest.fixture(scope="module")
def heap_mod():
    return load("devrt_heap")


def test_device_side_malloc_and_free_use_the_device_heap(heap_mod):
    mod = heap_mod
    dev = Device()
    results, errs = _zeros(dev, 32), _zeros(dev, 34)
    heap = HeapAllocator(dev.alloc(1 << 20, 4096), 1 << 20)
    assert mod.kernels["heap_user"].heap          # the runtime reserves a heap for it
    _launch(dev, mod, "heap_user", (1,), (32,), results, errs, heap=heap)
    assert dev.get(results, 32, np.int32).tolist() == [(t + 1) * (t + 2) // 2
                                                       for t in range(32)]
    got = dev.get(errs, 34, np.int32).tolist()
    assert got[:32] == [0] * 32
    assert got[32:] == [devrt.INVALID_VALUE, devrt.MEMORY_ALLOCATION]
    assert heap.used >= 32 * 4


def test_device_side_malloc_without_a_heap_fails_with_cudas_error(heap_mod):
    mod = heap_mod
    dev = Device()
    results, errs = _zeros(dev, 32), _zeros(dev, 34)
    _launch(dev, mod, "heap_user", (1,), (32,), results, errs)
    assert dev.get(errs, 32, np.int32).tolist() == [devrt.MEMORY_ALLOCATION] * 32
