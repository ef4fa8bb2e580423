"""The inode tree the daemon serves: ``/dev/gdevN`` and ``/proc/gdev`` (from :mod:`procfs`).

The tree is fixed at mount time (one device file per vGPU, the procfs table), so inodes are
plain integers handed out in build order and never forgotten.  Every node carries its own
mode, owner and times: ``chmod``/``chown`` on a device file change them and the kernel
enforces them (``default_permissions``).
"""

from __future__ import annotations

import errno
import stat
import time
from dataclasses import dataclass, field
from typing import Any

import pyfuse3

from procfs import GLOBAL, PER_VGPU, Entry

ROOT_INODE = pyfuse3.ROOT_INODE
DEVICE_MODE = 0o666  # Gdev's udev rule: KERNEL=="gdev*", MODE="0666"


@dataclass(eq=False)
class Node:
    """A directory, a device file (``minor`` set) or a proc entry (``entry`` set)."""

    inode: int
    name: bytes
    parent: int
    mode: int  # full st_mode, type bits included
    uid: int = 0
    gid: int = 0
    minor: int | None = None
    entry: Entry | None = None
    target: Any = None  # what the proc entry reads: the system or a VirtualGpu
    children: dict[bytes, int] = field(default_factory=dict)
    mtime_ns: int = field(default_factory=time.time_ns)
    ctime_ns: int = field(default_factory=time.time_ns)

    @property
    def is_dir(self) -> bool:
        """Whether this node is a directory."""
        return stat.S_ISDIR(self.mode)

    def touch(self, ctime_only: bool = False) -> None:
        """Stamp a change (ctime always, mtime unless ``ctime_only``)."""
        now = time.time_ns()
        self.ctime_ns = now
        if not ctime_only:
            self.mtime_ns = now


class Tree:
    """All nodes by inode; built from the system's vGPUs and the procfs table."""

    def __init__(self, system: Any, uid: int = 0, gid: int = 0) -> None:
        self.nodes: dict[int, Node] = {}
        self._uid, self._gid = uid, gid
        self._last_inode = ROOT_INODE  # never reused: nodes of unloaded modules go away
        root = self._add(None, b"", stat.S_IFDIR | 0o755)
        dev = self._add(root, b"dev", stat.S_IFDIR | 0o755)
        for vgpu in system.virtual:
            node = self._add(dev, b"gdev%d" % vgpu.minor, stat.S_IFREG | DEVICE_MODE)
            node.minor = vgpu.minor
        proc = self._add(self._add(root, b"proc", stat.S_IFDIR | 0o555), b"gdev",
                         stat.S_IFDIR | 0o555)
        self.proc = proc
        for entry in GLOBAL:
            self._add_entry(proc, entry, system)
        for vgpu in system.virtual:
            vd = self._add(proc, b"vd%d" % vgpu.minor, stat.S_IFDIR | 0o555)
            for entry in PER_VGPU:
                self._add_entry(vd, entry, vgpu)

    def _add(self, parent: Node | None, name: bytes, mode: int) -> Node:
        if parent is not None:
            self._last_inode += 1
        inode = ROOT_INODE if parent is None else self._last_inode
        node = Node(inode, name, parent.inode if parent else ROOT_INODE, mode,
                    self._uid, self._gid)
        self.nodes[inode] = node
        if parent is not None:
            parent.children[name] = inode
        return node

    def _add_entry(self, parent: Node, entry: Entry, target: Any) -> None:
        node = self._add(parent, entry.name.encode(), stat.S_IFREG | entry.mode)
        node.entry, node.target = entry, target

    # -- nodes added and removed at run time (in-daemon modules) ----------------------
    def add_dir(self, parent: Node, name: bytes, mode: int = 0o555) -> Node:
        """A new directory ``name`` under ``parent``; EEXIST if the name is taken."""
        if name in parent.children:
            raise pyfuse3.FUSEError(errno.EEXIST)
        return self._add(parent, name, stat.S_IFDIR | mode)

    def add_entry(self, parent: Node, entry: Entry, target: Any) -> Node:
        """A proc entry file under ``parent`` reading ``target``."""
        self._add_entry(parent, entry, target)
        return self.nodes[parent.children[entry.name.encode()]]

    def remove(self, node: Node) -> None:
        """Remove ``node`` and everything below it."""
        for child in list(node.children.values()):
            self.remove(self.nodes[child])
        self.nodes[node.parent].children.pop(node.name, None)
        del self.nodes[node.inode]

    def get(self, inode: int) -> Node:
        """The node of ``inode``; FUSEError(ENOENT) if there is none."""
        try:
            return self.nodes[inode]
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def lookup(self, parent: int, name: bytes) -> Node:
        """The child ``name`` of directory ``parent`` (``.`` and ``..`` included)."""
        node = self.get(parent)
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        if name == b".":
            return node
        if name == b"..":
            return self.get(node.parent)
        try:
            return self.nodes[node.children[name]]
        except KeyError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None

    def path_of(self, node: Node) -> str:
        """The node's path inside the mount (for logs)."""
        parts = []
        while node.inode != ROOT_INODE:
            parts.append(node.name.decode())
            node = self.nodes[node.parent]
        return "/" + "/".join(reversed(parts))
