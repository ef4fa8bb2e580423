"""procfs as a table, without mounting: every entry reads, writes follow the rules (offset 0
only, EINVAL changes nothing, EBUSY when a share would drop below what is in use)."""

from __future__ import annotations

import errno

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from gdevd import runtime as rt
from gdevd.errors import GdevError
from procfs import ENTRIES, GLOBAL, PER_VGPU, read_entry, write_entry
from procfs.table import Entry

BY_NAME = {e.name: e for e in ENTRIES}


def run(body) -> None:
    async def main() -> None:
        async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20)) as system:
            await body(system)
            system.check_invariants()
    trio.run(main)


def test_table_is_gdevs_names_plus_ours() -> None:
    assert {e.name for e in GLOBAL} >= {"device_count", "virtual_device_count"}
    assert {e.name for e in PER_VGPU} >= {"compute_bandwidth", "memory_bandwidth",
                                         "memory_share", "period", "compute_bandwidth_used",
                                         "memory_bandwidth_used", "phys"}
    for e in ENTRIES:
        assert e.help and (e.mode == 0o644) == e.writable


def test_every_entry_reads_a_number_and_a_newline() -> None:
    async def body(system) -> None:
        for e in GLOBAL:
            assert read_entry(e, system).endswith(b"\n")
        for v in system.virtual:
            for e in PER_VGPU:
                int(read_entry(e, v))
        assert read_entry(BY_NAME["memory_size"], system.virtual[0]) == b"%d\n" % (16 << 20)
    run(body)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70), st.sampled_from([e for e in PER_VGPU if e.writable]))
def test_any_write_is_applied_whole_or_changes_nothing(data: bytes, entry: Entry) -> None:
    class V:  # the attributes procfs touches on a VirtualGpu
        memory_share = compute_bandwidth = memory_bandwidth = 25
        period_us, memory_used, watchdog_ms, guest = 30000, 0, 0, 0

        class phys:  # noqa: N801
            memory_size, index = 1 << 30, 0
    v = V()
    before = read_entry(entry, v)
    try:
        assert write_entry(entry, v, 0, data) == len(data)
        assert read_entry(entry, v) == b"%d\n" % int(data.strip())
    except GdevError as exc:
        assert exc.errno == errno.EINVAL
        assert read_entry(entry, v) == before


def test_offsets_readonly_and_shrinking_below_use() -> None:
    async def body(system) -> None:
        v = system.virtual[1]
        with pytest.raises(GdevError) as info:
            write_entry(BY_NAME["period"], v, 2, b"5")
        assert info.value.errno == errno.EINVAL
        with pytest.raises(GdevError) as info:
            write_entry(BY_NAME["memory_used"], v, 0, b"5")
        assert info.value.errno == errno.EINVAL
        h = await rt.gopen(system, 1)
        await rt.gmalloc(h, 8 << 20)
        write_entry(BY_NAME["memory_share"], v, 0, b"10\n")  # 6.4 MiB < 8 MiB in use:
        assert v.memory_share == 10                           # the excess is swapped out
        while v.memory_used > v.memory_size:
            await trio.sleep(0.01)
        assert v.memory_used == 0 and v.swap.swapped_bytes == 8 << 20
        write_entry(BY_NAME["memory_share"], v, 0, b"50\n")
        assert v.memory_size == 32 << 20
        await rt.gclose(h)
    run(body)


def test_ioctl_poll_window_is_live_and_bounded() -> None:
    async def body(system) -> None:
        e = BY_NAME["ioctl_poll_us"]
        assert read_entry(e, system) == b"%d\n" % rt.GdevConfig().ioctl_poll_us
        write_entry(e, system, 0, b"0\n")
        assert system.config.ioctl_poll_us == 0
        for bad in (b"1001", b"-1", b"fast", b""):
            with pytest.raises(GdevError) as exc:
                write_entry(e, system, 0, bad)
            assert exc.value.errno == errno.EINVAL and system.config.ioctl_poll_us == 0
        write_entry(e, system, 0, b"1000")
        assert system.config.ioctl_poll_us == 1000
    run(body)

