"""The lower directory, reached only through descriptors: no path is ever re-resolved.

The daemon acts as root on a directory that tenants may also write to directly, so a name
it resolved for one FUSE call may be a symlink by the next.  :class:`LowerDir` therefore
keeps an ``O_PATH`` descriptor of the lower root (opened once, at load, from the path the
administrator gave) and reaches everything below it by walking one component at a time with
``openat(O_NOFOLLOW)``; the last component is then acted on with the ``*at`` calls relative
to its directory's descriptor (``mkdirat``, ``unlinkat``, ``renameat``, ``fstatat`` without
following), or opened with ``O_NOFOLLOW`` and changed through the descriptor (``fchmod``,
``fchown``, ``futimens``).  Invariant: a symlink anywhere below the root is never followed
(ELOOP or ENOTDIR instead), and since names ``.``/``..`` and names with ``/`` never reach
here (:meth:`EcryptfsFs._child` refuses them), nothing outside the lower root is reached.
This is what ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`` gives, done portably.

Only regular files and directories are served; a regular file with more than one link is
never chmod'ed or chown'ed (a hard link to a file outside would carry the change out).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

from gdevd.errors import GdevError

_WALK = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW_RD = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class LowerDir:
    """Descriptor-relative access to one lower directory (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        """Close the root descriptor (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @contextmanager
    def parent(self, rel: str) -> Iterator[tuple[int, str]]:
        """``(directory descriptor, last name)`` of ``rel``, the directory reached without
        following any symlink; ``rel`` must not be the root."""
        head, name = os.path.split(rel)
        with self.directory(head) as d:
            yield d, name

    @contextmanager
    def directory(self, rel: str) -> Iterator[int]:
        """An ``O_PATH`` descriptor of directory ``rel`` (the root for ``""``), walked one
        component at a time with ``O_NOFOLLOW``; closed on exit."""
        fd = os.dup(self.fd)
        try:
            for part in filter(None, rel.split("/")):
                nxt = os.open(part, _WALK, dir_fd=fd)
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def lstat(self, rel: str) -> os.stat_result:
        """``fstatat(AT_SYMLINK_NOFOLLOW)`` of ``rel``."""
        if not rel:
            return os.fstat(self.fd)
        with self.parent(rel) as (d, name):
            return os.stat(name, dir_fd=d, follow_symlinks=False)

    def open(self, rel: str, flags: int, mode: int = 0o600) -> int:
        """``openat(rel, flags | O_NOFOLLOW)``; the caller owns the descriptor."""
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        if not rel:
            return os.open(".", flags, dir_fd=self.fd)
        with self.parent(rel) as (d, name):
            return os.open(name, flags, mode, dir_fd=d)

    @contextmanager
    def opened(self, rel: str) -> Iterator[tuple[int, os.stat_result]]:
        """``rel`` opened read-only without following (a file or a directory), with its
        stat; ENOENT for anything else (a FIFO, a socket, a device)."""
        fd = self.open(rel, _NOFOLLOW_RD)
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise GdevError(errno.ENOENT, f"{rel}: not a file or directory")
            yield fd, st
        finally:
            os.close(fd)

    def chmod(self, rel: str, mode: int) -> None:
        """``fchmod`` through a descriptor (EPERM on a file with other hard links)."""
        with self.opened(rel) as (fd, st):
            _single_link(rel, st)
            os.fchmod(fd, stat.S_IMODE(mode))

    def chown(self, rel: str, uid: int, gid: int) -> None:
        """``fchown`` through a descriptor (EPERM on a file with other hard links)."""
        with self.opened(rel) as (fd, st):
            _single_link(rel, st)
            os.fchown(fd, uid, gid)

    def utime(self, rel: str, atime_ns: int | None, mtime_ns: int | None) -> None:
        """``futimens`` through a descriptor; None keeps that time."""
        with self.opened(rel) as (fd, st):
            os.utime(fd, ns=(st.st_atime_ns if atime_ns is None else atime_ns,
                             st.st_mtime_ns if mtime_ns is None else mtime_ns))

    def mkdir(self, rel: str, mode: int, uid: int, gid: int) -> None:
        """``mkdirat``, then ``fchown`` of the new directory opened without following."""
        with self.parent(rel) as (d, name):
            os.mkdir(name, mode, dir_fd=d)
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=d)
            try:
                os.fchown(fd, uid, gid)
            finally:
                os.close(fd)

    def rmdir(self, rel: str) -> None:
        """``unlinkat(AT_REMOVEDIR)``."""
        with self.parent(rel) as (d, name):
            os.rmdir(name, dir_fd=d)

    def unlink(self, rel: str) -> None:
        """``unlinkat`` of a non-directory (EISDIR for a directory)."""
        with self.parent(rel) as (d, name):
            if stat.S_ISDIR(os.stat(name, dir_fd=d, follow_symlinks=False).st_mode):
                raise GdevError(errno.EISDIR, rel)
            os.unlink(name, dir_fd=d)

    def rename(self, src: str, dst: str, noreplace: bool) -> None:
        """``renameat`` between two directories reached without following."""
        with self.parent(src) as (ds, a), self.parent(dst) as (dd, b):
            if noreplace and _exists(b, dd):
                raise GdevError(errno.EEXIST, dst)
            os.rename(a, b, src_dir_fd=ds, dst_dir_fd=dd)

    def listdir(self, rel: str) -> list[str]:
        """The names in directory ``rel`` (read through a descriptor)."""
        fd = self.open(rel, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def statvfs(self) -> os.statvfs_result:
        """The lower file system's numbers."""
        return os.fstatvfs(self.fd)


def _single_link(rel: str, st: os.stat_result) -> None:
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise GdevError(errno.EPERM, f"{rel} has other hard links")


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True
