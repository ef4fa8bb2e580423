"""The plaintext view: FUSE operations of one ecryptfs subtree over its lower directory.

Inodes are handed out per lower path (the subtree's root is the mount's node for it, every
other inode is ``inode_base + n``); rename moves the mapping of a path and everything below
it.  Directories are the lower directories themselves (names are not encrypted); regular
files are :class:`EncryptedFile`; anything else in the lower directory is hidden, as is the
mount record.  Handles of one inode share one EncryptedFile; file work runs in worker
threads.  Methods raise ``GdevError`` or ``OSError``; the FUSE front translates both.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import pyfuse3
import trio

from gdevd.errors import GdevError

from .cipher import ExtentCipher
from .files import EncryptedFile, plaintext_size
from .keys import RECORD_NAME, MountKey

ATTR_TIMEOUT = 1.0
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


class EcryptfsFs:
    """One mounted ecryptfs: ``lower`` seen in plaintext at inode ``root_inode``."""

    def __init__(self, lower: str, mk: MountKey, cipher: ExtentCipher, root_inode: int,
                 inode_base: int) -> None:
        self.lower, self.mk, self.cipher = lower, mk, cipher
        self.root = root_inode
        self._paths: dict[int, str] = {root_inode: ""}
        self._inodes: dict[str, int] = {"": root_inode}
        self._next_inode = self._next_fh = inode_base
        self._handles: dict[int, int] = {}                 # fh -> inode
        self._open: dict[int, tuple[EncryptedFile, int]] = {}  # inode -> (file, open count)

    # -- bookkeeping -----------------------------------------------------------------
    def busy(self) -> int:
        """Open file handles (an unload is refused while there are any)."""
        return len(self._handles)

    def _rel(self, inode: int) -> str:
        try:
            return self._paths[inode]
        except KeyError:
            raise GdevError(errno.ENOENT, f"inode {inode} is gone") from None

    def _child(self, parent: int, name: bytes) -> str:
        rel = os.path.join(self._rel(parent), os.fsdecode(name))
        if rel == RECORD_NAME or name in (b".", b"..") or b"/" in name:
            raise GdevError(errno.ENOENT if rel == RECORD_NAME else errno.EINVAL, rel)
        return rel

    def _full(self, rel: str) -> str:
        return os.path.join(self.lower, rel) if rel else self.lower

    def _inode(self, rel: str) -> int:
        if rel not in self._inodes:
            self._next_inode += 1
            self._inodes[rel] = self._next_inode
            self._paths[self._next_inode] = rel
        return self._inodes[rel]

    def _drop(self, rel: str) -> None:
        inode = self._inodes.pop(rel, None)
        if inode is not None and inode != self.root:
            self._paths.pop(inode, None)

    # -- attributes ------------------------------------------------------------------
    def _attrs(self, inode: int, strict: bool = True) -> pyfuse3.EntryAttributes:
        if inode in self._open:  # open, maybe unlinked: the descriptor still answers
            rel, st = "", os.fstat(self._open[inode][0].fd)
        else:
            rel = self._rel(inode)
            st = os.lstat(self._full(rel))
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise GdevError(errno.ENOENT, f"{rel}: not a file or directory")
        a = pyfuse3.EntryAttributes()
        a.st_ino, a.st_mode, a.st_nlink = inode, st.st_mode, st.st_nlink
        a.st_uid, a.st_gid = st.st_uid, st.st_gid
        a.st_size = self._size(inode, rel, st, strict)
        a.st_atime_ns, a.st_mtime_ns, a.st_ctime_ns = st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns
        a.st_blksize, a.st_blocks = 4096, st.st_blocks
        a.attr_timeout = a.entry_timeout = ATTR_TIMEOUT
        return a

    def _size(self, inode: int, rel: str, st: os.stat_result, strict: bool) -> int:
        if stat.S_ISDIR(st.st_mode):
            return st.st_size
        if inode in self._open:
            return self._open[inode][0].size
        try:
            return plaintext_size(self._full(rel), self.mk)
        except GdevError:
            if strict:
                raise
            return 0  # listings still show a damaged file; opening it says EIO

    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        """Attributes with the plaintext size."""
        return self._attrs(inode)

    async def lookup(self, parent: int, name: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        """The child ``name`` of ``parent``."""
        return self._attrs(self._inode(self._child(parent, name)))

    async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any) -> Any:
        """chmod, chown, truncate and utimes."""
        path = self._full(self._rel(inode))
        if fields.update_mode:
            os.chmod(path, stat.S_IMODE(attr.st_mode))
        if fields.update_uid or fields.update_gid:
            os.chown(path, attr.st_uid if fields.update_uid else -1,
                     attr.st_gid if fields.update_gid else -1)
        if fields.update_size:
            await self._truncate(inode, attr.st_size)
        if fields.update_atime or fields.update_mtime:
            st = os.lstat(path)
            os.utime(path, ns=(attr.st_atime_ns if fields.update_atime else st.st_atime_ns,
                               attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns))
        return self._attrs(inode)

    async def _truncate(self, inode: int, size: int) -> None:
        f = self._acquire(inode)
        try:
            await trio.to_thread.run_sync(f.truncate, size)
        finally:
            self._put(inode)

    # -- directories -----------------------------------------------------------------
    async def opendir(self, inode: int, ctx: Any) -> int:
        """The directory's inode serves as its handle."""
        if not os.path.isdir(self._full(self._rel(inode))):
            raise GdevError(errno.ENOTDIR, self._rel(inode))
        return inode

    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        """The lower directory's files and directories, the mount record left out."""
        rel = self._rel(fh)
        names = sorted(e.name for e in os.scandir(self._full(rel))
                       if not (rel == "" and e.name == RECORD_NAME))
        for i, name in enumerate(names[start_id:], start_id + 1):
            try:
                attrs = self._attrs(self._inode(os.path.join(rel, name)), strict=False)
            except (GdevError, FileNotFoundError):
                continue  # not a file or directory, or gone meanwhile
            if not pyfuse3.readdir_reply(token, os.fsencode(name), attrs, i):
                return

    async def releasedir(self, fh: int) -> None:
        """Nothing to release (the handle is the inode)."""

    async def mkdir(self, parent: int, name: bytes, mode: int, ctx: Any) -> Any:
        """A new directory owned by the caller."""
        rel = self._child(parent, name)
        os.mkdir(self._full(rel), stat.S_IMODE(mode) & ~ctx.umask)
        os.chown(self._full(rel), ctx.uid, ctx.gid)
        return self._attrs(self._inode(rel))

    async def rmdir(self, parent: int, name: bytes, ctx: Any) -> None:
        """Remove an empty directory."""
        rel = self._child(parent, name)
        os.rmdir(self._full(rel))
        self._drop(rel)

    async def unlink(self, parent: int, name: bytes, ctx: Any) -> None:
        """Remove a file (open handles keep working until released)."""
        rel = self._child(parent, name)
        if os.path.isdir(self._full(rel)):
            raise GdevError(errno.EISDIR, rel)
        os.unlink(self._full(rel))
        self._drop(rel)

    async def rename(self, p_old: int, old: bytes, p_new: int, new: bytes, flags: int,
                     ctx: Any) -> None:
        """Rename (RENAME_NOREPLACE honoured; RENAME_EXCHANGE is EINVAL)."""
        if flags & ~RENAME_NOREPLACE:
            raise GdevError(errno.EINVAL, "rename flags")
        src, dst = self._child(p_old, old), self._child(p_new, new)
        if flags & RENAME_NOREPLACE and os.path.lexists(self._full(dst)):
            raise GdevError(errno.EEXIST, dst)
        os.rename(self._full(src), self._full(dst))
        self._drop(dst)
        for rel in [r for r in self._inodes if r == src or r.startswith(src + "/")]:
            inode = self._inodes.pop(rel)
            moved = dst + rel[len(src):]
            self._inodes[moved], self._paths[inode] = inode, moved

    # -- files -----------------------------------------------------------------------
    def _acquire(self, inode: int) -> EncryptedFile:
        if inode in self._open:
            f, n = self._open[inode]
        else:
            f, n = EncryptedFile.open(self._full(self._rel(inode)), self.mk, self.cipher), 0
        self._open[inode] = (f, n + 1)
        return f

    def _put(self, inode: int) -> None:
        f, n = self._open[inode]
        if n > 1:
            self._open[inode] = (f, n - 1)
        else:
            del self._open[inode]
            f.close()

    def _handle(self, inode: int) -> pyfuse3.FileInfo:
        self._next_fh += 1
        self._handles[self._next_fh] = inode
        return pyfuse3.FileInfo(fh=self._next_fh, direct_io=True, keep_cache=False)

    def _file(self, fh: int) -> EncryptedFile:
        try:
            return self._open[self._handles[fh]][0]
        except KeyError:
            raise GdevError(errno.EBADF, f"file handle {fh}") from None

    async def create(self, parent: int, name: bytes, mode: int, flags: int, ctx: Any) -> Any:
        """Create and open a new, empty encrypted file owned by the caller."""
        rel = self._child(parent, name)
        f = EncryptedFile.create(self._full(rel), stat.S_IMODE(mode) & ~ctx.umask, self.mk,
                                 self.cipher)
        os.fchown(f.fd, ctx.uid, ctx.gid)
        inode = self._inode(rel)
        self._open[inode] = (f, 1)
        return self._handle(inode), self._attrs(inode)

    async def open(self, inode: int, flags: int, ctx: Any) -> pyfuse3.FileInfo:
        """Open a file (O_TRUNC empties it)."""
        f = self._acquire(inode)
        if flags & os.O_TRUNC:
            try:
                await trio.to_thread.run_sync(f.truncate, 0)
            except BaseException:
                self._put(inode)
                raise
        return self._handle(inode)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        """Plaintext at ``off``."""
        return await trio.to_thread.run_sync(self._file(fh).read, off, size)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        """Encrypt and store ``buf`` at ``off``."""
        return await trio.to_thread.run_sync(self._file(fh).write, off, buf)

    async def fsync(self, fh: int, datasync: bool) -> None:
        """Flush the lower file."""
        await trio.to_thread.run_sync(self._file(fh).fsync)

    async def flush(self, fh: int) -> None:
        """Nothing is buffered above the lower file."""
        self._file(fh)

    async def release(self, fh: int) -> None:
        """Drop a handle; the last one closes the lower file."""
        inode = self._handles.pop(fh, None)
        if inode is not None:
            self._put(inode)

    async def statfs(self, ctx: Any) -> pyfuse3.StatvfsData:
        """The lower file system's numbers."""
        st = os.statvfs(self.lower)
        s = pyfuse3.StatvfsData()
        for f in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                  "f_ffree", "f_favail", "f_namemax"):
            setattr(s, f, getattr(st, f))
        return s

    def close(self) -> None:
        """Close every lower file still open (at unload, nothing is open)."""
        for f, _ in self._open.values():
            f.close()
        self._open.clear()
        self._handles.clear()
