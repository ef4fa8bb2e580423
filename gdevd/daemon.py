"""The daemon's lifecycle: system, tree, ioctl socket, mount; torn down in reverse on any path.

:func:`serve` enters each resource in order and registers its teardown the moment it exists
(s3ql's ``mount.py`` shape): the runtime system, the socket directory, the ioctl server, the
FUSE mount.  SIGINT/SIGTERM end the loop; sessions are closed (``gclose`` of every context),
then the file system is unmounted, the socket removed and the system shut down.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import pyfuse3
import trio

import kcuda
from gdevd.errors import GdevError
from gdevd.fuse import devstate
from gdevd.fuse.stacked import StackedOperations
from gdevd.fuse.tree import Tree
from gdevd.ioctl import sockdir
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import SessionTable
from gdevd.modules import ModuleRegistry
from gdevd.runtime import GdevConfig, GdevSystem
from gdevd.settings import Settings, apply_proc

log = logging.getLogger("gdevd")
MOUNT_OPTIONS = ("fsname=gdev", "subtype=gdev", "allow_other", "default_permissions")


@dataclass
class DaemonConfig:
    """What ``gdevd`` was asked to do."""

    mountpoint: str
    system: GdevConfig
    socket_path: str | None = None  # default: a fresh private directory under /tmp
    modules: tuple[str, ...] = ()   # module specs loaded at start (KIND:key=value,...)
    settings: Settings | None = None  # the config file's [proc] values and [dev] access


def _make_socket_dir(stack: AsyncExitStack, wanted: str | None) -> str:
    if wanted:
        return wanted
    sockdir.clean_stale()  # those of daemons that were killed
    sock = sockdir.make_socket_dir()
    stack.callback(shutil.rmtree, os.path.dirname(sock), True)
    return sock


def _mount(stack: AsyncExitStack, ops: StackedOperations, mountpoint: str) -> None:
    options = set(pyfuse3.default_options) | set(MOUNT_OPTIONS)
    options.discard("default_permissions")  # re-added below; keep the set explicit
    options.add("default_permissions")
    pyfuse3.init(ops, mountpoint, options)
    stack.callback(pyfuse3.close, unmount=True)


def _settle_devices(ops: StackedOperations, settings: Settings) -> None:
    """Device files' modes and owners: the config's [dev] tables, then the state file's
    (the last chmod/chown before a restart), which records the changes from now on."""
    devstate.apply(ops.tree, settings.devices, "config")
    path = settings.daemon.get("state")
    if path:
        devstate.apply(ops.tree, settings.kept, f"state file {path}")
        ops.device_state = devstate.DeviceState(path, ops.tree, settings.kept)


async def _watch_signals(on_signal: Callable[[], None]) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("%s: unmounting", signal.Signals(signum).name)
            on_signal()
            return


async def serve(cfg: DaemonConfig, ready: Callable[[], None] | None = None) -> None:
    """Mount and serve until a signal or an external unmount, then tear everything down."""
    async with AsyncExitStack() as stack:
        system = await stack.enter_async_context(GdevSystem(cfg.system))
        kcuda.attach(system, trio.lowlevel.current_trio_token())  # CUDA for in-daemon modules
        stack.callback(kcuda.detach)
        socket_path = _make_socket_dir(stack, cfg.socket_path)
        sessions = SessionTable(system, socket_path)
        stack.push_async_callback(sessions.end_all)
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(nursery.cancel_scope.cancel)
        await nursery.start(IoctlServer(sessions, socket_path).serve)
        registry = ModuleRegistry(cfg.mountpoint)
        tree = Tree(system)
        ops = StackedOperations(tree, sessions, registry)
        if cfg.settings is not None:
            apply_proc(cfg.settings, system)   # as root's echo would, before anyone sees it
            _settle_devices(ops, cfg.settings)
        _mount(stack, ops, cfg.mountpoint)
        stack.push_async_callback(sessions.end_all)  # before unmount: close live contexts
        stack.push_async_callback(registry.unload_all)  # first of all: modules' contexts
        log.info("serving %d vGPUs at %s (ioctl socket %s)", len(system.virtual),
                 cfg.mountpoint, socket_path)
        nursery.start_soon(_watch_signals, pyfuse3.terminate)
        failed: list[GdevError] = []
        nursery.start_soon(_announce_ready, cfg.mountpoint, ready, registry, cfg.modules, failed)
        await pyfuse3.main()
        log.info("file system loop ended")
        if failed:
            raise failed[0]


async def _announce_ready(mountpoint: str, ready: Callable[[], None] | None,
                          registry: ModuleRegistry | None = None, specs: tuple[str, ...] = (),
                          failed: list[GdevError] | None = None) -> None:
    """Call ``ready`` once the kernel really serves the mount (a lookup through it succeeds)
    and the modules of ``specs`` are loaded; a mount whose FUSE INIT failed raises here
    instead of passing for a running daemon, and a module that fails to load ends the daemon
    (its error goes to ``failed``)."""
    await trio.to_thread.run_sync(os.stat, os.path.join(mountpoint, "proc", "gdev"))
    log.debug("mount answers lookups")
    for spec in specs:
        assert registry is not None and failed is not None
        try:
            await registry.load(spec)
        except GdevError as exc:
            log.error("module %s: %s", spec.partition(":")[0], exc)
            failed.append(GdevError(exc.errno, f"module {spec.partition(':')[0]}: {exc.detail}"))
            pyfuse3.terminate()
            return
    if ready is not None:
        ready()
