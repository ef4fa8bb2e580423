"""Device-file modes and owners that survive a restart: the state file.

A real driver's device nodes lose a ``chmod`` when they are created again (at boot); what
lasts is configuration (udev rules, NVIDIA's ``NVreg_DeviceFileMode``/``UID``/``GID``
module options) and the run-time state that the system keeps for the administrator in
``/var/lib`` (``alsactl store`` / ``restore`` of ``/var/lib/alsa/asound.state``,
systemd-backlight).  gdevd does both, and never rewrites the administrator's own config
file (its comments and layout are theirs):

* ``[dev.gdevN]`` in the ``--config`` file: the modes and owners an administrator decided;
* the state file (``--state FILE`` or ``[daemon] state``; the systemd unit uses
  ``/var/lib/gdev/state.toml``): every ``chmod``/``chown`` of ``MOUNT/dev/gdevN`` is written
  there at once (atomically: a new file renamed over the old), and the next start applies it
  after the config file's tables, so the last change wins.  Removing the state file returns
  to the configuration.

Without a state file a ``chmod`` lasts as long as the daemon, as on a device node.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile

import trio

from gdevd.fuse.tree import Node, Tree
from gdevd.settings import DeviceAccess

log = logging.getLogger("gdevd.fuse")
HEADER = ("# gdevd's state: modes and owners of device files set with chmod/chown while it\n"
          "# ran (written by gdevd; remove this file to return to the config's [dev] tables)\n")


def apply(tree: Tree, devices: dict[int, DeviceAccess], source: str) -> None:
    """Set the mode and owner of the device files named in ``devices``."""
    for node in tree.nodes.values():
        access = devices.get(node.minor) if node.minor is not None else None
        if access is None:
            continue
        if access.mode is not None:
            node.mode = stat.S_IFMT(node.mode) | access.mode
        node.uid = node.uid if access.uid is None else access.uid
        node.gid = node.gid if access.gid is None else access.gid
        log.info("%s: mode %o, owner %d:%d (%s)", tree.path_of(node),
                 stat.S_IMODE(node.mode), node.uid, node.gid, source)


def render(devices: dict[int, DeviceAccess]) -> str:
    """The state file's text: one ``[dev.gdevN]`` table per device file."""
    parts = [HEADER]
    for minor, a in sorted(devices.items()):
        parts.append(f"\n[dev.gdev{minor}]\n")
        if a.mode is not None:
            parts.append(f"mode = 0o{a.mode:03o}\n")
        if a.uid is not None:
            parts.append(f"owner = {a.uid}\n")
        if a.gid is not None:
            parts.append(f"group = {a.gid}\n")
    return "".join(parts)


def write_atomically(path: str, text: str) -> None:
    """Replace ``path`` by a file holding ``text`` (a reader sees the old or the new one)."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gdevd-state-", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


class DeviceState:
    """The state file of one daemon: the device files changed at run time, kept there."""

    def __init__(self, path: str, tree: Tree, loaded: dict[int, DeviceAccess]) -> None:
        self.path, self.tree = path, tree
        self.kept = set(loaded)          # minors the file holds (loaded or changed since)
        self._lock = trio.Lock()         # one writer at a time, in the order of the changes

    async def record(self, node: Node) -> None:
        """Keep ``node``'s mode and owner (after a chmod/chown); a failure to write is
        logged (the change itself stands, as on a device node)."""
        assert node.minor is not None
        self.kept.add(node.minor)
        devices = {n.minor: DeviceAccess(stat.S_IMODE(n.mode), n.uid, n.gid)
                   for n in self.tree.nodes.values()
                   if n.minor is not None and n.minor in self.kept}
        async with self._lock:
            try:
                await trio.to_thread.run_sync(write_atomically, self.path, render(devices))
            except OSError as exc:
                log.error("state file %s: not written (%s); %s keeps mode %o and owner %d:%d "
                          "until gdevd stops", self.path, exc, self.tree.path_of(node),
                          stat.S_IMODE(node.mode), node.uid, node.gid)
