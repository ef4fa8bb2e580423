"""The gate: opening ``MOUNT/dev/gdevN`` and reading the session ticket from it.

The kernel checks the device file's mode and owner at ``open``; the daemon then creates the
context and a one-time token bound to the opener.  Reading the open file returns a short text
ticket (this module formats and parses it for both sides)::

    gdev-session 1
    minor 0
    socket /tmp/gdevd-1234/ioctl.sock
    token 9f2c...(64 hex digits)

The client connects to ``socket`` and presents ``token`` with HELLO from the same process.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import NamedTuple

from libgdev.errors import error_from_errno

DEFAULT_MOUNT = "/run/gdev"
TICKET_VERSION = 1


class Ticket(NamedTuple):
    """What a read of an open device file returns."""

    minor: int
    socket: str
    token: bytes


def mount_point() -> str:
    """The gdevd mount: ``$GDEV_MOUNT`` or :data:`DEFAULT_MOUNT`."""
    return os.environ.get("GDEV_MOUNT", DEFAULT_MOUNT)


def device_path(minor: int, mount: str | None = None) -> str:
    """Path of the device file of vGPU ``minor``."""
    return os.path.join(mount or mount_point(), "dev", f"gdev{minor}")


def format_ticket(t: Ticket) -> bytes:
    """The ticket's text, as the daemon serves it."""
    return (f"gdev-session {TICKET_VERSION}\nminor {t.minor}\nsocket {t.socket}\n"
            f"token {t.token.hex()}\n").encode()


def parse_ticket(data: bytes) -> Ticket:
    """Parse a ticket; EPROTO if it is not one of this version."""
    try:
        fields = dict(line.split(" ", 1) for line in data.decode().splitlines())
        if fields["gdev-session"] != str(TICKET_VERSION):
            raise ValueError("version")
        return Ticket(int(fields["minor"]), fields["socket"], bytes.fromhex(fields["token"]))
    except (ValueError, KeyError, UnicodeDecodeError):
        raise error_from_errno(_errno.EPROTO, f"bad session ticket {data[:80]!r}") from None


def open_gate(minor: int, mount: str | None = None) -> tuple[int, Ticket]:
    """Open vGPU ``minor``'s device file and read its ticket: (fd, ticket).  The caller owns
    the fd; closing it ends the session."""
    if minor < 0:
        raise error_from_errno(_errno.ENODEV, f"minor {minor}")
    path = device_path(minor, mount)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        raise error_from_errno(exc.errno or _errno.ENODEV,
                               open_failure(path, mount or mount_point(), exc)) from None
    try:
        return fd, parse_ticket(os.pread(fd, 4096, 0))
    except BaseException:
        os.close(fd)
        raise


def open_failure(path: str, mount: str, exc: OSError) -> str:
    """Why ``path`` (a file of the mount) did not open, and what to do about it: no daemon,
    a stale mount, or (otherwise) the path itself."""
    env = f"GDEV_MOUNT={os.environ['GDEV_MOUNT']}" if "GDEV_MOUNT" in os.environ \
        else f"GDEV_MOUNT unset, default {DEFAULT_MOUNT}"
    if exc.errno == _errno.ENOTCONN:
        return (f"gdevd at {mount} is gone and left a stale mount ({env}): clear it with "
                f"`fusermount3 -u {mount}`, then start it with `gdevd {mount}`")
    if exc.errno == _errno.ENOENT and not os.path.isdir(os.path.join(mount, "proc", "gdev")):
        return f"no gdevd at {mount} ({env}): start it with `gdevd {mount}`"
    return path
