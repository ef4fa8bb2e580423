"""The scheduler's /proc/gdev entries, in-process: reads, live writes, refusals."""

from __future__ import annotations

import errno

import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime.sched import COMPUTE
from procfs import ENTRIES, read_entry, write_entry

from .sim import client, run

E = {e.name: e for e in ENTRIES}


def _einval(entry: str, target: object, data: bytes) -> None:
    before = read_entry(E[entry], target)
    with pytest.raises(GdevError) as info:
        write_entry(E[entry], target, 0, data)
    assert info.value.errno in (errno.EINVAL, errno.ESRCH)
    assert read_entry(E[entry], target) == before


def test_policy_and_queueing_switch_at_run_time() -> None:
    async def body(s: rt.GdevSystem) -> None:
        assert read_entry(E["scheduler"], s) == b"[band] credit fifo null\n"
        assert read_entry(E["queueing"], s) == b"mrq\n"
        for name in ("credit", "fifo", "null", "band"):
            write_entry(E["scheduler"], s, 0, name.encode() + b"\n")
            assert s.scheduler.policy.name == name
        write_entry(E["queueing"], s, 0, b"SDQ\n")
        assert read_entry(E["queueing"], s) == b"sdq\n"
        for bad in (b"rr\n", b"", b"band fifo", b"b\xe4nd", b"x" * 40):
            _einval("scheduler", s, bad)
            _einval("queueing", s, bad)
    run(body)


def test_tunables_take_effect_and_are_bounded() -> None:
    async def body(s: rt.GdevSystem) -> None:
        write_entry(E["band_wait_us"], s, 0, b"250\n")
        assert s.scheduler.band_wait == pytest.approx(250e-6)
        write_entry(E["util_window_us"], s, 0, b"500000")
        assert s.scheduler.window == pytest.approx(0.5)
        write_entry(E["instances_max"], s, 0, b"4")
        assert s.scheduler.instances_max == 4
        _einval("band_wait_us", s, b"2000000")
        _einval("util_window_us", s, b"10")
        _einval("instances_max", s, b"0")
    run(body)


def test_contexts_list_every_context_with_its_accounting() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0), await rt.gopen(s, 2)
        await rt.gmalloc(a, 1 << 20)
        await client(s.scheduler, a, 3e-3, trio.current_time() + 0.03)
        lines = read_entry(E["contexts"], s).decode().splitlines()
        head = lines[0].split()
        rows = {int(r.split()[0]): dict(zip(head, r.split(), strict=True)) for r in lines[1:]}
        assert set(rows) == {a.cid, b.cid}
        ra = rows[a.cid]
        assert ra["vgpu"] == "0" and ra["memory"] == str(1 << 20) and ra["prio"] == "20"
        assert int(ra["launches"]) == 10 and float(ra["compute_ms"]) == pytest.approx(30)
        assert rows[b.cid]["vgpu"] == "2" and rows[b.cid]["launches"] == "0"
        vd0 = s.virtual[0]
        assert read_entry(E["launches"], vd0) == b"10\n"
        assert read_entry(E["compute_time_us"], vd0) == b"30000\n"
    run(body)


def test_priority_override_through_proc() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0)
        write_entry(E["priority"], s, 0, b"%d 33\n" % a.cid)
        assert s.scheduler.entity(a).prio.effective(trio.current_time()) == 33
        assert b"%d 33 33\n" % a.cid in read_entry(E["priority"], s)
        write_entry(E["priority"], s, 0, b"%d -\n" % a.cid)
        assert b"%d 20 -\n" % a.cid in read_entry(E["priority"], s)
        for bad in (b"%d 41" % a.cid, b"%d" % a.cid, b"999 3", b"x 3", b"%d -1" % a.cid):
            _einval("priority", s, bad)
    run(body)


def test_used_bandwidth_entries_read_the_measurement() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 1)
        await client(s.scheduler, a, 1e-3, trio.current_time() + 1.5, gap=3e-3)
        assert read_entry(E["compute_bandwidth_used"], s.virtual[1]) == b"25\n"
        assert read_entry(E["memory_bandwidth_used"], s.virtual[1]) == b"0\n"
        assert s.scheduler.vres(s.virtual[1], COMPUTE).usage.launches > 0
    run(body)


def test_bytes_and_copies_are_accounted_per_context_and_per_vgpu() -> None:
    from ..runtime.conftest import run_system

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 1)
        va = await rt.gmalloc(h, 1 << 20)
        host = bytearray(1 << 20)
        await rt.gmemcpy_to_device(h, va, host, 1000)          # direct path
        await rt.gmemcpy_to_device(h, va, host, 1 << 20)       # copy engine, chunked
        await rt.gmemcpy_from_device(h, host, va, 1 << 20)
        total = 1000 + 2 * (1 << 20)
        row = read_entry(E["contexts"], s).decode().splitlines()[1].split()
        assert int(row[9]) == total and int(row[8]) == 3       # bytes, copies (direct too)
        await rt.gclose(h)
        vd1 = s.virtual[1]
        assert read_entry(E["bytes_copied"], vd1) == b"%d\n" % total
        assert read_entry(E["copies"], vd1) == b"3\n"
        assert int(read_entry(E["memory_time_us"], vd1)) > 0
    run_system(body)
