"""Reading ``MOUNT/proc/gdev`` into plain records, for gdev-smi and gmonitor.

The tools read only the tree (so any user may run them) and show what it has: every file of
a ``vdN`` directory becomes a field of that vGPU's record (numbers as ``int``, anything else
as stripped text), so an entry added to procfs (e.g. the guest mode) appears without a
change here.  Tables (``contexts``, ``shm``) become one dict per row, keyed by the header.
"""

from __future__ import annotations

import os
from typing import Any

Value = int | float | str


def read_text(proc: str, *parts: str) -> str:
    """The text of ``proc/parts...``."""
    with open(os.path.join(proc, *parts)) as f:
        return f.read()


def parse_value(text: str) -> Value:
    """``"42\\n"`` -> 42, ``"1.5"`` -> 1.5, anything else the stripped text."""
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_table(text: str) -> list[dict[str, Value]]:
    """A header line of column names, then one row per line (blank-separated fields)."""
    lines = text.splitlines()
    if not lines:
        return []
    head = lines[0].split()
    return [dict(zip(head, map(parse_value, line.split()), strict=True))
            for line in lines[1:] if line.strip()]


def parse_choices(text: str) -> tuple[str, list[str]]:
    """``"[band] credit fifo null"`` -> ``("band", ["band", "credit", "fifo", "null"])``; a
    plain word is its own only choice."""
    words = text.split()
    names = [w.strip("[]") for w in words]
    current = next((w.strip("[]") for w in words if w.startswith("[")), names[0] if names
                   else "")
    return current, names


def read_vgpu(proc: str, minor: int) -> dict[str, Value]:
    """Every entry of ``vdMINOR`` as a field, plus ``minor``."""
    vd = f"vd{minor}"
    record: dict[str, Value] = {"minor": minor}
    for name in sorted(os.listdir(os.path.join(proc, vd))):
        record[name] = parse_value(read_text(proc, vd, name))
    return record


def parse_guest_modes(text: str) -> dict[int, dict[str, Value]]:
    """``guest_mode``'s ``gpuN MODE transitions T`` lines -> ``{N: {"mode": MODE,
    "transitions": T}}`` (the indented history lines are skipped)."""
    modes: dict[int, dict[str, Value]] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 4 and words[0].startswith("gpu") and words[0][3:].isdigit():
            modes[int(words[0][3:])] = {"mode": words[1], "transitions": parse_value(words[3])}
    return modes


def _optional(proc: str, name: str) -> str:
    """The text of an entry a daemon may not have (an older one): "" when absent."""
    try:
        return read_text(proc, name)
    except FileNotFoundError:
        return ""


def _with_guest_class(processes: list[dict[str, Value]], guests: str) -> list[dict[str, Value]]:
    """Each process row with ``guest`` (1: runs only in the hosts' idle cycles)."""
    by_cid = {row["cid"]: row["guest"] for row in parse_table(guests)}
    return [{**p, "guest": by_cid.get(p["cid"], 0)} for p in processes]


def snapshot(proc: str) -> dict[str, Any]:
    """The whole tree as one record: scheduler, queueing, window, GPUs (with the guests'
    mode), vGPUs, processes (with their guest class), shared segments.  Raises OSError if
    the tree cannot be read (no gdevd, no permission)."""
    policy, policies = parse_choices(read_text(proc, "scheduler"))
    vgpus = [read_vgpu(proc, i) for i in range(int(read_text(proc, "virtual_device_count")))]
    gpus = []
    modes = parse_guest_modes(_optional(proc, "guest_mode"))
    for index in range(int(read_text(proc, "device_count"))):
        mine = [v for v in vgpus if v.get("phys") == index]
        guests = modes.get(index, {})
        gpus.append({"index": index, "vgpus": [v["minor"] for v in mine],
                     "guest_mode": guests.get("mode", "-"),
                     "guest_transitions": guests.get("transitions", 0),
                     "memory_used": sum(int(v.get("memory_used", 0)) for v in mine),
                     **{f"{k}_total": sum(int(v.get(k, 0)) for v in mine)
                        for k in ("compute_bandwidth", "memory_bandwidth", "memory_share")}})
    return {"scheduler": policy, "policies": policies,
            "queueing": read_text(proc, "queueing").strip(),
            "util_window_us": int(read_text(proc, "util_window_us")),
            "gpus": gpus, "vgpus": vgpus,
            "processes": _with_guest_class(parse_table(read_text(proc, "contexts")),
                                           _optional(proc, "guests")),
            "shm": parse_table(read_text(proc, "shm"))}


def proc_dir(mount: str | None) -> str:
    """``MOUNT/proc/gdev`` (``$GDEV_MOUNT`` or the default mount when ``mount`` is None)."""
    from libgdev.gate import mount_point

    return os.path.join(mount or mount_point(), "proc", "gdev")
