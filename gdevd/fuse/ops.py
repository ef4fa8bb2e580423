"""The pyfuse3 Operations of gdevd, kept thin: the tree, device sessions and procfs do the work.

* ``/dev/gdevN``: ``open`` is the gate (the kernel already checked the mode:
  ``default_permissions``); it creates a session and the file handle's reads return its
  ticket.  ``release`` ends the session (also when the opener was killed).
* ``/proc/gdev/...``: reads render the entry; writes collect a value (:class:`PendingValue`):
  it applies once, as soon as it ends with a newline, else when the file is closed (flush),
  so a value a writer splits over several ``write()`` calls is never applied fragment by
  fragment.  A write at another offset than the end of what came, a second value on the same
  open file or more than ``VALUE_MAX`` bytes is EINVAL and nothing applies.
* Operations this tree does not do get Linux's errno (:mod:`gdevd.fuse.linux`), never ENOSYS.

pyfuse3's ``read``/``write`` get no request context, so everything about the caller is
captured in ``open``.  Runtime errors become ``FUSEError`` here and nowhere else.
"""

from __future__ import annotations

import errno
import functools
import logging
import stat
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pyfuse3

from gdevd.errors import GdevError
from gdevd.fuse.devstate import DeviceState
from gdevd.fuse.hints import in_proc, missing_entry
from gdevd.fuse.linux import LinuxAnswers
from gdevd.fuse.tree import Node, Tree
from gdevd.ioctl.session import Opener, Session, SessionTable
from libgdev.gate import Ticket, format_ticket
from procfs import read_entry, write_entry
from procfs.generic import VALUE_MAX

log = logging.getLogger("gdevd.fuse")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
ATTR_TIMEOUT = 1.0  # directories and device files; proc entries use 0 (values change)


def fuse_errors(fn: F) -> F:
    """Translate GdevError into FUSEError (the FUSE boundary's one error translation)."""
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except GdevError as exc:
            raise pyfuse3.FUSEError(exc.errno) from None
    return wrapper  # type: ignore[return-value]


class PendingValue:
    """The bytes written so far to one open /proc file (see the module docstring)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.done = False  # applied or refused: this open file takes no more

    def add(self, off: int, buf: bytes) -> None:
        """Append ``buf`` written at ``off``; GdevError(EINVAL) (and done) if out of place."""
        if self.done or off != len(self.data) or len(self.data) + len(buf) > VALUE_MAX:
            why = ("one value per open file" if self.done else
                   f"write at offset {off}, not {len(self.data)}" if off != len(self.data) else
                   f"a value is at most {VALUE_MAX} bytes")
            self.done = True
            raise GdevError(errno.EINVAL, why)
        self.data += buf

    def take(self) -> bytes:
        """The whole value, once: the file takes no more writes after this."""
        self.done = True
        return bytes(self.data)


class GdevOperations(LinuxAnswers, pyfuse3.Operations):
    """The file system: a :class:`Tree` plus the session table for device files."""

    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(self, tree: Tree, sessions: SessionTable) -> None:
        super().__init__()
        self.tree = tree
        self.sessions = sessions
        self._files: dict[int, Session | Node] = {}
        self._values: dict[int, PendingValue] = {}  # fh of a /proc file -> value so far
        self._next_fh = 1
        self.device_state: DeviceState | None = None  # where chmod/chown are kept, if anywhere

    # -- attributes ------------------------------------------------------------------
    def _attrs(self, node: Node) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino, a.st_mode, a.st_uid, a.st_gid = node.inode, node.mode, node.uid, node.gid
        a.st_nlink = 2 + sum(self.tree.nodes[i].is_dir for i in node.children.values()) \
            if node.is_dir else 1
        a.st_size = len(read_entry(node.entry, node.target)) if node.entry else 0
        a.st_atime_ns = a.st_mtime_ns = node.mtime_ns
        a.st_ctime_ns = node.ctime_ns
        a.st_blksize, a.st_blocks = 4096, 0
        timeout = 0.0 if node.entry else ATTR_TIMEOUT
        a.attr_timeout, a.entry_timeout = timeout, timeout
        return a

    @fuse_errors
    async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
        return self._attrs(self.tree.lookup(parent_inode, name))

    @fuse_errors
    async def getattr(self, inode: int, ctx: Any = None) -> Any:
        return self._attrs(self.tree.get(inode))

    @fuse_errors
    async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any) -> Any:
        node = self.tree.get(inode)
        if (fields.update_mode or fields.update_uid or fields.update_gid) and node.minor is None:
            raise pyfuse3.FUSEError(errno.EPERM)  # only device files change owner and mode
        if fields.update_size and attr.st_size and node.entry is None:
            raise pyfuse3.FUSEError(errno.EINVAL)
        if fields.update_mode:
            node.mode = stat.S_IFMT(node.mode) | stat.S_IMODE(attr.st_mode)
        if fields.update_uid:
            node.uid = attr.st_uid
        if fields.update_gid:
            node.gid = attr.st_gid
        node.touch(ctime_only=not fields.update_mtime)
        changed = fields.update_mode or fields.update_uid or fields.update_gid
        if changed and self.device_state is not None:
            await self.device_state.record(node)
        return self._attrs(node)

    @fuse_errors
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: Any) -> Any:
        """Nothing is created in this tree; in /proc/gdev the name is a mistake (a mistyped
        entry, ``echo > file``'s O_CREAT): ENOENT, and the log names the closest entries."""
        parent = self.tree.get(parent_inode)
        if in_proc(self.tree, parent):
            log.warning("%s", missing_entry(self.tree, parent, name))
            raise pyfuse3.FUSEError(errno.ENOENT)
        return await super().create(parent_inode, name, mode, flags, ctx)

    # -- directories -----------------------------------------------------------------
    @fuse_errors
    async def opendir(self, inode: int, ctx: Any) -> int:
        if not self.tree.get(inode).is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        return inode

    @fuse_errors
    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        children = sorted(self.tree.get(fh).children.items())
        for i, (name, inode) in enumerate(children[start_id:], start_id + 1):
            if not pyfuse3.readdir_reply(token, name, self._attrs(self.tree.nodes[inode]), i):
                return

    async def releasedir(self, fh: int) -> None:
        return None

    # -- files -----------------------------------------------------------------------
    @fuse_errors
    async def open(self, inode: int, flags: int, ctx: Any) -> pyfuse3.FileInfo:
        node = self.tree.get(inode)
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        fh, self._next_fh = self._next_fh, self._next_fh + 1
        if node.minor is not None:
            opener = Opener.from_ctx(ctx.uid, ctx.gid, ctx.pid)
            self._files[fh] = await self.sessions.open(node.minor, opener)
        else:
            self._files[fh] = node
        return pyfuse3.FileInfo(fh=fh, direct_io=True, keep_cache=False)

    @fuse_errors
    async def read(self, fh: int, off: int, size: int) -> bytes:
        obj = self._file(fh)
        if isinstance(obj, Session):
            obj.check_open()
            data = format_ticket(Ticket(obj.minor, self.sessions.socket_path, obj.token))
        else:
            assert obj.entry is not None  # open() hands out fhs for devices and entries only
            data = read_entry(obj.entry, obj.target)
        return data[off:off + size]

    @fuse_errors
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        obj = self._file(fh)
        if isinstance(obj, Session):
            raise pyfuse3.FUSEError(errno.EINVAL)  # Gdev's device files take ioctls only
        value = self._values.setdefault(fh, PendingValue())
        try:
            value.add(off, buf)
        except GdevError as exc:  # the writer sees EINVAL only: the log says why
            log.warning("%s: refused %r: %s", self.tree.path_of(obj), buf[:64], exc.detail)
            raise
        if buf.endswith(b"\n"):
            await self._apply(obj, value.take())
        return len(buf)

    @fuse_errors
    async def flush(self, fh: int) -> None:
        """Apply a value still pending (written without a final newline): close() gets
        its error.  Called at every close of a descriptor, so bash's early one is a no-op."""
        value = self._values.get(fh)
        obj = self._files.get(fh)
        if value is not None and value.data and not value.done and isinstance(obj, Node):
            await self._apply(obj, value.take())

    async def _apply(self, node: Node, data: bytes) -> None:
        """Set the entry of ``node`` to the value ``data``; refusals are logged with why."""
        assert node.entry is not None  # open() hands out fhs for devices and entries only
        write_entry(node.entry, node.target, 0, data)  # logs a refusal with why, once
        node.touch()
        log.info("%s = %s", self.tree.path_of(node), data.strip().decode(errors="replace"))

    @fuse_errors
    async def release(self, fh: int) -> None:
        self._values.pop(fh, None)
        obj = self._files.pop(fh, None)
        if isinstance(obj, Session):
            await self.sessions.end(obj, "device file released")

    async def statfs(self, ctx: Any) -> pyfuse3.StatvfsData:
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_files = len(self.tree.nodes)
        s.f_namemax = 255
        return s

    def _file(self, fh: int) -> Session | Node:
        try:
            return self._files[fh]
        except KeyError:
            raise pyfuse3.FUSEError(errno.EBADF) from None

    def open_sessions(self) -> int:
        """How many device files are open (for tests and logs)."""
        return sum(isinstance(o, Session) for o in self._files.values())

