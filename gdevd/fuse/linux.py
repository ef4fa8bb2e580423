"""What the daemon's own tree (``/dev``, ``/proc/gdev``) answers to the operations it does not
do: the errno Linux gives for the same call on its ``/dev`` and ``/proc``, never ENOSYS.

ENOSYS is not a per-file answer for FUSE: the kernel takes it to mean "this file system has
no such operation" and never sends that operation again for the whole mount (``fsync``,
``fsyncdir``, ``flush``, ``create``, the xattr calls ...), so one ``touch MOUNT/dev/x`` would
otherwise stop every later create in a module's subtree (they would fail), and one ``fsync``
of a /proc file would turn every later fsync of an ecryptfs file into a silent no-op.
Module subtrees route these operations to themselves before this class sees them.
"""

from __future__ import annotations

import errno
from typing import Any, NoReturn

import pyfuse3


def _refuse(err: int) -> NoReturn:
    raise pyfuse3.FUSEError(err)


class LinuxAnswers:
    """Operations refused with Linux's errno (a mixin for ``pyfuse3.Operations``)."""

    # vfs_create() of a directory without ->create: EACCES; mknod, mkdir, symlink, link,
    # unlink, rmdir without the inode operation: EPERM (fs/namei.c).
    async def create(self, parent: int, name: bytes, mode: int, flags: int, ctx: Any) -> Any:
        """EACCES: no file can be created here."""
        _refuse(errno.EACCES)

    async def mknod(self, parent: int, name: bytes, mode: int, rdev: int, ctx: Any) -> Any:
        """EPERM."""
        _refuse(errno.EPERM)

    async def mkdir(self, parent: int, name: bytes, mode: int, ctx: Any) -> Any:
        """EPERM."""
        _refuse(errno.EPERM)

    async def symlink(self, parent: int, name: bytes, target: bytes, ctx: Any) -> Any:
        """EPERM."""
        _refuse(errno.EPERM)

    async def link(self, inode: int, new_parent: int, new_name: bytes, ctx: Any) -> Any:
        """EPERM."""
        _refuse(errno.EPERM)

    async def unlink(self, parent: int, name: bytes, ctx: Any) -> None:
        """EPERM."""
        _refuse(errno.EPERM)

    async def rmdir(self, parent: int, name: bytes, ctx: Any) -> None:
        """EPERM."""
        _refuse(errno.EPERM)

    async def readlink(self, inode: int, ctx: Any) -> bytes:
        """EINVAL: nothing here is a symlink."""
        _refuse(errno.EINVAL)

    # fsync of a character device or a /proc file: EINVAL (no ->fsync); a directory of
    # /dev (tmpfs) answers 0, one of /proc EINVAL: nothing here is ever dirty, so 0.
    async def fsync(self, fh: int, datasync: bool) -> None:
        """EINVAL, as for /dev/gdevN and /proc files on Linux."""
        _refuse(errno.EINVAL)

    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        """Nothing to write back."""
        return None

    # No xattr handlers: EOPNOTSUPP, and an empty list.
    async def getxattr(self, inode: int, name: bytes, ctx: Any) -> bytes:
        """EOPNOTSUPP."""
        _refuse(errno.EOPNOTSUPP)

    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: Any) -> None:
        """EOPNOTSUPP."""
        _refuse(errno.EOPNOTSUPP)

    async def removexattr(self, inode: int, name: bytes, ctx: Any) -> None:
        """EOPNOTSUPP."""
        _refuse(errno.EOPNOTSUPP)

    async def listxattr(self, inode: int, ctx: Any) -> list[bytes]:
        """No attributes."""
        return []
