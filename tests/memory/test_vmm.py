"""CUDA's virtual memory management in-process (gdevd/runtime/api_vmm.py, mm/vmm.py):
reserve, create, map, set access, grow, unmap, release, export and import; every bad
argument refused with its errno and nothing changed; teardown returns every byte (the
fsck of ``run_swappy`` after each test)."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.errors import GdevError, MmuFault
from gdevd.runtime import Credentials
from gdevd.runtime import defaults as D

from .conftest import MiB, pattern, read_back, run_swappy
from .kernels import as_u32, load_madd, madd

ALICE, BOB = Credentials(1000, 100, 11), Credentials(1001, 100, 12)
RW, RO = 3, 1


def _errno(err: int):  # type: ignore[no-untyped-def]
    return pytest.raises(GdevError, check=lambda e: e.errno == err)


async def _mapped(h: rt.Handle, size: int, *, reserve: int | None = None) -> tuple[int, int]:
    """A reservation of ``reserve`` (default ``size``) bytes with a new ``size``-byte
    allocation mapped read-write at its start: (va, allocation id)."""
    va = await rt.gvm_reserve(h, reserve or size)
    mem = await rt.gvm_create(h, size)
    await rt.gvm_map(h, va, size, 0, mem)
    await rt.gvm_set_access(h, va, size, RW)
    return va, mem


def test_map_write_read_and_grow_a_buffer_behind_the_first_allocation() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        va, first = await _mapped(h, MiB, reserve=4 * MiB)
        data = pattern(1, MiB)
        await rt.gmemcpy_to_device(h, va, data, MiB)
        second = await rt.gvm_create(h, MiB)                  # grow: map behind the first
        await rt.gvm_map(h, va + MiB, MiB, 0, second)
        await rt.gvm_set_access(h, va + MiB, MiB, RW)
        more = pattern(2, 2 * MiB)
        await rt.gmemcpy_to_device(h, va, more, 2 * MiB)    # one copy across both
        assert (await read_back(h, va, 2 * MiB) == more).all()
        s.check_invariants()
        assert await rt.gvm_size(h, second) == MiB
        assert await rt.gvm_get_access(h, va + MiB + 5) == RW
    run_swappy(body)


def test_a_kernel_runs_over_a_range_backed_by_two_allocations() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        n = 256
        size = n * n * 4                                     # 256 KiB per matrix
        va, _ = await _mapped(h, 3 * size // 2, reserve=3 * size)
        rest = await rt.gvm_create(h, 3 * size // 2)
        await rt.gvm_map(h, va + 3 * size // 2, 3 * size // 2, 0, rest)
        await rt.gvm_set_access(h, va + 3 * size // 2, 3 * size // 2, RW)
        a, b = pattern(3, size), pattern(4, size)
        await rt.gmemcpy_to_device(h, va, a, size)
        await rt.gmemcpy_to_device(h, va + size, b, size)    # straddles the two allocations
        await madd(h, await load_madd(h), va, va + size, va + 2 * size, n)
        got = as_u32(await read_back(h, va + 2 * size, size))
        assert (got == as_u32(a) + as_u32(b)).all()
    run_swappy(body)


def test_a_part_at_an_offset_and_two_views_of_one_allocation() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        mem = await rt.gvm_create(h, 4 * 4096)
        va = await rt.gvm_reserve(h, 8 * 4096, 1 << 16)
        assert va % (1 << 16) == 0
        await rt.gvm_map(h, va, 4 * 4096, 0, mem)
        await rt.gvm_map(h, va + 4 * 4096, 2 * 4096, 2 * 4096, mem)   # pages 2, 3 again
        await rt.gvm_set_access(h, va, 6 * 4096, RW)
        data = pattern(5, 4 * 4096)
        await rt.gmemcpy_to_device(h, va, data, len(data))
        assert (await read_back(h, va + 4 * 4096, 2 * 4096) == data[2 * 4096:]).all()
        s.check_invariants()
    run_swappy(body)


def test_unmapped_and_access_less_ranges_fault_with_the_report() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        va = await rt.gvm_reserve(h, 2 * MiB)
        mem = await rt.gvm_create(h, MiB)
        await rt.gvm_map(h, va, MiB, 0, mem)
        with pytest.raises(MmuFault):                        # mapped, no access yet
            await rt.gmemcpy_to_device(h, va, pattern(6, 64), 64)
        await rt.gvm_set_access(h, va, MiB, RO)
        assert (await read_back(h, va, 64) == 0).all()        # fresh memory reads zero
        with pytest.raises(MmuFault):                         # read-only
            await rt.gmemcpy_to_device(h, va, pattern(6, 64), 64)
        code = await load_madd(h)
        with pytest.raises(GdevError) as info:                # the kernel stores to va+MiB
            await madd(h, code, va, va, va + MiB, 16)
        assert "0x%x" % (va + MiB) in str(info.value) or f"{va + MiB:#x}" in str(info.value)
    run_swappy(body)


def test_release_while_mapped_keeps_the_memory_until_the_last_unmap() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        vgpu = h.vgpu
        va, mem = await _mapped(h, MiB)
        data = pattern(7, MiB)
        await rt.gmemcpy_to_device(h, va, data, MiB)
        await rt.gvm_release(h, mem)
        with _errno(errno.EINVAL):
            await rt.gvm_release(h, mem)                      # the id is gone
        assert vgpu.memory_used == MiB
        assert (await read_back(h, va, MiB) == data).all()
        again = await rt.gvm_retain(h, va + 4096)              # a new id for the mapping's
        assert await rt.gvm_retain(h, va) == again
        await rt.gvm_release(h, again)
        await rt.gvm_release(h, again)
        await rt.gvm_unmap(h, va, MiB)
        assert vgpu.memory_used == 0
        await rt.gvm_free(h, va, MiB)
        s.check_invariants()
    run_swappy(body)


def test_bad_handles_offsets_and_sizes_are_refused_and_change_nothing() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        other = await rt.gopen(s, 0, BOB)
        va = await rt.gvm_reserve(h, 4 * MiB)
        mem = await rt.gvm_create(h, MiB)
        await rt.gvm_create(other, MiB)
        theirs = await rt.gvm_create(other, MiB)             # ids are per context: not in h
        for bad in (0, 4095, -4096, 1 << 64, True, "x", None):
            with _errno(errno.EINVAL):
                await rt.gvm_reserve(h, bad)  # type: ignore[arg-type]
            with _errno(errno.EINVAL):
                await rt.gvm_create(h, bad)  # type: ignore[arg-type]
        with _errno(errno.EINVAL):
            await rt.gvm_reserve(h, MiB, 3 * 4096)              # not a power of two
        for args in ((va + 1, MiB, 0, mem), (va, MiB + 1, 0, mem), (va, MiB, 4096, mem),
                     (va, 2 * MiB, 0, mem), (va, MiB, 0, mem + 99), (va, MiB, 0, theirs),
                     (va + 4 * MiB, MiB, 0, mem), (va + 3 * MiB + 4096, MiB, 0, mem),
                     (0x1000, MiB, 0, mem), (va, MiB, -4096, mem)):
            with _errno(errno.EINVAL):
                await rt.gvm_map(h, *args)
        await rt.gvm_map(h, va, MiB, 0, mem)
        with _errno(errno.EEXIST):
            await rt.gvm_map(h, va + MiB - 4096, MiB, 0, mem)
        for rng in ((va, MiB // 2), (va + 4096, MiB), (va + MiB, MiB)):
            with _errno(errno.EINVAL):
                await rt.gvm_unmap(h, *rng)
        with _errno(errno.EINVAL):
            await rt.gvm_set_access(h, va, 2 * MiB, RW)           # a hole after the map
        with _errno(errno.EINVAL):
            await rt.gvm_set_access(h, va, MiB, 2)                # write-only is no flag
        with _errno(errno.EINVAL):
            await rt.gvm_free(h, va, 4 * MiB)                     # still mapped
        with _errno(errno.EINVAL):
            await rt.gvm_free(h, va, MiB)                         # another size
        with _errno(errno.EINVAL):
            await rt.gfree(h, va)                                  # not a gmalloc object
        with _errno(errno.EINVAL):
            await rt.gvm_retain(h, va + 4 * MiB)
        with _errno(errno.EINVAL):
            await rt.gvm_get_access(other, va)
        s.check_invariants()
    run_swappy(body)


def test_quota_reservations_and_ids_are_limited_per_context(monkeypatch) -> None:
    monkeypatch.setattr(D, "VMM_RESERVATIONS", 3)
    monkeypatch.setattr(D, "VMM_HANDLES", 2)
    monkeypatch.setattr(D, "VMM_MAPPINGS", 3)

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        share = h.vgpu.memory_size
        for _ in range(3):
            await rt.gvm_reserve(h, MiB)
        with _errno(errno.ENOMEM):
            await rt.gvm_reserve(h, MiB)
        with _errno(errno.ENOMEM):
            await rt.gvm_create(h, share + 4096)              # beyond the vGPU's share
        assert h.vgpu.memory_used == 0
        mem = await rt.gvm_create(h, MiB)
        await rt.gvm_create(h, MiB)
        with _errno(errno.ENOMEM):
            await rt.gvm_create(h, MiB)
        assert h.vgpu.memory_used == 2 * MiB
        await rt.gvm_release(h, mem)
        assert h.vgpu.memory_used == MiB
        va = next(iter(h.vmm.reservations))
        last = next(iter(h.vmm.allocs))
        for i in range(3):                                    # one allocation, three views
            await rt.gvm_map(h, va + i * 4096, 4096, 0, last)
        with _errno(errno.ENOMEM):
            await rt.gvm_map(h, va + 3 * 4096, 4096, 0, last)
        other = await rt.gopen(s, 0, BOB)                     # another context: its own limits
        await rt.gvm_reserve(other, MiB)
    run_swappy(body)


def test_allocations_swap_out_and_back_in_through_their_mappings() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        share = h.vgpu.memory_size
        va, _ = await _mapped(h, share // 2, reserve=share)
        data = pattern(8, share // 2)
        await rt.gmemcpy_to_device(h, va, data, len(data))
        hog = await rt.gmalloc(h, share * 3 // 4)             # evicts the allocation
        assert h.vgpu.swap.swapped_bytes > 0
        s.check_invariants()
        await rt.gfree(h, hog)
        assert (await read_back(h, va, len(data)) == data).all()
        await rt.gvm_set_access(h, va, share // 2, RO)        # remap keeps the data
        assert (await read_back(h, va, 4096) == data[:4096]).all()
    run_swappy(body)


def test_export_import_between_contexts_and_withdrawal() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        b = await rt.gopen(s, 1, BOB)
        va, mem = await _mapped(a, MiB)
        data = pattern(9, MiB)
        await rt.gmemcpy_to_device(a, va, data, MiB)
        fd = await rt.gvm_export(a, mem)
        try:
            theirs = await rt.gvm_import(b, fd)
            vb = await rt.gvm_reserve(b, MiB)
            await rt.gvm_map(b, vb, MiB, 0, theirs)
            await rt.gvm_set_access(b, vb, MiB, RW)
            assert (await read_back(b, vb, MiB) == data).all()
            with _errno(errno.EINVAL):                           # only the token opens it
                await rt.gshmat(b, next(iter(s.shm.segments)))
            s.check_invariants()
            await rt.gclose(a)                                    # withdraws the export
            with _errno(errno.EINVAL):
                await rt.gvm_import(b, fd)
            assert (await read_back(b, vb, MiB) == data).all()   # b's id keeps the memory
        finally:
            os.close(fd)
        forged = await _forged(s)
        with _errno(errno.EINVAL):
            await rt.gvm_import(b, forged)
        os.close(forged)
        with _errno(errno.EINVAL):
            await rt.gvm_import(b, -1)
    run_swappy(body)


async def _forged(s: rt.GdevSystem) -> int:
    """A token fd naming a live export with a wrong secret."""
    from gdevd.runtime.api_vmmshare import TOKEN, TOKEN_MAGIC, token_fd
    c = await rt.gopen(s, 0, ALICE)
    mem = await rt.gvm_create(c, 4096)
    os.close(await rt.gvm_export(c, mem))
    sid = next(iter(s.shm.segments))
    return token_fd(TOKEN.pack(TOKEN_MAGIC, sid, 0, bytes(16)))


def test_teardown_returns_everything_mapped_exported_and_reserved() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        va, mem = await _mapped(h, MiB, reserve=2 * MiB)
        await rt.gvm_create(h, MiB)
        os.close(await rt.gvm_export(h, mem))
        assert h.vgpu.memory_used == 2 * MiB and s.shm.segments
        await rt.gclose(h)
        assert h.vgpu.memory_used == 0 and not s.shm.segments
        np.testing.assert_equal(len(s.handles), 0)
    run_swappy(body)


def test_an_access_less_mapping_faults_even_when_its_pages_are_in_swap() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        va, _ = await _mapped(h, MiB)
        await rt.gmemcpy_to_device(h, va, pattern(10, MiB), MiB)
        await rt.gvm_set_access(h, va, MiB, 0)
        hog = await rt.gmalloc(h, h.vgpu.memory_size - 64 * 4096)   # evicts the allocation
        assert h.vgpu.swap.swapped_bytes >= MiB
        await rt.gfree(h, hog)
        with pytest.raises(MmuFault):                   # not served from swap unchecked
            await read_back(h, va, 4096)
    run_swappy(body)


_VALUES = st.one_of(st.sampled_from([0, 1, 4095, 4096, 8192, MiB, 2 * MiB, 1 << 30, 1 << 40,
                                     (1 << 64) - 4096, (1 << 64) - 1, -4096]),
                    st.integers(-(1 << 65), 1 << 65))
_CALLS = st.lists(st.tuples(st.sampled_from(["reserve", "free", "create", "release", "map",
                                             "unmap", "access", "get", "retain", "size"]),
                            st.lists(st.one_of(_VALUES, st.sampled_from(["va", "mem"])),
                                     min_size=4, max_size=4)), max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(calls=_CALLS)
def test_hostile_values_are_refused_or_served_and_change_nothing_else(calls) -> None:
    """Any values, including the context's own addresses and ids, give a result or a
    GdevError; the invariants hold after each call and teardown returns every byte."""
    verbs = {"reserve": (rt.gvm_reserve, 3), "free": (rt.gvm_free, 2),
             "create": (rt.gvm_create, 1), "release": (rt.gvm_release, 1),
             "map": (rt.gvm_map, 4), "unmap": (rt.gvm_unmap, 2),
             "access": (rt.gvm_set_access, 3), "get": (rt.gvm_get_access, 1),
             "retain": (rt.gvm_retain, 1), "size": (rt.gvm_size, 1)}

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, ALICE)
        va, mem = await _mapped(h, MiB, reserve=4 * MiB)
        for name, raw in calls:
            verb, n = verbs[name]
            args = [va if a == "va" else mem if a == "mem" else a for a in raw[:n]]
            try:
                await verb(h, *args)
            except GdevError as e:
                assert e.errno in (errno.EINVAL, errno.ENOMEM, errno.EEXIST), e
            s.check_invariants()
    run_swappy(body)
