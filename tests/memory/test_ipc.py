"""CUDA IPC in-process (gdevd/runtime/api_ipc.py, ipc.py): export, open, reopen, close;
the memory outliving its owner's free and close; forged, withdrawn and misused handles
refused with nothing changed; per-context limits; interprocess events ordering another
context's host waits and streams.  Every test ends with the fsck of ``run_swappy``."""

from __future__ import annotations

import errno

import pytest
import trio
import trio.testing

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.runtime import Credentials
from gdevd.runtime import defaults as D
from libgdev import ipchandle

from .conftest import MiB, pattern, read_back, run_swappy

ALICE, BOB = Credentials(1000, 100, 11), Credentials(1001, 100, 12)


def _errno(err: int):  # type: ignore[no-untyped-def]
    return pytest.raises(GdevError, check=lambda e: e.errno == err)


def _tampered(handle: bytes, at: int) -> bytes:
    b = bytearray(handle)
    b[at] ^= 1
    return bytes(b)


def test_open_shares_the_pages_and_reopen_counts() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        va = await rt.gmalloc(a, 3 * 4096 + 5)
        data = pattern(1, 3 * 4096)
        await rt.gmemcpy_to_device(a, va, data, len(data))
        handle = await rt.gipc_export(a, va)
        assert len(handle) == 64 and await rt.gipc_export(a, va + 4096) == handle
        fields = ipchandle.unpack(handle, ipchandle.MEM_MAGIC)
        assert fields is not None and fields.pid == ALICE.pid and fields.size == 4 * 4096
        vb, size = await rt.gipc_open(b, handle)
        assert size == 4 * 4096 and (await read_back(b, vb, len(data)) == data).all()
        await rt.gmemcpy_to_device(b, vb + 4096, pattern(2, 4096), 4096)   # b writes, a sees
        assert (await read_back(a, va + 4096, 4096) == pattern(2, 4096)).all()
        assert await rt.gipc_open(b, handle) == (vb, size)                 # same address
        s.check_invariants()
        used = a.vgpu.memory_used
        assert b.vgpu.memory_used == 0 and used == 4 * 4096                # charged once
        await rt.gipc_close(b, vb)
        assert (await read_back(b, vb, 4096) == data[:4096]).all()         # one open left
        await rt.gipc_close(b, vb)
        with _errno(errno.EINVAL):
            await rt.gipc_close(b, vb)
        assert b.space.objects.find(vb) is None
        s.check_invariants()
    run_swappy(body)


@pytest.mark.parametrize("how", ["gfree", "gclose"])
def test_memory_outlives_its_owner_and_the_export_is_withdrawn(how: str) -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        c = await rt.gopen(s, 2, BOB)
        va = await rt.gmalloc(a, MiB)
        data = pattern(3, MiB)
        await rt.gmemcpy_to_device(a, va, data, MiB)
        handle = await rt.gipc_export(a, va)
        vb, _ = await rt.gipc_open(b, handle)
        await (rt.gfree(a, va) if how == "gfree" else rt.gclose(a))
        with _errno(errno.ENOENT):                      # no new opens
            await rt.gipc_open(c, handle)
        assert (await read_back(b, vb, MiB) == data).all()
        assert s.virtual[0].memory_used == MiB          # still charged to its owner's vGPU
        s.check_invariants()
        await rt.gipc_close(b, vb)
        assert s.virtual[0].memory_used == 0 and not s.shm.segments
    run_swappy(body)


def test_an_importer_closing_its_context_leaves_the_export() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        va = await rt.gmalloc(a, 4096)
        handle = await rt.gipc_export(a, va)
        await rt.gipc_open(b, handle)
        await rt.gclose(b)                              # a killed importer
        c = await rt.gopen(s, 1, BOB)
        vc, _ = await rt.gipc_open(c, handle)
        assert vc and len(s.shm.segments) == 1
        s.check_invariants()
    run_swappy(body)


def test_forged_and_misused_handles_are_refused_and_change_nothing() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        va = await rt.gmalloc(a, 4096)
        handle = await rt.gipc_export(a, va)
        for forged in (_tampered(handle, 30), _tampered(handle, 8)):    # secret, id
            with _errno(errno.ENOENT):
                await rt.gipc_open(b, forged)
        for bad in (_tampered(handle, 0), _tampered(handle, 50), handle[:32], b"", 7):
            with _errno(errno.EINVAL):
                await rt.gipc_open(b, bad)                              # type: ignore[arg-type]
        with _errno(errno.EINVAL):
            await rt.gipc_open(a, handle)               # the exporting context itself
        sid = next(iter(s.shm.segments))
        with _errno(errno.EINVAL):
            await rt.gshmat(b, sid)                     # the shm id does not open it
        from gdevd.runtime.api_vmmshare import TOKEN, TOKEN_MAGIC
        fields = ipchandle.unpack(handle, ipchandle.MEM_MAGIC)
        assert fields is not None
        with _errno(errno.EINVAL):                      # nor does a VMM token with its secret
            rt.vmm_import_token(b, TOKEN.pack(TOKEN_MAGIC, sid, 0, fields.secret))
        with _errno(errno.ENOENT):
            await rt.gipc_export(b, va)                 # a's address is not b's memory
        vb, _ = await rt.gipc_open(b, handle)
        with _errno(errno.EINVAL):
            await rt.gipc_export(b, vb)                 # an opened mapping is not b's own
        with _errno(errno.EINVAL):
            await rt.gshmdt(b, vb)
        with _errno(errno.EINVAL):
            await rt.gunref(b, vb)
        with _errno(errno.EINVAL):
            await rt.gipc_close(b, vb + 4096)
        assert b.ipc.opens == {vb: 1}
        s.check_invariants()
    run_swappy(body)


def test_opens_and_events_are_bounded_per_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(D, "IPC_OPENS", 2)
    monkeypatch.setattr(D, "IPC_EVENTS", 2)

    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        handles = [await rt.gipc_export(a, await rt.gmalloc(a, 4096)) for _ in range(3)]
        await rt.gipc_open(b, handles[0])
        await rt.gipc_open(b, handles[1])
        await rt.gipc_open(b, handles[1])               # a reopen takes no new slot
        with _errno(errno.ENOMEM):
            await rt.gipc_open(b, handles[2])
        events = [await rt.gipc_event_new(a), await rt.gipc_event_new(a)]
        with _errno(errno.ENOMEM):
            await rt.gipc_event_new(a)
        assert len(s.ipc_events.events) == 2
        await rt.gipc_event_open(b, events[0])
        await rt.gipc_event_open(b, events[1])
        fields = ipchandle.unpack(events[0], ipchandle.EVENT_MAGIC)
        assert fields is not None and await rt.gipc_event_open(b, events[0]) == fields.id
        s.check_invariants()
    run_swappy(body)


def _blocker(h: rt.Handle, stream: int = 0) -> trio.Event:
    """Make the end of ``stream`` of ``h`` an operation that completes when the returned
    event is set (a kernel that runs as long as the test wants)."""
    gate = trio.Event()
    h.streams.install(h.streams.get(stream), gate)
    return gate


def test_an_opened_event_sees_the_exporters_record() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        handle = await rt.gipc_event_new(a)
        mine = ipchandle.unpack(handle, ipchandle.EVENT_MAGIC)
        assert mine is not None
        theirs = await rt.gipc_event_open(b, handle)
        await rt.gipc_event_sync(b, theirs, 0)          # never recorded: complete
        gate = _blocker(a)
        await rt.gipc_event_record(a, mine.id, 0)
        with _errno(errno.ETIME):
            await rt.gipc_event_sync(b, theirs, 0)
        # b's stream waits in the daemon: its copy runs only after a's record completes
        vb = await rt.gmalloc(b, 8192)
        await rt.gmemcpy_to_device(b, vb, pattern(4, 4096), 4096)
        st = await rt.gstream_create(b, 1)              # non-blocking: b's reads go on
        await rt.gipc_event_wait(b, st, theirs)
        fence = await rt.gmemcpy_async(b, vb + 4096, vb, 4096, st)
        with _errno(errno.ETIME):
            await rt.gsync(b, fence, 0.05)
        assert not (await read_back(b, vb + 4096, 4096)).any()
        gate.set()
        await rt.gsync(b, fence)
        assert (await read_back(b, vb + 4096, 4096) == pattern(4, 4096)).all()
        await rt.gipc_event_sync(b, theirs)
        await rt.gipc_event_sync(b, theirs, 0)
        await rt.gipc_event_close(a, mine.id)           # b's reference keeps the event
        await rt.gipc_event_record(b, theirs, st)
        with _errno(errno.EINVAL):
            await rt.gipc_event_record(a, mine.id, 0)   # a holds it no more
        await rt.gipc_event_close(b, theirs)
        assert not s.ipc_events.events
        s.check_invariants()
    run_swappy(body)


def test_event_handles_are_checked_and_die_with_their_holders() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        handle = await rt.gipc_event_new(a)
        eid = ipchandle.unpack(handle, ipchandle.EVENT_MAGIC).id   # type: ignore[union-attr]
        for forged in (_tampered(handle, 30), _tampered(handle, 8)):
            with _errno(errno.ENOENT):
                await rt.gipc_event_open(b, forged)
        with _errno(errno.EINVAL):
            await rt.gipc_event_open(b, _tampered(handle, 1))
        va = await rt.gmalloc(a, 4096)
        with _errno(errno.EINVAL):                      # a memory handle is no event handle
            await rt.gipc_event_open(b, await rt.gipc_export(a, va))
        for verb in (rt.gipc_event_close, rt.gipc_event_sync):
            with _errno(errno.EINVAL):                  # ids are only good after an open
                await verb(b, eid)
        with _errno(errno.EINVAL):
            await rt.gipc_event_wait(b, 0, eid)
        await rt.gipc_event_open(b, handle)
        await rt.gclose(a)
        await rt.gipc_event_sync(b, eid)
        await rt.gclose(b)
        assert not s.ipc_events.events
    run_swappy(body)


def test_a_close_waiting_for_the_stream_counts_an_open_made_meanwhile() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a, b = await rt.gopen(s, 0, ALICE), await rt.gopen(s, 1, BOB)
        handle = await rt.gipc_export(a, await rt.gmalloc(a, 4096))
        vb, _ = await rt.gipc_open(b, handle)
        gate = _blocker(b)                              # b's earlier work still runs
        async with trio.open_nursery() as n:
            n.start_soon(rt.gipc_close, b, vb)          # the last close, waiting for it
            await trio.testing.wait_all_tasks_blocked()
            assert await rt.gipc_open(b, handle) == (vb, 4096)     # reopened meanwhile
            gate.set()
        assert b.ipc.opens == {vb: 1} and b.space.objects.find(vb) is not None
        s.check_invariants()
    run_swappy(body)
