"""The priority override through every door: runtime verb, ioctl, libgdev, CUDA extension."""

from __future__ import annotations

import errno
import os

import pytest

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.facade import RuntimeFacade
from gdevd.ioctl.session import Session
from libgdev import abi
from libgdev.connection import Connection
from libgdev.cuda import CudaError, CUresult, bind
from tests.loopback import Loopback, errno_of

from ..cuda.conftest import KernelThread
from .sim import run


def test_runtime_verbs_and_the_unprivileged_rule() -> None:
    async def body(s: rt.GdevSystem) -> None:
        user = rt.Credentials(uid=4242, gid=4242, pid=os.getpid())
        h = await rt.gopen(s, 0, cred=user)
        mine = await rt.gget_priority(h)
        with pytest.raises(GdevError) as info:
            await rt.gset_priority(h, mine + 1)
        assert info.value.errno == errno.EPERM
        assert await rt.gset_priority(h, 3) == 3 == await rt.gget_priority(h)
        assert await rt.gset_priority(h, None) == mine
        root = await rt.gopen(s, 0, cred=rt.Credentials(0, 0, os.getpid()))
        assert await rt.gset_priority(root, 40) == 40
        await rt.gclose(h)
        with pytest.raises(GdevError) as info:
            await rt.gset_priority(h, 1)
        assert info.value.errno == errno.EBADF
    run(body)


def test_set_priority_over_the_ioctl_socket(loopback: Loopback) -> None:
    def client(conn: Connection, session: Session) -> None:
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_GET)).fields.prio == \
            rt.sched.priority.task_priority(os.getpid())
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=33, flags=0)).fields.prio == 33
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_GET)).fields.prio == 33
        for bad in (dict(prio=41, flags=0), dict(prio=1, flags=abi.PRIO_CLEAR),
                    dict(prio=0, flags=0x80), dict(prio=0, flags=abi.PRIO_FLAGS)):
            assert errno_of(conn, "SET_PRIORITY", **bad) == errno.EINVAL
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_CLEAR)).fields.prio == \
            rt.sched.priority.task_priority(os.getpid())
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=7, flags=0)).fields.prio == 7

    def check(system: rt.GdevSystem, sessions: list[Session]) -> None:
        assert system.scheduler.entity(sessions[0].handle).prio.override == 7
    loopback.serve(client, memory=16 << 20, check=check)


def test_cuda_extension_sets_the_contexts_priority() -> None:
    kt = KernelThread().start()
    try:
        drv = bind(RuntimeFacade(kt.system, kt.token))
        drv.cuInit(0)
        ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(1))
        assert drv.cuCtxSetPriority(None, 12) == 12 == drv.cuCtxGetPriority()
        se = kt.run_sync(lambda: kt.system.scheduler.entity(ctx.handle))
        assert se.prio.override == 12
        for bad in (41, -1, 2.5, True):
            with pytest.raises(CudaError) as info:
                drv.cuCtxSetPriority(ctx, bad)
            assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        assert drv.cuCtxSetPriority(ctx, None) == drv.cuCtxGetPriority(ctx)
        assert se.prio.override is None
        drv.cuCtxDestroy(ctx)
    finally:
        kt.stop()
