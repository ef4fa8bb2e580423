"""``make run``: start gdevd on the default emulated GPU and run the main job through it.

The daemon mounts ``MOUNT`` (default ``./mnt``): one physical GPU with 1 GiB and four vGPUs.
Then this process, an ordinary client, opens ``MOUNT/dev/gdev0`` and ``gdev1`` through the
CUDA driver API of ``libgdev`` and runs the paper's micro-benchmarks (MADD and MMUL) on the
emulated GPU, checking every result against numpy and showing what ``/proc/gdev`` reports.
From a terminal the daemon then keeps serving until Ctrl-C, so that the commands printed at
the end can be tried in another terminal; without a terminal (scripts, CI) it stops after the
job.  Either way it unmounts cleanly.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"


def start_daemon(mount: pathlib.Path, log: pathlib.Path) -> subprocess.Popen[bytes]:
    """Start ``gdevd MOUNT --foreground`` and wait until it serves; exit if it dies."""
    mount.mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "gdevd", str(mount), "--foreground", "--log", str(log)]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (mount / "proc" / "gdev" / "device_count").exists():
        if proc.poll() is not None:
            sys.exit(f"gdevd exited with status {proc.returncode} (see above)")
        if time.monotonic() > deadline:
            proc.terminate()
            sys.exit("gdevd did not mount within 60 s")
        time.sleep(0.05)
    return proc


def stop_daemon(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM the daemon (it unmounts) and return its exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def run_matrix_job(cuda, minor: int, ptx: str, kernel: str, n: int) -> float:
    """One paper benchmark on vGPU ``minor``: n x n u32 matrices in, result checked; seconds."""
    ctx = cuda.cuCtxCreate(0, cuda.cuDeviceGet(minor))
    try:
        rng = np.random.default_rng(minor)
        a, b = (rng.integers(0, 1000, (n, n), dtype=np.uint32) for _ in range(2))
        mod = cuda.cuModuleLoad(str(KERNELS / ptx))
        fn = cuda.cuModuleGetFunction(mod, kernel)
        da, db, dc = (cuda.cuMemAlloc(a.nbytes) for _ in range(3))
        t0 = time.perf_counter()
        cuda.cuMemcpyHtoD(da, a)
        cuda.cuMemcpyHtoD(db, b)
        g = (n + 15) // 16
        cuda.cuLaunchKernel(fn, g, g, 1, 16, 16, 1, 0, None, [da, db, dc, n])
        c = np.empty_like(a)
        cuda.cuMemcpyDtoH(c, dc)
        seconds = time.perf_counter() - t0
        want = a + b if kernel == "add" else (a.astype(np.uint64) @ b).astype(np.uint32)
        if not np.array_equal(c, want):
            raise SystemExit(f"{ptx}:{kernel} on vGPU {minor} gave a WRONG result")
        return seconds
    finally:
        cuda.cuCtxDestroy(ctx)


def show_proc(mount: pathlib.Path) -> None:
    """Print Gdev's /proc/gdev view of the machine."""
    proc = mount / "proc" / "gdev"
    read = lambda rel: (proc / rel).read_text().strip()  # noqa: E731
    print(f"  {proc}: device_count {read('device_count')}, "
          f"virtual_device_count {read('virtual_device_count')}")
    for vd in sorted(p.name for p in proc.glob("vd*")):
        print(f"    {vd}: memory_share {read(vd + '/memory_share')}%, memory_size "
              f"{int(read(vd + '/memory_size')) >> 20} MiB, compute_bandwidth "
              f"{read(vd + '/compute_bandwidth')}%")


def main_job(mount: pathlib.Path) -> None:
    """The paper's MADD and MMUL through the daemon on two vGPUs, checked against numpy."""
    os.environ["GDEV_MOUNT"] = str(mount)
    from libgdev import cuda

    cuda.cuInit(0)
    print(f"  {cuda.cuDeviceGetCount()} CUDA devices (Gdev's vGPUs); device 0: "
          f"{cuda.cuDeviceGetName(0)}, {cuda.cuDeviceTotalMem(0) >> 20} MiB")
    for minor, ptx, kernel, n in ((0, "madd.ptx", "add", 1024), (1, "mmul.ptx", "multiply", 256)):
        secs = run_matrix_job(cuda, minor, ptx, kernel, n)
        print(f"  vGPU {minor}: {kernel} of {n}x{n} u32 matrices correct, {secs * 1e3:.0f} ms "
              f"with copies")


def hints(mount: pathlib.Path) -> None:
    """What to try in another terminal while the daemon serves."""
    py = ROOT / ".venv" / "bin" / "python"
    print("In another terminal, try:")
    print(f"  ls -l {mount}/dev; cat {mount}/proc/gdev/vd0/memory_size")
    print(f"  echo 10 > {mount}/proc/gdev/vd1/compute_bandwidth   # shares total <= 100 %,")
    print(f"  echo 40 > {mount}/proc/gdev/vd0/compute_bandwidth   # so lower one, then raise")
    print(f"  {ROOT / '.venv' / 'bin' / 'gdev-smi'} --mount {mount}   # GPUs, vGPUs, processes")
    print(f"  GDEV_MOUNT={mount} {py} -c 'import libgdev; h = libgdev.gopen(0); "
          f"print(hex(h.gmalloc(1 << 20)))'")
    print(f"  {py} scripts/demo_inprocess.py   # the Gdev API in-process, no daemon")


def main() -> int:
    """Start the daemon, run the job, serve until Ctrl-C when interactive, unmount."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mount", default=str(ROOT / "mnt"))
    ap.add_argument("--serve", choices=("auto", "yes", "no"), default="auto",
                    help="keep serving after the job (auto: when stdin is a terminal)")
    args = ap.parse_args()
    mount = pathlib.Path(args.mount).resolve()
    log = ROOT / "build" / "gdevd-run.log"
    log.parent.mkdir(exist_ok=True)
    print(f"gdev-py: starting gdevd on {mount} (log: {log})")
    daemon = start_daemon(mount, log)
    try:
        show_proc(mount)
        main_job(mount)
        serve = args.serve == "yes" or (args.serve == "auto" and sys.stdin.isatty())
        if serve:
            hints(mount)
            print("gdevd serves until Ctrl-C.")
            daemon.wait()
    except KeyboardInterrupt:
        print()
    finally:
        status = stop_daemon(daemon)
    print(f"gdev-py: gdevd unmounted {mount} (exit status {status})")
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
