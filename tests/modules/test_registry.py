"""The module registry in-process: load, list, busy refusal, unload releasing every context
and buffer (ended like an fsck), option errors and failures that leave nothing behind."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from gdevd.errors import GdevError
from gdevd.modules import ModuleRegistry, parse_spec

CTX = SimpleNamespace(uid=0, gid=0, umask=0o022, pid=os.getpid())


def _spec(lower: str, **extra: Any) -> str:
    opts = {"lower": lower, "passphrase": "pw", "scrypt_log2n": 4, **extra}
    return "ecryptfs:" + ",".join(f"{k}={v}" for k, v in opts.items())


def _run(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args)


async def _peek(kt: Any, fn: Any) -> Any:
    """``fn()`` on the runtime's loop, from a task of another loop."""
    return await trio.to_thread.run_sync(kt.run_sync, fn)


def _errno(exc: pytest.ExceptionInfo[GdevError]) -> int:
    return exc.value.errno


def test_parse_spec() -> None:
    assert parse_spec("ecryptfs:a=1,b=x=y") == ("ecryptfs", {"a": "1", "b": "x=y"})
    assert parse_spec("ecryptfs") == ("ecryptfs", {})
    for bad in ("nosuch:a=1", "ecryptfs:a", "ecryptfs:a=1,a=2", "ecryptfs:=1"):
        with pytest.raises(GdevError) as e:
            parse_spec(bad)
        assert _errno(e) == errno.EINVAL


def test_load_use_busy_unload_releases_everything(kcuda_system, lower: str) -> None:
    kt = kcuda_system
    reg = ModuleRegistry()

    async def main() -> None:
        mod = await reg.load(_spec(lower, priority=33, vgpu=2))
        listing = reg.render()
        assert "ecryptfs ecryptfs live 0 cid=" in listing and "@vd2,prio=33" in listing
        assert "pw" not in listing  # the passphrase is never shown
        assert await trio.to_thread.run_sync(mod.paths.big.priority) == 33
        assert await _peek(kt, lambda: kt.system.virtual[2].memory_used) > 0
        fs = mod.make_fs(1, 1 << 40)
        fh, attrs = await fs.create(1, b"f", 0o644, os.O_RDWR, CTX)
        data = os.urandom(20000)
        assert await fs.write(fh.fh, 0, data) == len(data)
        assert await fs.read(fh.fh, 0, 1 << 20) == data
        assert mod.stat("requests", "gpu") >= 1 and mod.last_path in ("gpu", "cpu")
        with pytest.raises(GdevError) as e:
            await reg.unload("ecryptfs")
        assert _errno(e) == errno.EBUSY and "in use" in str(e.value)
        assert "live 1" in reg.render()
        await fs.release(fh.fh)
        await reg.unload("ecryptfs")
        assert reg.modules == {} and mod.state == "stopped"

    _run(main)
    kt.fsck()


def test_priority_is_set_on_the_context_at_run_time(kcuda_system, lower: str) -> None:
    kt = kcuda_system
    reg = ModuleRegistry()

    async def main() -> None:
        mod = await reg.load(_spec(lower))
        prio = mod.paths.big.priority  # the effective priority, read through kcuda
        assert await trio.to_thread.run_sync(prio) == 40  # the highest by default
        mod.priority = 5  # what a write to /proc/gdev/ecryptfs/priority does, on the loop
        assert await trio.to_thread.run_sync(prio) == 5 and mod.priority == 5
        assert "prio=5" in reg.render()
        await reg.unload("ecryptfs")

    _run(main)
    kt.fsck()


@pytest.mark.parametrize("extra,err", [
    ({"cipher": "quantum"}, errno.EINVAL),
    ({"priority": 41}, errno.EINVAL),
    ({"threshold": "-1"}, errno.EINVAL),
    ({"colour": "red"}, errno.EINVAL),
    ({"name": "a/b"}, errno.EINVAL),
    ({"vgpu": 77}, errno.ENODEV),  # no such vGPU: the context cannot open
])
def test_bad_options_leave_nothing(kcuda_system, lower: str, extra: dict, err: int) -> None:
    reg = ModuleRegistry()
    with pytest.raises(GdevError) as e:
        _run(reg.load, _spec(lower, **extra))
    assert e.value.errno == err
    assert reg.modules == {}
    kcuda_system.fsck()


def test_missing_lower_and_passphrase(tmp_path) -> None:
    reg = ModuleRegistry()
    for spec in (f"ecryptfs:lower={tmp_path}/nope,passphrase=x", f"ecryptfs:lower={tmp_path}"):
        with pytest.raises(GdevError) as e:
            _run(reg.load, spec)
        assert _errno(e) == errno.EINVAL


def test_wrong_passphrase_is_refused_clearly(kcuda_system, lower: str) -> None:
    reg = ModuleRegistry()
    _run(reg.load, _spec(lower, cipher="cpu"))
    _run(reg.unload, "ecryptfs")
    with pytest.raises(GdevError) as e:
        _run(reg.control, "load " + _spec(lower, passphrase="nope"))
    assert _errno(e) == errno.EKEYREJECTED
    assert "# last error: load: [EKEYREJECTED]" in reg.render()
    assert "wrong passphrase for" in reg.render()
    kcuda_system.fsck()


def test_control_commands(kcuda_system, lower: str) -> None:
    reg = ModuleRegistry()

    async def main() -> None:
        await reg.control("insmod " + _spec(lower, cipher="cpu", name="vault"))
        assert "vault ecryptfs live 0 - " in reg.render()
        with pytest.raises(GdevError) as e:
            await reg.control("load " + _spec(lower, cipher="cpu", name="vault"))
        assert _errno(e) == errno.EEXIST
        for bad, err in (("frobnicate x", errno.EINVAL), ("unload nosuch", errno.ENOENT)):
            with pytest.raises(GdevError) as e:
                await reg.control(bad)
            assert _errno(e) == err
        await reg.control("rmmod vault\n")
        assert reg.render() == "name kind state users contexts options\n"

    _run(main)


def test_a_failing_attach_releases_the_context(kcuda_system, lower: str) -> None:
    def refuse(mod: Any) -> None:
        raise GdevError(errno.EEXIST, "name taken")

    reg = ModuleRegistry(attach=refuse)
    with pytest.raises(GdevError):
        _run(reg.load, _spec(lower))
    assert reg.modules == {}
    kcuda_system.fsck()


def test_unload_all_forces_busy_modules(kcuda_system, lower: str) -> None:
    reg = ModuleRegistry()

    async def main() -> None:
        mod = await reg.load(_spec(lower))
        fs = mod.make_fs(1, 1 << 40)
        await fs.create(1, b"f", 0o644, os.O_RDWR, CTX)
        await reg.unload_all()
        assert reg.modules == {}

    _run(main)
    kcuda_system.fsck()


def test_gpu_work_does_not_block_the_loop(kcuda_system, lower: str) -> None:
    """A write on the GPU path runs in a worker thread: the loop keeps serving other tasks
    (FUSE requests, in the daemon) while it waits for the GPU (interpreted kernels, so the
    wait is long enough to count the loop's ticks)."""
    from gdevd.gpu.ptx import jit
    old = jit.engine()
    jit.set_engine("interp")
    try:
        _gpu_write_with_ticker(lower)
    finally:
        jit.set_engine(old)
    kcuda_system.fsck()


def _gpu_write_with_ticker(lower: str) -> None:
    reg = ModuleRegistry()

    async def main() -> None:
        mod = await reg.load(_spec(lower, threshold=0))
        fs = mod.make_fs(1, 1 << 40)
        fh, _ = await fs.create(1, b"f", 0o644, os.O_RDWR, CTX)
        ticks, during, done = 0, 0, trio.Event()

        async def ticker() -> None:  # one tick per pass of the loop: none while it is blocked
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await trio.lowlevel.checkpoint()

        async def writer() -> None:
            nonlocal during
            start = ticks
            await fs.write(fh.fh, 0, os.urandom(64 << 10))
            during = ticks - start
            done.set()

        async with trio.open_nursery() as n:
            n.start_soon(ticker)
            n.start_soon(writer)
        assert mod.last_path == "gpu" and during > 3, during
        await fs.release(fh.fh)
        await reg.unload("ecryptfs")

    _run(main)
