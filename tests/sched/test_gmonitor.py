"""gmonitor renders the proc tree of a live system (written out to a directory)."""

from __future__ import annotations

import io
from pathlib import Path

import trio

from gdevd import runtime as rt
from gdevd.tools import gmonitor
from procfs import GLOBAL, PER_VGPU, read_entry

from .sim import client, run


async def _dump(s: rt.GdevSystem, root: Path) -> None:
    """Write every /proc/gdev entry of ``s`` under ``root`` (what a mount would serve)."""
    for e in GLOBAL:
        (root / e.name).write_bytes(read_entry(e, s))
    for v in s.virtual:
        (root / f"vd{v.minor}").mkdir()
        for e in PER_VGPU:
            (root / f"vd{v.minor}" / e.name).write_bytes(read_entry(e, v))


def test_table_shows_utilisation_against_shares(tmp_path: Path) -> None:
    async def body(s: rt.GdevSystem) -> None:
        a = await rt.gopen(s, 2)
        await rt.gopen(s, 2)
        await client(s.scheduler, a, 1e-3, trio.current_time() + 1.5, gap=1e-3)
        await _dump(s, tmp_path)
    run(body)
    out = io.StringIO()
    slept: list[float] = []
    gmonitor.monitor(str(tmp_path), 0.5, 2, out, sleep=slept.append)
    screens = out.getvalue().split("gdev: scheduler band, queueing mrq")
    assert len(screens) == 3 and slept == [0.5]
    rows = {r[0]: r for r in gmonitor.snapshot(str(tmp_path))}
    assert rows["2"][2] == "2" and rows["2"][3] == "50/25%" and rows["0"][3] == "0/25%"
    assert int(rows["2"][7]) > 700 and rows["2"][10] == "0M/4M"


def test_main_reports_a_missing_tree(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert gmonitor.main(["--mount", str(tmp_path), "--count", "1"]) == 1
    assert "gmonitor:" in capsys.readouterr().err
