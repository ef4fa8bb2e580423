"""In-daemon modules: the registry that loads, lists and unloads them (``insmod``/``rmmod``).

A module is named by a spec ``KIND:key=value,...`` (``ecryptfs:lower=/srv/x,passphrase=..``);
``KIND`` picks a class from :data:`KINDS`, the options go to its constructor, which checks
them (``GdevError(EINVAL)``) before anything is acquired.  Loading then runs the module's
``start()`` (GPU contexts through ``kcuda``, in worker threads) and hands it to the FUSE
front (``attach``: its subtree and its ``/proc/gdev/NAME`` entries).  Unloading is refused
with EBUSY while the module is busy (files open), like ``rmmod`` of a module in use; else it
detaches the module and runs its ``stop()``, which releases every context and buffer.

The registry lives on the trio loop; ``control()`` serves the root-only control file
``/proc/gdev/modules`` (``load SPEC`` / ``unload NAME``), ``render()`` its listing.
"""

from __future__ import annotations

import errno
import importlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

import trio

from gdevd.errors import GdevError
from procfs.entry import Entry

log = logging.getLogger("gdevd.modules")
KINDS = {"ecryptfs": "gdevd.modules.ecryptfs:EcryptfsModule"}
LOADING, LIVE, UNLOADING = "loading", "live", "unloading"


class Module(Protocol):
    """What the registry needs of a module (see :class:`~gdevd.modules.ecryptfs.EcryptfsModule`)."""

    kind: str
    name: str
    state: str
    proc_entries: tuple[Entry, ...]   # its /proc/gdev/NAME files, the module as their target

    async def start(self) -> None:
        """Acquire everything (contexts, helper processes); undo it all if this raises."""

    async def stop(self) -> None:
        """Release everything ``start`` acquired."""

    def busy(self) -> int:
        """Users that forbid an unload (open files); 0 when idle."""

    def contexts(self) -> list[str]:
        """The GPU contexts held, one short description each."""

    def shown_options(self) -> str:
        """The options for the listing, secrets left out."""


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``KIND:key=value,...`` -> (kind, options); GdevError(EINVAL) if malformed.

    Values cannot contain commas; a key given twice is refused.
    """
    kind, _, rest = spec.strip().partition(":")
    if kind not in KINDS:
        raise GdevError(errno.EINVAL, f"no module kind {kind!r} (known: {', '.join(KINDS)})")
    options: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key or key in options:
            raise GdevError(errno.EINVAL, f"{kind}: bad or repeated option {key or item!r}")
        options[key.strip()] = value
    return kind, options


def make_module(spec: str, mountpoint: str | None = None) -> Any:
    """The (unstarted) module a spec describes; its options are checked here."""
    kind, options = parse_spec(spec)
    modname, _, clsname = KINDS[kind].partition(":")
    cls = getattr(importlib.import_module(modname), clsname)
    return cls(options, mountpoint)


def check_spec(spec: str, mountpoint: str | None = None) -> None:
    """Check a spec before the daemon mounts on ``mountpoint``: its options, and whatever the
    module can check without the GPU (``check()``: ecryptfs verifies the passphrase and that
    the lower directory and the mount do not overlap).  GdevError if not."""
    mod = make_module(spec, mountpoint)
    if hasattr(mod, "check"):
        mod.check()


class ModuleRegistry:
    """Loaded modules by name; ``attach``/``detach`` connect them to the FUSE front."""

    def __init__(self, mountpoint: str | None = None,
                 attach: Callable[[Any], None] | None = None,
                 detach: Callable[[Any], None] | None = None) -> None:
        self.mountpoint = mountpoint
        self.attach, self.detach = attach, detach
        self.modules: dict[str, Any] = {}
        self.last_error = ""

    async def load(self, spec: str) -> Any:
        """Create, start and attach the module of ``spec``; return it.

        EEXIST if a module of that name is loaded; the module's own errno (EINVAL for bad
        options, EKEYREJECTED for a wrong passphrase, ...) if it cannot start.
        """
        mod = make_module(spec, self.mountpoint)
        if mod.name in self.modules:
            raise GdevError(errno.EEXIST, f"module {mod.name} is already loaded")
        mod.state = LOADING
        self.modules[mod.name] = mod
        try:
            await mod.start()
        except BaseException:
            del self.modules[mod.name]
            raise
        try:
            if self.attach is not None:
                self.attach(mod)
        except BaseException:
            del self.modules[mod.name]
            await mod.stop()
            raise
        mod.state = LIVE
        log.info("module %s (%s) loaded: %s", mod.name, mod.kind, mod.shown_options())
        return mod

    async def unload(self, name: str, force: bool = False) -> None:
        """Detach and stop module ``name``: ENOENT if none, EBUSY while in use (unless
        ``force``, for the daemon's own teardown)."""
        mod = self.modules.get(name)
        if mod is None or mod.state != LIVE:
            raise GdevError(errno.ENOENT if mod is None else errno.EBUSY,
                            f"module {name} is {'not loaded' if mod is None else mod.state}")
        if mod.busy() and not force:
            raise GdevError(errno.EBUSY, f"module {name} is in use ({mod.busy()} open files)")
        mod.state = UNLOADING
        try:
            if self.detach is not None:
                self.detach(mod)
        finally:
            try:
                await mod.stop()
            finally:
                del self.modules[name]
        log.info("module %s unloaded", name)

    async def unload_all(self) -> None:
        """Unload every live module, in use or not (daemon shutdown; shielded, so that a
        cancelled daemon still releases the modules' contexts)."""
        with trio.CancelScope(shield=True):
            for name in [n for n, m in self.modules.items() if m.state == LIVE]:
                try:
                    await self.unload(name, force=True)
                except Exception:  # noqa: BLE001 - keep tearing the others down
                    log.exception("module %s failed to unload", name)

    async def control(self, text: str) -> None:
        """Apply one control-file command: ``load SPEC`` (or ``insmod``), ``unload NAME``
        (or ``rmmod``): one command of one line, else EINVAL and nothing is done.  The error
        is also kept for the listing's ``last error`` line."""
        verb, _, arg = text.strip().partition(" ")
        try:
            if "\n" in text.strip():
                raise GdevError(errno.EINVAL, "one command per write (the text has several "
                                              "lines)")
            if verb in ("load", "insmod"):
                await self.load(arg)
            elif verb in ("unload", "rmmod"):
                await self.unload(arg.strip())
            else:
                raise GdevError(errno.EINVAL, f"unknown command {verb!r} (load SPEC | unload NAME)")
            self.last_error = ""
        except GdevError as exc:
            self.last_error = f"{text.strip().split(' ')[0]}: {exc}"
            log.warning("modules: %s", self.last_error)
            raise

    def render(self) -> str:
        """The listing: one line per module (lsmod's columns, plus contexts and options)."""
        lines = ["name kind state users contexts options"]
        for mod in self.modules.values():
            ctxs = ";".join(mod.contexts()) or "-"
            lines.append(f"{mod.name} {mod.kind} {mod.state} {mod.busy()} {ctxs} "
                         f"{mod.shown_options() or '-'}")
        if self.last_error:
            lines.append(f"# last error: {self.last_error}")
        return "\n".join(lines) + "\n"
