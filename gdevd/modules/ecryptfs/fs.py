"""The plaintext view: FUSE operations of one ecryptfs subtree over its lower directory.

Inodes are handed out per lower path (the subtree's root is the mount's node for it, every
other inode is ``inode_base + n``); rename moves the mapping of a path and everything below
it.  Directories are the lower directories themselves (names are not encrypted); regular
files are :class:`EncryptedFile`; anything else in the lower directory is hidden, as is the
mount record.  Every lower access goes through :class:`~.lower.LowerDir` (descriptors, no
symlink followed).  An inode number is handed out only for a name that exists (a failed
lookup keeps nothing) and dropped when the lower name is found gone.  Handles of one inode
share one EncryptedFile; file work runs in worker threads.  Methods raise ``GdevError`` or
``OSError``; the FUSE front translates both.
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
from .lower import LowerDir

ATTR_TIMEOUT = 1.0
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2


class EcryptfsFs:
    """One mounted ecryptfs: ``lower`` seen in plaintext at inode ``root_inode``."""

    def __init__(self, lower: LowerDir, mk: MountKey, cipher: ExtentCipher, root_inode: int,
                 inode_base: int) -> None:
        self.lower, self.mk, self.cipher = lower, mk, cipher
        self.root = root_inode
        self._paths: dict[int, str] = {root_inode: ""}
        self._inodes: dict[str, int] = {"": root_inode}
        self._next_inode = self._next_fh = inode_base
        self._handles: dict[int, int] = {}                 # fh -> inode
        self._open: dict[int, tuple[EncryptedFile, int]] = {}  # inode -> (file, open count)
        self._listings: dict[int, list[str]] = {}  # dir inode -> names, taken at offset 0

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
            try:
                st = self.lower.lstat(rel)
            except FileNotFoundError:
                self._drop(rel)  # gone below: forget the number (it is not reused)
                raise
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
            with self.lower.parent(rel) as (d, name):
                return plaintext_size(name, self.mk, dir_fd=d)
        except GdevError:
            if strict:
                raise
            return 0  # listings still show a damaged file; opening it says EIO

    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        """Attributes with the plaintext size."""
        return self._attrs(inode)

    async def lookup(self, parent: int, name: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        """The child ``name`` of ``parent`` (a number is kept only if it exists)."""
        rel = self._child(parent, name)
        if rel not in self._inodes:
            st = self.lower.lstat(rel)  # FileNotFoundError: nothing allocated
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                raise GdevError(errno.ENOENT, f"{rel}: not a file or directory")
        return self._attrs(self._inode(rel))

    async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any) -> Any:
        """chmod, chown, truncate and utimes, each through a descriptor of the lower file."""
        rel = self._rel(inode)
        if fields.update_mode:
            self.lower.chmod(rel, attr.st_mode)
        if fields.update_uid or fields.update_gid:
            self.lower.chown(rel, attr.st_uid if fields.update_uid else -1,
                             attr.st_gid if fields.update_gid else -1)
        if fields.update_size:
            await self._truncate(inode, attr.st_size)
        if fields.update_atime or fields.update_mtime:
            self.lower.utime(rel, attr.st_atime_ns if fields.update_atime else None,
                             attr.st_mtime_ns if fields.update_mtime else None)
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
        if not stat.S_ISDIR(self.lower.lstat(self._rel(inode)).st_mode):
            raise GdevError(errno.ENOTDIR, self._rel(inode))
        return inode

    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        """The lower directory's files and directories, the mount record left out.

        The names are read once per listing (at offset 0) and later chunks continue in that
        snapshot: a listing costs one read of the lower directory however many chunks it
        takes, and names created meanwhile neither repeat nor shift entries."""
        rel = self._rel(fh)
        names = self._listings.get(fh) if start_id else None
        if names is None:
            names = sorted(n for n in self.lower.listdir(rel)
                           if not (rel == "" and n == RECORD_NAME))
            self._listings[fh] = names
        for i, name in enumerate(names[start_id:], start_id + 1):
            child = os.path.join(rel, name)
            known = child in self._inodes
            try:
                attrs = self._attrs(self._inode(child), strict=False)
            except (GdevError, OSError):
                if not known:
                    self._drop(child)  # keep no number for what is not served
                continue  # not a file or directory, or gone meanwhile
            if not pyfuse3.readdir_reply(token, os.fsencode(name), attrs, i):
                return

    async def releasedir(self, fh: int) -> None:
        """Forget the directory's snapshot (the handle is the inode: a listing still going on
        another handle of it reads the directory again)."""
        self._listings.pop(fh, None)

    async def mkdir(self, parent: int, name: bytes, mode: int, ctx: Any) -> Any:
        """A new directory owned by the caller."""
        rel = self._child(parent, name)
        self.lower.mkdir(rel, stat.S_IMODE(mode) & ~ctx.umask, ctx.uid, ctx.gid)
        return self._attrs(self._inode(rel))

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        """Flush the lower directory (names created or removed in it)."""
        fd = self.lower.open(self._rel(fh), os.O_RDONLY | os.O_DIRECTORY)
        try:
            await trio.to_thread.run_sync(os.fsync, fd)
        finally:
            os.close(fd)

    async def rmdir(self, parent: int, name: bytes, ctx: Any) -> None:
        """Remove an empty directory."""
        rel = self._child(parent, name)
        self.lower.rmdir(rel)
        self._drop(rel)

    async def unlink(self, parent: int, name: bytes, ctx: Any) -> None:
        """Remove a file (open handles keep working until released)."""
        rel = self._child(parent, name)
        self.lower.unlink(rel)
        self._drop(rel)

    async def rename(self, p_old: int, old: bytes, p_new: int, new: bytes, flags: int,
                     ctx: Any) -> None:
        """Rename (RENAME_NOREPLACE honoured; RENAME_EXCHANGE is EINVAL)."""
        if flags & ~RENAME_NOREPLACE:
            raise GdevError(errno.EINVAL, "rename flags")
        src, dst = self._child(p_old, old), self._child(p_new, new)
        self.lower.rename(src, dst, bool(flags & RENAME_NOREPLACE))
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
            with self.lower.parent(self._rel(inode)) as (d, name):
                f, n = EncryptedFile.open(name, self.mk, self.cipher, dir_fd=d), 0
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
        with self.lower.parent(rel) as (d, base):
            f = EncryptedFile.create(base, stat.S_IMODE(mode) & ~ctx.umask, self.mk,
                                     self.cipher, dir_fd=d)
        os.fchown(f.fd, ctx.uid, ctx.gid)
        inode = self._inode(rel)
        self._open[inode] = (f, 1)
        return self._handle(inode), self._attrs(inode)

    async def mknod(self, parent: int, name: bytes, mode: int, rdev: int, ctx: Any) -> Any:
        """A regular file (as ``create``, then closed); EPERM for any other kind, which this
        file system does not serve."""
        if not stat.S_ISREG(mode):
            raise GdevError(errno.EPERM, "ecryptfs serves regular files and directories only")
        fi, attrs = await self.create(parent, name, mode, os.O_WRONLY, ctx)
        await self.release(fi.fh)
        return attrs

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
        st = self.lower.statvfs()
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
        self._listings.clear()
        self._handles.clear()
