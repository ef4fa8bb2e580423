"""gmonitor and gdev-smi fit 80 columns at the largest figures the tree can show, and show
the guests' mode: both render a proc tree written out to a directory."""

from __future__ import annotations

import io
from pathlib import Path

from gdevd.tools import gmonitor, smi
from gdevd.tools.procread import snapshot

VD = {"phys": 0, "compute_bandwidth": 100, "memory_bandwidth": 100, "memory_share": 110,
      "compute_bandwidth_used": 100, "memory_bandwidth_used": 100, "period": 4294967295,
      "memory_size": 1 << 40, "memory_used": 1 << 40, "swapped_bytes": 1 << 40,
      "compute_time_us": 10**15, "memory_time_us": 10**15, "wait_time_us": 10**15,
      "launches": 10**12, "copies": 10**12, "guest": 1}
CONTEXT = ("cid pid vgpu prio memory compute_ms copy_ms launches copies bytes wait_ms "
           "resident swapped swap_out_bytes swap_out swap_in_bytes swap_in uid name\n"
           "99999 4194304 63 40 1099511627776 1e12 1e12 1000000000000 1000000000000 1 1e12 "
           "1 1 1 1 1 1 4294967294 a-very-long-process-name\n")


def _tree(root: Path, guest_mode: str = "gpu0 continuous transitions 12345\n") -> None:
    files = {"scheduler": "[band] credit fifo null\n", "queueing": "mrq\n",
             "util_window_us": "60000000\n", "device_count": "1\n",
             "virtual_device_count": "64\n", "contexts": CONTEXT,
             "guests": "cid guest override\n99999 1 -\n", "guest_mode": guest_mode,
             "shm": "key shmid size uid gid cuid cgid perms nattch resident swapped vgpu\n"
                    "2147483647 2147483647 1099511627776 4294967294 0 0 0 666 99999 "
                    "1099511627776 0 63\n"}
    for name, text in files.items():
        (root / name).write_text(text)
    for minor in range(64):
        (root / f"vd{minor}").mkdir()
        for name, value in VD.items():
            (root / f"vd{minor}" / name).write_text(f"{value}\n")


def test_gmonitor_fits_80_columns_at_the_largest_figures(tmp_path: Path) -> None:
    _tree(tmp_path)
    screen = gmonitor.render(str(tmp_path))
    assert max(map(len, screen.splitlines())) <= 80, screen
    assert not any(line.endswith(">") for line in screen.splitlines()), screen  # nothing cut
    assert "gpu0: vGPUs 0-63," in screen and "guests continuous (12345 transitions)" in screen
    assert screen.splitlines()[-1].split()[4] == "guest"     # the context's class


def test_smi_fits_80_columns_and_shows_the_guest_mode(tmp_path: Path) -> None:
    _tree(tmp_path)
    text = smi.render(snapshot(str(tmp_path)), "/run/gdev")
    assert max(map(len, text.splitlines())) <= 80, text
    assert "  guests continuous (12345 transitions)\n  memory overcommitted by 6940%: swap " \
        "backs it" in text and "GPU 0: vGPUs 0-63  shares:" in text
    assert not any(line.endswith(">") for line in text.splitlines()), text  # nothing cut
    vgpu63 = next(line for line in text.splitlines() if line.split()[:2] == ["63", "0"])
    assert vgpu63.split()[-1] == "guest"


def test_a_tree_without_guest_entries_still_renders(tmp_path: Path) -> None:
    _tree(tmp_path)
    for name in ("guest_mode", "guests"):
        (tmp_path / name).unlink()
    out = io.StringIO()
    gmonitor.monitor(str(tmp_path), 1.0, 1, out)
    assert "guests - (0 transitions)" in out.getvalue()
