"""The ioctl path's costs, in one run: ``python scripts/bench/ioctl.py``.

Starts its own gdevd (1 GPU, 1 GiB, one vGPU holding all of it) on a temporary mount and
prints: the latency of a small call (gquery: median and p99) and calls per second with 1, 2
and 4 client processes; 256 MiB pageable HtoD and DtoH through the daemon; the pinned path
next to the same copy in-process (``gdevd.gdev``); the time to open and close a device; and a
compute-bound kernel through the daemon vs in-process when a PTX executor is installed.
The results replace the ioctl section of docs/benchmarks.md (``--no-write`` to skip).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

import libgdev

MiB = 1 << 20
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "benchmarks.md")
BEGIN, END = "<!-- BEGIN ioctl.py -->", "<!-- END ioctl.py -->"


def start_daemon(base: str) -> subprocess.Popen:
    """gdevd on base/mnt, waited for."""
    mount = os.path.join(base, "mnt")
    os.mkdir(mount)
    proc = subprocess.Popen([sys.executable, "-m", "gdevd", mount, "--foreground",
                             "--memory", "1G", "--vgpus", "1"], stderr=subprocess.DEVNULL)
    while not os.path.exists(os.path.join(mount, "proc", "gdev", "device_count")):
        if proc.poll() is not None:
            raise SystemExit("gdevd did not start")
        time.sleep(0.02)
    os.environ["GDEV_MOUNT"] = mount
    return proc


def latency(n: int) -> tuple[float, float]:
    """(median, p99) microseconds of gquery."""
    with libgdev.gopen(0) as h:
        for _ in range(500):
            h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE)
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE)
            ts.append(time.perf_counter() - t)
    ts.sort()
    return statistics.median(ts) * 1e6, ts[int(len(ts) * 0.99)] * 1e6


def worker(start: float, seconds: float) -> None:
    """Child mode: gquery in a loop from ``start`` for ``seconds``; print the count."""
    with libgdev.gopen(0) as h:
        while time.time() < start:
            time.sleep(0.001)
        n, end = 0, start + seconds
        while time.time() < end:
            h.gquery(libgdev.GDEV_QUERY_DEVICE_MEM_SIZE)
            n += 1
    print(n)


def calls_per_second(clients: int, seconds: float = 1.5) -> float:
    """Total gquery calls per second of ``clients`` processes at once."""
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(start), str(seconds)],
                              stdout=subprocess.PIPE, text=True) for _ in range(clients)]
    return sum(int(p.communicate()[0]) for p in procs) / seconds


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bulk(size: int) -> dict[str, float]:
    """GB/s of pageable and pinned copies through the daemon."""
    out = {}
    host = np.random.default_rng(0).integers(0, 255, size, dtype=np.uint8)
    back = np.empty_like(host)
    with libgdev.gopen(0) as h:
        dev = h.gmalloc(size)
        out["pageable HtoD"] = size / _best(lambda: h.gmemcpy_to_device(dev, host)) / 1e9
        out["pageable DtoH"] = size / _best(lambda: h.gmemcpy_from_device(back, dev)) / 1e9
        assert (host == back).all()
        pin = h.gmalloc_dma(size)
        pin.array[:] = host
        out["pinned HtoD"] = size / _best(lambda: h.gmemcpy_to_device(dev, pin.array)) / 1e9
        out["pinned DtoH"] = size / _best(lambda: h.gmemcpy_from_device(pin.array, dev)) / 1e9
    return out


def in_process_pinned(size: int) -> dict[str, float]:
    """GB/s of the same pinned copies in-process (the runtime's facade, no daemon)."""
    from gdevd import gdev

    gdev.boot(gdev.GdevConfig(memory=1 << 30, vgpus=1))
    try:
        with gdev.gopen(0) as h:
            dev = gdev.gmalloc(h, size)
            pin = gdev.gmalloc_dma(h, size)
            pin.array[:] = 1
            htod = _best(lambda: gdev.gmemcpy_to_device(h, dev, pin.array, size))
            dtoh = _best(lambda: gdev.gmemcpy_from_device(h, pin.array, dev, size))
    finally:
        gdev.shutdown()
    return {"in-process pinned HtoD": size / htod / 1e9,
            "in-process pinned DtoH": size / dtoh / 1e9}


def open_close(n: int = 200) -> float:
    """Median microseconds of gopen + gclose (open file, HELLO, close)."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        libgdev.gopen(0).gclose()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


SPIN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "daemon", "data",
                    "spin.ptx")
SPIN_ITERS, SPIN_GRID, SPIN_BLOCK = 200_000, 4, 64


def _spin_params(out: int) -> bytes:
    return struct.pack("<QI4x", out, SPIN_ITERS)


def compute_daemon() -> float:
    """Seconds of one compute-bound spin launch + gsync through the daemon (best of 3)."""
    code = open(SPIN, "rb").read()
    with libgdev.gopen(0) as h:
        caddr = h.gmalloc(len(code))
        h.gmemcpy_to_device(caddr, code)
        out = h.gmalloc(4 * SPIN_GRID * SPIN_BLOCK)
        k = libgdev.GdevKernel(caddr, len(code), "spin", grid=(SPIN_GRID, 1, 1),
                               block=(SPIN_BLOCK, 1, 1), params=_spin_params(out))
        h.gsync(h.glaunch(k))  # decode once
        return _best(lambda: h.gsync(h.glaunch(k)))


def compute_in_process() -> float:
    """The same launch through the in-process facade."""
    from gdevd import gdev

    code = open(SPIN, "rb").read()
    gdev.boot(gdev.GdevConfig(memory=64 << 20, vgpus=1))
    try:
        with gdev.gopen(0) as h:
            caddr = gdev.gmalloc(h, len(code))
            gdev.gmemcpy_to_device(h, caddr, code, len(code))
            out = gdev.gmalloc(h, 4 * SPIN_GRID * SPIN_BLOCK)
            k = gdev.GdevKernel(caddr, len(code), "spin", grid=(SPIN_GRID, 1, 1),
                                block=(SPIN_BLOCK, 1, 1), params=_spin_params(out))
            gdev.gsync(h, gdev.glaunch(h, k))
            return _best(lambda: gdev.gsync(h, gdev.glaunch(h, k)))
    finally:
        gdev.shutdown()


def report(args: argparse.Namespace) -> str:
    """Run everything; the Markdown section."""
    lines = [f"Command: `{' '.join(['python', 'scripts/bench/ioctl.py', *sys.argv[1:]])}` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
             f"load average {os.getloadavg()[0]:.2f} at start)", ""]
    med, p99 = latency(args.calls)
    lines.append(f"- gquery latency: median {med:.1f} us, p99 {p99:.1f} us "
                 "(target: median <= 60 us)")
    for k in (1, 2, 4):
        lines.append(f"- gquery calls/s with {k} client process(es): {calls_per_second(k):,.0f}")
    size = args.size * MiB
    rates = {**bulk(size), **in_process_pinned(size)}
    for name, v in rates.items():
        lines.append(f"- {args.size} MiB {name}: {v:.2f} GB/s")
    for d in ("HtoD", "DtoH"):
        ratio = rates[f"pinned {d}"] / rates[f"in-process pinned {d}"]
        lines.append(f"- pinned {d} through the daemon / in-process: {ratio:.2f}x (target >= 0.8x)")
    lines.append(f"- open + HELLO + close of /dev/gdev0: median {open_close():.0f} us")
    daemon, local = compute_daemon(), compute_in_process()
    lines.append(f"- compute-bound kernel (spin.ptx, {SPIN_GRID}x{SPIN_BLOCK} threads, "
                 f"{SPIN_ITERS} iterations): {daemon * 1e3:.1f} ms through the daemon, "
                 f"{local * 1e3:.1f} ms in-process: {100 * (daemon / local - 1):+.1f}% "
                 "(target <= +5%)")
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    """Replace (or append) this script's section of docs/benchmarks.md."""
    section = f"{BEGIN}\n## ioctl path (scripts/bench/ioctl.py)\n\n{text}{END}\n"
    old = open(DOC).read() if os.path.exists(DOC) else "# Benchmarks\n\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + section + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + section
    with open(DOC, "w") as f:
        f.write(new)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(float(sys.argv[2]), float(sys.argv[3]))
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=256, help="MiB per bulk copy (default 256)")
    p.add_argument("--calls", type=int, default=5000, help="calls for the latency figure")
    p.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = p.parse_args()
    base = tempfile.mkdtemp(prefix="gdevd-bench-")
    proc = start_daemon(base)
    try:
        text = report(args)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(base, ignore_errors=True)
    print(text, end="")
    if not args.no_write:
        write_section(text)


if __name__ == "__main__":
    main()
