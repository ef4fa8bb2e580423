"""The guest class (gdevd/runtime/sched/guest.py): guests run only in the hosts' idle
cycles, in periodic or continuous mode, and a host preempts a guest at once."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest
import trio

from gdevd import runtime as rt
from gdevd.runtime.sched import COMPUTE
from procfs import read_entry, write_entry
from procfs.table import ENTRIES

from ..runtime.conftest import raises_errno, run_system
from .kernels import LoopModule
from .test_preempt import FOREVER, _until

BY_NAME = {(e.scope, e.name): e for e in ENTRIES}


def test_a_sched_idle_opener_makes_a_guest_and_proc_and_the_verb_override_it() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        os.sched_setscheduler(child.pid, os.SCHED_IDLE, os.sched_param(0))

        async def body(s: rt.GdevSystem) -> None:
            g = s.scheduler.guests
            idle = await rt.gopen(s, 0, cred=rt.Credentials(0, 0, child.pid))
            os.sched_setscheduler(child.pid, os.SCHED_OTHER, os.sched_param(0))
            host = await rt.gopen(s, 0)           # (the class is the opener's at the open)
            assert g.is_guest(s.scheduler.entity(idle)) and not g.is_guest(s.scheduler.entity(host))
            assert await rt.gset_guest(host, True) is True
            assert await rt.gset_guest(host, None) is False
            s.virtual[1].guest = 1                                  # a guest vGPU
            assert g.is_guest(s.scheduler.entity(await rt.gopen(s, 1)))
            entry = BY_NAME[("global", "guests")]
            write_entry(entry, s, 0, b"%d 0\n" % idle.cid)
            assert not g.is_guest(s.scheduler.entity(idle))
            assert b"%d 0 0\n" % idle.cid in read_entry(entry, s)
            with raises_errno(errno.EINVAL):
                write_entry(entry, s, 0, b"%d maybe" % idle.cid)
            user = await rt.gopen(s, 1, cred=rt.Credentials(1000, 1000, os.getpid()))
            with raises_errno(errno.EPERM):                          # a guest vGPU's tenant
                await rt.gset_guest(user, False)
        run_system(body)
    finally:
        child.kill()
        child.wait()


def test_a_host_preempts_a_running_guest_at_once_even_without_slices() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        sched.preempter.slice_s = 0                       # the paper's non-preemptive mode
        guest, host = await rt.gopen(s, 0), await rt.gopen(s, 1)
        await rt.gset_guest(guest, True)
        mg, mh = await LoopModule.load(guest), await LoopModule.load(host)
        fg = await rt.glaunch(guest, mg.idle(FOREVER))
        await _until(lambda: sched.pres(0, COMPUTE).job is not None)
        for _ in range(3):
            await rt.gsync(host, await rt.glaunch(host, mh.idle(10)))
        assert fg in guest.pending                        # the guest waits, then goes on
        assert sched.entity(guest).usage.preemptions >= 1
        await _until(lambda: sched.pres(0, COMPUTE).job_guest)
        await rt.gclose(guest)
    run_system(body)


def test_guests_go_continuous_on_an_idle_gpu_and_periodic_beside_a_host() -> None:
    async def body(s: rt.GdevSystem) -> None:
        sched = s.scheduler
        g = sched.guests
        guest = await rt.gopen(s, 0)
        await rt.gset_guest(guest, True)
        mg = await LoopModule.load(guest)
        fg = await rt.glaunch(guest, mg.idle(FOREVER))
        pres = sched.pres(0, COMPUTE)
        await _until(lambda: pres.job is not None)
        st = g.state(pres)
        assert st.mode == "periodic"                      # until three idle periods passed
        await _until(lambda: st.mode == "continuous")
        assert st.transitions == 1
        await _until(lambda: pres.job is not None and pres.piece_end is None)  # no pieces
        host = await rt.gopen(s, 1)
        mh = await LoopModule.load(host)
        await rt.gmalloc(host, 4 << 20)                   # a host holding video memory
        await rt.gsync(host, await rt.glaunch(host, mh.idle(10)))
        await _until(lambda: st.mode == "periodic")
        assert [m for _, m in st.log] == ["continuous", "periodic"]
        before = sched.entity(guest).usage.preemptions
        await _until(lambda: sched.entity(guest).usage.preemptions >= before + 2)  # pieces
        assert fg in guest.pending
        text = read_entry(BY_NAME[("global", "guest_mode")], s).decode()
        assert text.startswith("gpu0 periodic transitions 2")
        await rt.gclose(guest)
    run_system(body)


@pytest.mark.parametrize("name,bad", [("guest_freq", b"0"), ("guest_piece_us", b"5")])
def test_guest_knobs_refuse_bad_values(name: str, bad: bytes) -> None:
    async def body(s: rt.GdevSystem) -> None:
        e = BY_NAME[("global", name)]
        before = read_entry(e, s)
        with raises_errno(errno.EINVAL):
            write_entry(e, s, 0, bad)
        assert read_entry(e, s) == before
        await trio.lowlevel.checkpoint()
    run_system(body)
