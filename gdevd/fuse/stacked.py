"""The FUSE front with in-daemon modules: :class:`GdevOperations` plus the modules' subtrees.

A loaded module that serves files (``make_fs``) gets a directory ``MOUNT/NAME`` and a slot:
every inode and file handle inside its subtree is ``slot << SLOT_SHIFT`` plus a small
number, so a request is routed by its inode (or handle) alone; the subtree's root is the
directory's own tree inode.  Invariant: file handles are routed by slot only (never by the
root inodes, which the daemon's own small handle numbers may equal); directory handles are
inode numbers and are routed like inodes.  The module's ``/proc/gdev/NAME/`` entries (from
the module's own ``proc_entries``) are added beside it, and ``/proc/gdev/modules`` is the registry's
control file: a command is collected like any /proc value (one line; see
``gdevd.fuse.ops``) and awaited here (loading runs kcuda in worker threads).

The subtree's operations raise ``GdevError`` or ``OSError`` (the lower file system's); both
become ``FUSEError`` here, the one translation on this boundary.
"""

from __future__ import annotations

import errno
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pyfuse3

from gdevd.errors import GdevError
from gdevd.fuse.ops import GdevOperations
from gdevd.fuse.tree import ROOT_INODE, Node, Tree
from gdevd.ioctl.session import SessionTable
from procfs import MODULES

log = logging.getLogger("gdevd.fuse")
SLOT_SHIFT = 40


class _UnknownEntryFilter(logging.Filter):
    """Drops pyfuse3's report that an entry invalidation found no such entry in the kernel
    (ENOENT: nobody looked the module's directory up since it appeared) or no session to
    tell (EINVAL: the mount went away first, when a module is unloaded just before a
    shutdown and pyfuse3's notify thread submits the invalidation after the unmount).
    Other reports pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EINVAL)
                    and "invalidate_entry" in record.getMessage())


logging.getLogger("pyfuse3").addFilter(_UnknownEntryFilter())


async def _translated(fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    try:
        return await fn(*args)
    except GdevError as exc:
        raise pyfuse3.FUSEError(exc.errno) from None
    except OSError as exc:
        raise pyfuse3.FUSEError(exc.errno or errno.EIO) from None
    except pyfuse3.FUSEError:
        raise
    except Exception:  # a module's bug must not take the daemon down: log it, answer EIO
        log.exception("module operation %s failed", getattr(fn, "__qualname__", fn))
        raise pyfuse3.FUSEError(errno.EIO) from None


def _routed(name: str, by_handle: bool = False) -> Any:
    """An Operations method that goes to the subtree owning its first argument (an inode, or
    a file handle if ``by_handle``), if any."""
    async def method(self: StackedOperations, number: int, *args: Any) -> Any:
        fs = self.handle_subtree(number) if by_handle else self.subtree(number)
        if fs is None:
            return await getattr(GdevOperations, name)(self, number, *args)
        return await _translated(getattr(fs, name), number, *args)
    method.__name__ = method.__qualname__ = name
    return method


class StackedOperations(GdevOperations):
    """GdevOperations that also serve the subtrees of loaded modules (see module docstring)."""

    def __init__(self, tree: Tree, sessions: SessionTable, registry: Any) -> None:
        super().__init__(tree, sessions)
        self.registry = registry
        self.control = tree.add_entry(tree.proc, MODULES, registry)
        self._slots: dict[int, Any] = {}    # slot -> subtree
        self._roots: dict[int, Any] = {}    # root inode -> subtree
        self._nodes: dict[str, tuple[Node | None, Node]] = {}  # module name -> (root, proc dir)
        registry.attach, registry.detach = self.attach_module, self.detach_module

    def subtree(self, number: int) -> Any:
        """The module subtree that owns inode or file handle ``number``, or None."""
        slot = number >> SLOT_SHIFT
        return self._slots.get(slot) if slot else self._roots.get(number)

    def handle_subtree(self, fh: int) -> Any:
        """The module subtree that handed out file handle ``fh``, or None."""
        return self._slots.get(fh >> SLOT_SHIFT)

    # -- module attach / detach (registry hooks) ---------------------------------------
    def attach_module(self, mod: Any) -> None:
        """Add ``MOUNT/NAME`` (if the module serves files) and ``/proc/gdev/NAME``."""
        name = mod.name.encode()
        if name in self.tree.nodes[ROOT_INODE].children or name in self.tree.proc.children:
            raise GdevError(errno.EEXIST, f"{mod.name} is taken in the mount or /proc/gdev")
        root = None
        if hasattr(mod, "make_fs"):
            slot = next(s for s in itertools.count(1) if s not in self._slots)
            root = self.tree.add_dir(self.tree.nodes[ROOT_INODE], name, 0o755)
            fs = mod.make_fs(root.inode, slot << SLOT_SHIFT)
            self._slots[slot] = self._roots[root.inode] = fs
        proc = self.tree.add_dir(self.tree.proc, name)
        for entry in mod.proc_entries:
            self.tree.add_entry(proc, entry, mod)
        self._nodes[mod.name] = (root, proc)

    def detach_module(self, mod: Any) -> None:
        """Remove the module's directory and proc entries; the kernel forgets the names."""
        root, proc = self._nodes.pop(mod.name)
        self.tree.remove(proc)
        if root is not None:
            fs = self._roots.pop(root.inode)
            self._slots = {s: f for s, f in self._slots.items() if f is not fs}
            self.tree.remove(root)
        for parent, node in ((ROOT_INODE, root), (self.tree.proc.inode, proc)):
            if node is not None:
                try:
                    pyfuse3.invalidate_entry_async(parent, node.name)
                except Exception:  # noqa: BLE001 - not mounted (in-process tests)
                    log.debug("no kernel entry to invalidate for %s", node.name)

    # -- routed operations -------------------------------------------------------------
    getattr = _routed("getattr")
    setattr = _routed("setattr")
    opendir = _routed("opendir")
    readdir = _routed("readdir")
    releasedir = _routed("releasedir")
    fsyncdir = _routed("fsyncdir")
    open = _routed("open")
    read = _routed("read", by_handle=True)
    flush = _routed("flush", by_handle=True)
    release = _routed("release", by_handle=True)
    fsync = _routed("fsync", by_handle=True)
    create = _routed("create")
    mknod = _routed("mknod")
    mkdir = _routed("mkdir")
    rmdir = _routed("rmdir")
    unlink = _routed("unlink")

    async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
        """Lookups inside a subtree go there; the subtree's root answers for itself."""
        fs = self.subtree(parent_inode)
        if fs is not None:
            return await _translated(fs.lookup, parent_inode, name, ctx)
        attrs = await super().lookup(parent_inode, name, ctx)
        fs = self._roots.get(attrs.st_ino)
        return attrs if fs is None else await _translated(fs.getattr, attrs.st_ino, ctx)

    async def rename(self, p_old: int, old: bytes, p_new: int, new: bytes, flags: int,
                     ctx: Any) -> None:
        """Renames stay inside one subtree (EXDEV otherwise)."""
        fs = self.subtree(p_old)
        if fs is None or self.subtree(p_new) is not fs:
            raise pyfuse3.FUSEError(errno.EXDEV if fs or self.subtree(p_new) else errno.EPERM)
        await _translated(fs.rename, p_old, old, p_new, new, flags, ctx)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        """Subtree writes, then the base class's (control-file commands included)."""
        fs = self.handle_subtree(fh)
        if fs is not None:
            return await _translated(fs.write, fh, off, buf)  # type: ignore[no-any-return]
        return await super().write(fh, off, buf)

    async def _apply(self, node: Node, data: bytes) -> None:
        """A control-file command goes to the registry; other values to the base class."""
        if node is not self.control:
            return await super()._apply(node, data)
        await _translated(self.registry.control, data.decode(errors="replace"))

    async def forget(self, inode_list: Any) -> None:
        """Inodes are kept until their subtree goes (nothing to do)."""
        return None


