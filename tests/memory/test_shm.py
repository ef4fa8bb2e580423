"""Shared device memory (gshmget/at/dt/ctl) in-process: System V semantics and permissions.

Credentials are the opener's (``gopen(..., cred=...)``), so every permission rule is tested
here without a second user; tests/memory/test_mounted.py repeats the key ones as a real
unprivileged process through the daemon.
"""

from __future__ import annotations

import errno

import numpy as np
import pytest

from gdevd import runtime as rt
from gdevd.errors import GdevError, MmuFault
from gdevd.runtime import Credentials
from gdevd.runtime.constants import (
    GDEV_IPC_CREAT,
    GDEV_IPC_EXCL,
    GDEV_IPC_PRIVATE,
    GDEV_IPC_RMID,
    GDEV_IPC_SET,
    GDEV_IPC_STAT,
)
from procfs import read_entry
from procfs.table import ENTRIES

from .conftest import MiB, pattern, read_back, run_swappy

ALICE, BOB, CAROL, ROOT = (Credentials(1000, 100, 11), Credentials(1001, 100, 12),
                           Credentials(1002, 200, 13), Credentials(0, 0, 14))
SHM = next(e for e in ENTRIES if e.name == "shm")


def _errno(err: int):  # type: ignore[no-untyped-def]
    class Expect:
        def __enter__(self) -> None:
            pass

        def __exit__(self, t, v, tb) -> bool:  # type: ignore[no-untyped-def]
            assert isinstance(v, GdevError), f"expected errno {err}, got {v!r}"
            assert v.errno == err, f"expected {errno.errorcode[err]}, got {v!r}"
            return True
    return Expect()


def test_get_create_excl_enoent_and_size_rules() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        with _errno(errno.ENOENT):
            await rt.gshmget(a, 42, MiB, 0o600)
        sid = await rt.gshmget(a, 42, MiB, GDEV_IPC_CREAT | 0o600)
        assert await rt.gshmget(a, 42, MiB, GDEV_IPC_CREAT | 0o600) == sid
        assert await rt.gshmget(a, 42, 0, 0) == sid                # size 0: any existing
        with _errno(errno.EEXIST):
            await rt.gshmget(a, 42, MiB, GDEV_IPC_CREAT | GDEV_IPC_EXCL | 0o600)
        with _errno(errno.EINVAL):
            await rt.gshmget(a, 42, 2 * MiB, 0)                     # larger than it is
        with _errno(errno.EINVAL):
            await rt.gshmget(a, 43, 0, GDEV_IPC_CREAT)              # new needs a size
        with _errno(errno.EINVAL):
            await rt.gshmget(a, 43, MiB, 0o10000)                   # unknown flag
        p1 = await rt.gshmget(a, GDEV_IPC_PRIVATE, MiB, 0o600)
        p2 = await rt.gshmget(a, GDEV_IPC_PRIVATE, MiB, 0o600)
        assert len({sid, p1, p2}) == 3
        assert s.virtual[0].memory_used == 3 * MiB                  # charged to the creator
        st = await rt.gshmctl(a, sid, GDEV_IPC_STAT)
        assert (st.key, st.id, st.size, st.uid, st.gid, st.cuid, st.mode, st.nattch,
                st.cpid) == (42, sid, MiB, 1000, 100, 1000, 0o600, 0, 11)
    run_swappy(body)


def test_attach_shares_bytes_and_rmid_waits_for_the_last_detach() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        b = await rt.gopen(s, 1, BOB)
        sid = await rt.gshmget(a, 7, 2 * MiB, GDEV_IPC_CREAT | 0o660)
        va = await rt.gshmat(a, sid)
        vb = await rt.gshmat(b, await rt.gshmget(b, 7, 0, 0o660))
        data = pattern(5, 2 * MiB)
        await rt.gmemcpy_to_device(a, va, data, data.size)
        assert np.array_equal(await read_back(b, vb, data.size), data)
        assert (await rt.gshmctl(b, sid, GDEV_IPC_STAT)).nattch == 2
        assert "7" in read_entry(SHM, s).decode().split("\n")[1].split()[0]
        await rt.gshmctl(a, sid, GDEV_IPC_RMID)
        with _errno(errno.ENOENT):                                  # the key is gone ...
            await rt.gshmget(b, 7, 0, 0)
        assert np.array_equal(await read_back(b, vb, data.size), data)  # ... the data not
        await rt.gshmdt(a, va)
        with _errno(errno.EINVAL):
            await rt.gshmdt(a, va)
        assert s.virtual[0].memory_used == 2 * MiB and s.virtual[1].memory_used == 0
        await rt.gshmdt(b, vb)
        assert s.virtual[0].memory_used == 0 and not s.shm.segments
        with _errno(errno.EINVAL):
            await rt.gshmat(b, sid)
    run_swappy(body)


def test_creator_close_removes_at_last_detach_and_accounting_returns() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 2, ALICE)
        b = await rt.gopen(s, 2, ALICE)
        sid = await rt.gshmget(a, 9, MiB, GDEV_IPC_CREAT | 0o600)
        vb = await rt.gshmat(b, sid)
        await rt.gclose(a)
        assert sid in s.shm.segments and s.shm.segments[sid].removed
        await rt.gmemcpy_to_device(b, vb, pattern(1, 4096), 4096)
        await rt.gclose(b)
        assert not s.shm.segments and s.virtual[2].memory_used == 0
    run_swappy(body)


@pytest.mark.parametrize(("mode", "who", "ok"), [
    (0o600, ALICE, True), (0o600, BOB, False), (0o660, BOB, True), (0o660, CAROL, False),
    (0o606, CAROL, True), (0o000, ROOT, True), (0o400, BOB, False), (0o066, ALICE, False),
])
def test_permissions_follow_ipcperms(mode: int, who: Credentials, ok: bool) -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        other = await rt.gopen(s, 1, who)
        sid = await rt.gshmget(a, 5, MiB, GDEV_IPC_CREAT | mode)
        for verb in (lambda: rt.gshmget(other, 5, 0, 0o600),
                     lambda: rt.gshmat(other, sid)):
            if ok:
                await verb()
            else:
                with _errno(errno.EACCES):
                    await verb()
    run_swappy(body)


def test_set_and_rmid_need_owner_creator_or_root() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        b = await rt.gopen(s, 1, BOB)
        r = await rt.gopen(s, 2, ROOT)
        sid = await rt.gshmget(a, 11, MiB, GDEV_IPC_CREAT | 0o666)
        for cmd in (GDEV_IPC_SET, GDEV_IPC_RMID):
            with _errno(errno.EPERM):
                await rt.gshmctl(b, sid, cmd, {"uid": 1001, "gid": 100, "mode": 0o600})
        with _errno(errno.EINVAL):
            await rt.gshmctl(a, sid, 99)
        with _errno(errno.EINVAL):
            await rt.gshmctl(a, sid, GDEV_IPC_SET, {"uid": 1})
        await rt.gshmctl(a, sid, GDEV_IPC_SET, {"uid": 1001, "gid": 100, "mode": 0o600})
        st = await rt.gshmctl(b, sid, GDEV_IPC_STAT)                # bob owns it now
        assert (st.uid, st.cuid, st.mode) == (1001, 1000, 0o600)
        await rt.gshmdt(a, await rt.gshmat(a, sid))                 # the creator: user bits
        c = await rt.gopen(s, 3, CAROL)
        with _errno(errno.EACCES):
            await rt.gshmat(c, sid)
        await rt.gshmctl(a, sid, GDEV_IPC_SET, {"uid": 1000, "gid": 100, "mode": 0o000})
        with _errno(errno.EACCES):
            await rt.gshmctl(b, sid, GDEV_IPC_STAT)
        await rt.gshmctl(r, sid, GDEV_IPC_RMID)                     # root may
        assert not s.shm.segments
    run_swappy(body)


def test_shared_segment_swaps_out_and_back_for_every_attacher() -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 0, ALICE)
        b = await rt.gopen(s, 0, ALICE)
        sid = await rt.gshmget(a, GDEV_IPC_PRIVATE, 4 * MiB, 0o600)
        va, vb = await rt.gshmat(a, sid), await rt.gshmat(b, sid)
        data = pattern(8, 4 * MiB)
        await rt.gmemcpy_to_device(a, va, data, data.size)
        big = await rt.gmalloc(b, 6 * MiB)                          # 8 MiB share: out it goes
        assert s.shm.segments[sid].block.resident_bytes == 0
        with pytest.raises(MmuFault):                               # unmapped in both
            a.mmu.translate(va)
        await rt.gmemcpy_to_device(b, vb + MiB, data[MiB:MiB + 8192], 8192)  # two pages back
        assert s.shm.segments[sid].block.resident_bytes == 8192
        assert b.mmu.translate(vb + MiB) == a.mmu.translate(va + MiB)
        assert np.array_equal(await read_back(a, va, data.size), data)
        await rt.gfree(b, big)
    run_swappy(body)
