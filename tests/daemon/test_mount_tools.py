"""gdev-smi, gmonitor and /proc/gdev/metrics against a real gdevd with a live client: a
process of an unprivileged user that holds a context, device memory and a shared segment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.daemon import promtext

pytestmark = pytest.mark.mount

CLIENT = """
import ctypes, os, sys, libgdev, libgdev.handle  # the client loads lazily: before the drop
ctypes.CDLL(None).prctl(15, b"smi-client", 0, 0, 0)   # PR_SET_NAME: the name to look for
os.setgroups([]); os.setgid({gid}); os.setuid({uid})
h = libgdev.gopen(2)
h.gmalloc(3 << 20)
h.gshmget(4242, 1 << 20, libgdev.GDEV_IPC_CREAT | 0o640)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.fixture(scope="module")
def client(gdevd, unprivileged) -> Iterator[subprocess.Popen]:
    """A live client on vGPU 2 (3 MiB allocated, shm key 4242), ended after the module."""
    uid, gid = unprivileged
    p = subprocess.Popen([sys.executable, "-c", CLIENT.format(uid=uid, gid=gid)],
                         env=gdevd.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        assert p.stdout is not None and p.stdout.readline() == "ready\n", p.stderr
        yield p
    finally:
        p.communicate("", timeout=30)


def _tool(gdevd, module: str, *args: str) -> str:  # type: ignore[no-untyped-def]
    r = subprocess.run([sys.executable, "-m", f"gdevd.tools.{module}", "--mount", gdevd.mount,
                        *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_contexts_name_the_process_and_its_user(gdevd, client, unprivileged) -> None:
    with open(gdevd.proc_path("contexts")) as f:
        head, *rows = (line.split() for line in f.read().splitlines())
    mine = [dict(zip(head, r, strict=True)) for r in rows if r[1] == str(client.pid)]
    assert len(mine) == 1
    assert mine[0]["name"] == "smi-client" and mine[0]["uid"] == str(unprivileged[0])
    assert mine[0]["vgpu"] == "2" and mine[0]["memory"] == str(3 << 20)


def test_smi_shows_devices_processes_and_segments_in_80_columns(gdevd, client) -> None:
    out = _tool(gdevd, "smi")
    assert max(map(len, out.splitlines())) <= 80, out
    assert "scheduler band (of band credit fifo null)" in out
    assert "GPU 0: vGPUs 0,1,2,3  shares: compute 100%  copy 100%  memory 100%" in out
    proc_line = next(line for line in out.splitlines() if line.split()[:1] == [str(client.pid)])
    assert proc_line.split()[1:4] == ["smi-client", "gdevtest", "2"]
    assert "3.0M" in proc_line
    shm_line = next(line for line in out.splitlines() if line.split()[:1] == ["4242"])
    assert shm_line.split()[2:5] == ["gdevtest", "640", "1.0M"]
    vgpu2 = next(line for line in out.splitlines() if line.split()[:2] == ["2", "0"])
    with open(gdevd.proc_path("vd2/memory_size")) as f:  # a quarter of what swap leaves
        size = int(f.read())
    assert f"4.0M/{size / (1 << 20):.1f}M" in vgpu2  # 3 MiB allocated + the 1 MiB segment


def test_smi_json_and_loop(gdevd, client) -> None:
    records = _tool(gdevd, "smi", "--json", "-l", "0.05", "--count", "2")
    first = json.JSONDecoder().raw_decode(records)[0]
    assert records.count('"version"') == 2
    assert first["scheduler"] == "band" and len(first["vgpus"]) == 4
    proc = next(p for p in first["processes"] if p["pid"] == client.pid)
    assert proc["name"] == "smi-client" and proc["memory"] == 3 << 20
    assert first["shm"][0]["key"] == 4242 and first["vgpus"][2]["memory_used"] == 4 << 20


def test_metrics_parse_strictly_and_carry_the_figures(gdevd, client) -> None:
    with open(gdevd.proc_path("metrics")) as f:
        text = f.read()
    fams = promtext.parse(text)
    assert set(promtext.parse(_tool(gdevd, "smi", "--prometheus"))) == set(fams)
    used = fams["gdev_vgpu_memory_used_bytes"]["samples"]
    assert used[(("gpu", "0"), ("vgpu", "2"))] == 4 << 20
    mem = fams["gdev_context_memory_bytes"]["samples"]
    (labels, value), = [(dict(k), v) for k, v in mem.items() if dict(k)["pid"] == str(client.pid)]
    assert value == 3 << 20 and labels["name"] == "smi-client" and labels["vgpu"] == "2"
    assert fams["gdev_vgpu_launches_total"]["type"] == "counter"


def test_gmonitor_fits_80_columns(gdevd, client) -> None:
    out = _tool(gdevd, "gmonitor", "--count", "1")
    assert max(map(len, out.splitlines())) <= 80, out
    assert "smi-client" in out and "scheduler band" in out


def test_smi_without_a_daemon_says_so(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "gdevd.tools.smi", "--mount", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "is gdevd running?" in r.stderr


@pytest.mark.parametrize("bad", [
    "# HELP x_total a\n# TYPE x_total counter\nx_total -1\n",          # counter below zero
    "# HELP x a\n# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",       # series twice
    "# HELP x a\n# TYPE x counter\nx 1\n",                             # counter without _total
    "# TYPE x gauge\nx 1\n",                                           # no HELP
    "# HELP x a\n# TYPE x gauge\nx{a=\"\\t\"} 1\n",                    # bad escape
    "# HELP x a\n# TYPE x gauge\nx 1",                                 # no final newline
    "# HELP x a\n# TYPE x gauge\nx 1\n# HELP y b\n# TYPE y gauge\nx 2\n",  # not contiguous
])
def test_the_parser_is_strict(bad: str) -> None:
    with pytest.raises(ValueError):
        promtext.parse(bad)


def test_gdev_smi_is_a_console_script() -> None:
    bindir = os.path.dirname(sys.executable)
    r = subprocess.run([os.path.join(bindir, "gdev-smi"), "--version"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("gdev-smi ")


def test_a_refused_proc_write_says_why_in_gdevds_log(gdevd) -> None:
    path = gdevd.proc_path("vd3", "compute_bandwidth")
    r = subprocess.run(["bash", "-c", f"echo 60 > {path}"], capture_output=True, text=True)
    assert r.returncode != 0 and "Invalid argument" in r.stderr
    assert "/proc/gdev/vd3/compute_bandwidth: refused b'60\\n': compute_bandwidth: 60% would " \
        "bring gpu0's vGPUs to 135% (> 100%); at most 25% is free" in gdevd.log_text()
    r = subprocess.run(["bash", "-c", f"echo rr > {gdevd.proc_path('scheduler')}"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "unknown scheduler 'rr'; one of band, credit, fifo, null" in gdevd.log_text()
