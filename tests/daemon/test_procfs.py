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
        # a quarter of 64 MiB outside the 10 % temporal swap area, in pages
        assert read_entry(BY_NAME["memory_size"], system.virtual[0]) == b"%d\n" % 15_097_856
    run(body)


def test_any_write_is_applied_whole_or_changes_nothing() -> None:
    """On a real vGPU (three siblings at 25 %): any bytes written to any writable vdN entry
    either set exactly the value written or are refused with EINVAL, changing nothing."""
    async def body(system) -> None:
        v = system.virtual[0]

        @settings(max_examples=200, deadline=None)
        @given(st.binary(max_size=70), st.sampled_from([e for e in PER_VGPU if e.writable]))
        def case(data: bytes, entry: Entry) -> None:
            before = read_entry(entry, v)
            try:
                assert write_entry(entry, v, 0, data) == len(data)
                assert read_entry(entry, v) == b"%d\n" % int(data.strip())
                write_entry(entry, v, 0, before)
            except GdevError as exc:
                assert exc.errno == errno.EINVAL
                assert read_entry(entry, v) == before
        case()
    run(body)


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
        assert v.memory_size == 30_199_808  # half of 64 MiB less the swap area
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



def test_bandwidth_shares_of_one_gpu_never_total_over_100(caplog) -> None:
    async def body(system) -> None:
        for name in ("compute_bandwidth", "memory_bandwidth"):
            v0, v1 = system.virtual[0], system.virtual[1]
            with pytest.raises(GdevError) as info:      # 4 x 25 %: nothing is free
                write_entry(BY_NAME[name], v0, 0, b"30\n")
            assert info.value.errno == errno.EINVAL and "at most 25% is free" in \
                info.value.detail
            assert getattr(v0, name) == 25
            write_entry(BY_NAME[name], v1, 0, b"10\n")  # lower one, then raise another
            write_entry(BY_NAME[name], v0, 0, b"40\n")
            assert sum(getattr(v, name) for v in system.virtual) == 100
            assert f"/proc/gdev/vd0/{name}: refused b'30\\n'" in caplog.text
    run(body)


def test_memory_shares_may_overcommit_and_say_so(caplog) -> None:
    async def body(system) -> None:
        over = BY_NAME["memory_overcommit"]
        assert read_entry(over, system.virtual[2]) == b"0\n"
        write_entry(BY_NAME["memory_share"], system.virtual[0], 0, b"45\n")
        assert [read_entry(over, v) for v in system.virtual] == [b"20\n"] * 4
        assert "overcommitted by 20%" in caplog.text
    run(body)


def test_every_refused_write_is_logged_with_its_reason(caplog) -> None:
    async def body(system) -> None:
        cases = [(BY_NAME["period"], system.virtual[3], b"0", "outside [1, 4294967295]"),
                 (BY_NAME["scheduler"], system, b"rr", "one of band, credit, fifo, null"),
                 (BY_NAME["band_wait_us"], system, b"fast", "not an unsigned integer"),
                 (BY_NAME["memory_used"], system.virtual[1], b"1", "read-only")]
        for entry, target, data, why in cases:
            caplog.clear()
            with pytest.raises(GdevError):
                write_entry(entry, target, 0, data)
            assert [r.levelname for r in caplog.records] == ["WARNING"]
            assert why in caplog.text and repr(data) in caplog.text
        assert "/proc/gdev/vd1/memory_used" in caplog.text
    run(body)


def test_scheduler_reads_like_linux_and_takes_a_plain_name() -> None:
    async def body(system) -> None:
        entry = BY_NAME["scheduler"]
        write_entry(entry, system, 0, b"fifo\n")
        assert read_entry(entry, system) == b"band credit [fifo] null\n"
        with pytest.raises(GdevError):     # what a read shows is not a value to write back
            write_entry(entry, system, 0, b"band credit [fifo] null\n")
    run(body)


def test_metrics_carry_every_numeric_vgpu_entry() -> None:
    from procfs.metrics import COVERED
    from tests.daemon import promtext

    async def body(system) -> None:
        fams = promtext.parse(read_entry(BY_NAME["metrics"], system).decode())
        for e in PER_VGPU:
            if e.name not in COVERED:
                samples = fams[f"gdev_vgpu_proc_{e.name}"]["samples"]
                assert samples[(("gpu", "0"), ("vgpu", "1"))] == int(read_entry(e,
                                                                     system.virtual[1]))
        assert fams["gdev_vgpu_proc_period"]["type"] == "untyped"
    run(body)


def test_a_tenants_process_name_cannot_break_the_listings() -> None:
    from tests.daemon import promtext

    async def body(system) -> None:
        name = 'a "b"\\c\nd\x1b[2J e'               # what comm may hold (15 bytes or not)
        h = await rt.gopen(system, 2, rt.Credentials(1234, 1234, 99, name))
        head, row = (line.split() for line in
                     read_entry(BY_NAME["contexts"], system).decode().splitlines())
        assert dict(zip(head, row, strict=True))["name"] == 'a?"b"\\c?d?[2J?e'
        fams = promtext.parse(read_entry(BY_NAME["metrics"], system).decode())
        (labels,) = fams["gdev_context_memory_bytes"]["samples"]
        assert dict(labels)["name"] == name and dict(labels)["uid"] == "1234"
        await rt.gclose(h)
    run(body)
