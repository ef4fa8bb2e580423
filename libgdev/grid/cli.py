"""``gdev-grid``: the grid-wide summary, asked of every node through the Dask scheduler.

    gdev-grid status --scheduler tcp://HOST:8786 [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

COLUMNS = ("name", "state", "mode", "transitions_per_min", "pieces", "pieces_per_s",
           "interrupted", "frames_kept", "fps", "piece_ms", "budget_ms", "cpu", "vram",
           "last_k_ms", "alpha_ms")


def format_table(nodes: dict[str, dict[str, Any]]) -> str:
    """One line per node (by worker address) and a total line, as ``gdev-grid status``."""
    rows: list[tuple[str, ...]] = [("worker", *COLUMNS)]
    for addr, snap in sorted(nodes.items()):
        rows.append((addr, *("-" if snap.get(c) is None else str(snap[c]) for c in COLUMNS)))
    states = [s.get("state") for s in nodes.values()]
    total = sum(s.get("pieces", 0) for s in nodes.values())
    rate = sum(s.get("pieces_per_s", 0.0) for s in nodes.values())
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in rows]
    lines.append(f"nodes {len(nodes)}: {states.count('fully-idle')} fully idle, "
                 f"{states.count('partially-idle')} partially idle, {states.count('busy')} busy; "
                 f"guest pieces {total} ({rate:.2f}/s)")
    return "\n".join(lines)


def status(scheduler: str, as_json: bool) -> str:
    """The summary of the grid whose scheduler is at ``scheduler``."""
    from distributed import Client

    from .plugin import node_snapshot

    with Client(scheduler, timeout=10) as client:  # type: ignore[no-untyped-call]
        nodes = {a: s for a, s in client.run(node_snapshot, on_error="return").items()
                 if isinstance(s, dict)}
    return json.dumps(nodes, indent=1) if as_json else format_table(nodes)


def main(argv: list[str] | None = None) -> None:
    """Command line entry point."""
    p = argparse.ArgumentParser(prog="gdev-grid", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    st = sub.add_parser("status", help="every node's state, mode, transitions and throughput")
    st.add_argument("--scheduler", required=True, help="the Dask scheduler's address")
    st.add_argument("--json", action="store_true", help="the raw records")
    args = p.parse_args(argv)
    sys.stdout.write(status(args.scheduler, args.json) + "\n")


if __name__ == "__main__":
    main()
