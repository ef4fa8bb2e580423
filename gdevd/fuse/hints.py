"""What gdevd's log says when someone names a /proc/gdev file that does not exist.

``echo 30 > MOUNT/proc/gdev/vd0/compute_bandwith`` opens with ``O_CREAT``; the tree creates
nothing, so the writer sees ``No such file or directory`` and gdevd logs the closest names
(a global entry written under ``vdN/`` or a per-vGPU one written at the top is pointed to
where it lives) and where the list of every entry is (``/proc/gdev/help``).
"""

from __future__ import annotations

import difflib

from gdevd.fuse.tree import Node, Tree


def _names(node: Node) -> list[str]:
    return [n.decode(errors="replace") for n in node.children]


def _elsewhere(tree: Tree, parent: Node, name: str) -> str | None:
    """Where an entry ``name`` lives if not in ``parent`` (a vGPU's or the top level)."""
    proc = tree.proc
    if parent is proc:
        for child in sorted(proc.children):
            vd = tree.nodes[proc.children[child]]
            if vd.is_dir and name.encode() in vd.children:
                return f"{tree.path_of(vd)}/{name} (one per vGPU: vdN/{name})"
        return None
    if name.encode() in proc.children:
        return f"{tree.path_of(proc)}/{name}"
    return None


def missing_entry(tree: Tree, parent: Node, name: bytes) -> str:
    """The log line for a create of ``name`` in ``parent`` (a /proc/gdev directory)."""
    text = name.decode(errors="replace")
    where = f"{tree.path_of(parent)}/{text}"
    if (other := _elsewhere(tree, parent, text)) is not None:
        return f"{where}: no such entry here; it is {other}"
    close = difflib.get_close_matches(text, _names(parent), n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return (f"{where}: no such entry (/proc/gdev files cannot be created){hint} "
            f"{tree.path_of(tree.proc)}/help lists every entry")


def in_proc(tree: Tree, node: Node) -> bool:
    """Whether ``node`` is /proc/gdev or a directory below it."""
    while True:
        if node is tree.proc:
            return True
        if node.parent == node.inode or node.parent not in tree.nodes:
            return False
        node = tree.nodes[node.parent]
