"""A context's own guest verb through every door: runtime, ioctl dispatch, CUDA extension."""

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

TENANT = 4242  # a uid that is not root


def test_runtime_gget_guest_follows_the_override_and_the_vgpu() -> None:
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0, cred=rt.Credentials(TENANT, TENANT, os.getpid()))
        assert await rt.gget_guest(h) is False
        assert await rt.gset_guest(h, True) is True is await rt.gget_guest(h)
        assert await rt.gset_guest(h, None) is False is await rt.gget_guest(h)
        await rt.gclose(h)
        with pytest.raises(GdevError) as info:
            await rt.gget_guest(h)
        assert info.value.errno == errno.EBADF
    run(body)


def test_a_context_makes_itself_a_guest_and_a_host_again_over_the_socket(
        loopback: Loopback) -> None:
    def client(conn: Connection, session: Session) -> None:
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=abi.GUEST_GET)).fields.guest == 0
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=1, flags=0)).fields.guest == 1
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=abi.GUEST_GET)).fields.guest == 1
        for bad in (dict(guest=2, flags=0), dict(guest=1, flags=abi.GUEST_CLEAR),
                    dict(guest=0, flags=0x80), dict(guest=0, flags=abi.GUEST_FLAGS)):
            assert errno_of(conn, "SET_GUEST", **bad) == errno.EINVAL
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=0)).fields.guest == 0
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=1, flags=0)).fields.guest == 1

    def check(system: rt.GdevSystem, sessions: list[Session]) -> None:
        assert system.scheduler.entity(sessions[0].handle).guest_override is True
    loopback.serve(client, memory=16 << 20, check=check)


def test_root_may_make_a_guest_vgpus_context_a_host_over_the_socket(
        loopback: Loopback) -> None:
    # (the daemon authenticates the peer's uid, so a tenant's EPERM is tested through a
    # mount: tests/grid/test_guest_context.py; the runtime's rule in tests/sched/test_guest.py)
    def client(conn: Connection, session: Session) -> None:
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=abi.GUEST_GET)).fields.guest == 1
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=0)).fields.guest == 0
        assert conn.call(abi.SET_GUEST, abi.Guest(guest=0, flags=abi.GUEST_CLEAR)).fields.guest == 1

    def check(system: rt.GdevSystem, sessions: list[Session]) -> None:
        assert system.scheduler.entity(sessions[0].handle).guest_override is None

    def guest_vgpu(system: rt.GdevSystem) -> None:
        system.virtual[1].guest = 1
    loopback.serve(client, minor=1, memory=16 << 20, setup=guest_vgpu, check=check)


def test_cuda_extension_makes_the_context_a_guest() -> None:
    kt = KernelThread().start()
    try:
        drv = bind(RuntimeFacade(kt.system, kt.token))
        drv.cuInit(0)
        ctx = drv.cuCtxCreate(0, drv.cuDeviceGet(0))
        assert drv.cuCtxGetGuest() is False
        assert drv.cuCtxSetGuest(None, True) is True is drv.cuCtxGetGuest(ctx)
        se = kt.run_sync(lambda: kt.system.scheduler.entity(ctx.handle))
        assert kt.system.scheduler.guests.is_guest(se)
        for bad in (1, 0, "yes"):
            with pytest.raises(CudaError) as info:
                drv.cuCtxSetGuest(ctx, bad)
            assert info.value.result == CUresult.CUDA_ERROR_INVALID_VALUE
        assert drv.cuCtxSetGuest(ctx, None) is False
        drv.cuCtxDestroy(ctx)
    finally:
        kt.stop()
