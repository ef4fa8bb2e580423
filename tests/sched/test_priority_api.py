"""The priority override through every door: runtime verb, ioctl, libgdev, CUDA extension."""

from __future__ import annotations

import errno
import os
import tempfile
from typing import Any

import pytest
import trio

from gdevd import runtime as rt
from gdevd.errors import GdevError
from gdevd.facade import RuntimeFacade
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import Opener, SessionTable
from libgdev import abi
from libgdev.connection import Connection
from libgdev.cuda import CudaError, CUresult, bind

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


def serve(client: Any, minor: int = 0, check: Any = None, guest_vgpu: bool = False) -> None:
    """Run ``client(conn)`` in a thread against a real ioctl server, over a session of this
    process on vGPU ``minor`` (``guest_vgpu``: vGPU 1 is a guest vGPU); then
    ``check(system, session)`` on the loop."""
    async def main() -> None:
        path = os.path.join(tempfile.mkdtemp(prefix="gdevd-sched-"), "s")
        async with rt.GdevSystem(rt.GdevConfig(memory=16 << 20)) as system:
            system.virtual[1].guest = int(guest_vgpu)
            sessions = SessionTable(system, path)
            async with trio.open_nursery() as nursery:
                await nursery.start(IoctlServer(sessions, path).serve)
                me = Opener(os.getuid(), os.getgid(), os.getpid(), os.getpid())
                session = await sessions.open(minor, me)

                def run_client() -> None:
                    conn = Connection.connect(path)
                    try:
                        conn.call(abi.HELLO, abi.Hello(token=session.token))
                        client(conn)
                    finally:
                        conn.close()
                await trio.to_thread.run_sync(run_client)
                if check is not None:
                    check(system, session)
                await sessions.end_all()
                nursery.cancel_scope.cancel()
    trio.run(main)


def test_set_priority_over_the_ioctl_socket() -> None:
    def errno_of(conn: Connection, **fields: int) -> int:
        try:
            conn.call(abi.SET_PRIORITY, abi.Prio(**fields))
        except OSError as exc:
            return exc.errno
        return 0

    def client(conn: Connection) -> None:
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_GET)).fields.prio == \
            rt.sched.priority.task_priority(os.getpid())
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=33, flags=0)).fields.prio == 33
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_GET)).fields.prio == 33
        for bad in (dict(prio=41, flags=0), dict(prio=1, flags=abi.PRIO_CLEAR),
                    dict(prio=0, flags=0x80), dict(prio=0, flags=abi.PRIO_FLAGS)):
            assert errno_of(conn, **bad) == errno.EINVAL
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=0, flags=abi.PRIO_CLEAR)).fields.prio == \
            rt.sched.priority.task_priority(os.getpid())
        assert conn.call(abi.SET_PRIORITY, abi.Prio(prio=7, flags=0)).fields.prio == 7

    def check(system: Any, session: Any) -> None:
        assert system.scheduler.entity(session.handle).prio.override == 7
    serve(client, check=check)


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
