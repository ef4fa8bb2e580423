"""nvcc-built programs (runtime API, -cudart shared) run unchanged on gdevd through
scripts/gdev-run and gdev-py's libcudart.so.13."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import ROOT, clib_dir, sanitizer_env
from tests.clib.runner import build_cuda, build_rt_program, gdev_run, need_cuda_h, nvcc

GDEV_RUN = ROOT / "scripts" / "gdev-run"


def _build(tmp_path_factory, name: str) -> Path:
    return build_rt_program(name, tmp_path_factory.mktemp("rt"))


@pytest.fixture(scope="module")
def rt_features(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_features")


@pytest.fixture(scope="module")
def rt_managed(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_managed")


def test_binary_links_gdev_py_runtime_by_version(rt_features) -> None:
    syms = subprocess.run(["nm", "-D", str(rt_features)], capture_output=True, text=True).stdout
    assert "__cudaRegisterFatBinary@libcudart.so.13" in syms
    ours = subprocess.run(["nm", "-D", "--defined-only", str(clib_dir() / "libcudart.so.13")],
                          capture_output=True, text=True).stdout
    for line in syms.splitlines():
        if "@libcudart.so.13" in line:
            name = line.split()[-1].split("@")[0]
            assert f" {name}@@libcudart.so.13" in ours, name


def test_runtime_features_through_gdev_run(gdevd, rt_features) -> None:
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(rt_features)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "more ok dev=1 host=1 hostfn=1 stack=4096 blocks=4 peer=0 ptx=75 bin=75\n" in out, out
    # static shared memory and the dynamic bound (64 KiB less the static), set and said back
    assert "attrs shared=1024 dyn=64512 carveout=-1 set=8192 too_big=cudaErrorInvalidValue " \
           "carveout=50\n" in out, out
    assert "\nrt_features ok device=3/4 name=Gdev Emulated GPU cc=7.5" in out, out
    for want in ("hits=10000", "bad_launch=cudaErrorInvalidConfiguration", "after=cudaSuccess",
                 "oom=cudaErrorMemoryAllocation", "version=13000"):
        assert want in out, out


def test_managed_memory_one_pointer_for_host_and_kernels(gdevd, rt_managed) -> None:
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(rt_managed)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "managed_props prop=1 attr=1 concurrent=0\n" in res.stdout, res.stdout
    assert "managed_vars counter=9,102 vals=2,8,8\n" in res.stdout, res.stdout
    assert ("managed_addresses flag=0 hits=74,148 unified=1 after_reset=74,148\n"
            in res.stdout), res.stdout
    assert ("rt_managed ok bad=0 managed=1 copied=1 not_managed=cudaErrorInvalidValue "
            "attach_dev=cudaErrorInvalidValue bad_flags=cudaErrorInvalidValue "
            "too_big=cudaErrorMemoryAllocation "
            "twice=cudaErrorInvalidValue\n") in res.stdout, res.stdout


def test_pinned_memory_is_one_pointer_for_host_and_kernels(gdevd, tmp_path_factory) -> None:
    """cudaMallocHost's pointer goes straight into kernels (unified addressing), is its own
    device pointer, and a kernel spinning on a pinned flag sees the host set it."""
    out = gdev_run(gdevd.mount, _build(tmp_path_factory, "rt_uva"))
    assert ("rt_uva ok wrong=0 same=1 attrs=1 held=cudaErrorNotReady before=0 after=1\n"
            in out), out


def test_another_devices_streams_and_events_work_as_cuda_says(gdevd, tmp_path_factory) -> None:
    """With device 0 current: a launch into device 1's stream fails, a copy into it runs there,
    an event records into a stream of its own device, waits and syncs reach device 1."""
    out = gdev_run(gdevd.mount, _build(tmp_path_factory, "rt_multidev"))
    assert ("rt_multidev ok launch=cudaErrorInvalidResourceHandle copied=41 "
            "wrong_pair=cudaErrorInvalidResourceHandle waited=7 synced=9\n") in out, out


@pytest.fixture(scope="module")
def rt_printf(tmp_path_factory) -> Path:
    return _build(tmp_path_factory, "rt_printf")


def test_device_printf_comes_out_in_its_place_among_the_hosts_lines(gdevd, rt_printf) -> None:
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(rt_printf)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == (
        "host: before\n"
        "hello gdev from block 0 thread 0: 0.000    ff|0  |\n"
        "hello gdev from block 0 thread 1: 1.500    ff|-1 |\n"
        "hello gdev from block 1 thread 0: 0.000   100|0  |\n"
        "hello gdev from block 1 thread 1: 1.500   100|-1 |\n"
        "host: between\n"
        "lane 1 of 2\n"
        "host: returns -1 2\n"
        "hello gdev from block 0 thread 0: 0.000    ff|0  |\n"
        "host: done\n"), res.stdout


def test_launch_kernel_ex_takes_hints_runs_cooperative_and_refuses_clusters(gdevd,
                                                                          tmp_path_factory):
    prog = _build(tmp_path_factory, "rt_launch_ex")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("launch_ex hints=cudaSuccess h0=7 h63=7 coop=cudaSuccess c63=8 "
                          "cluster=cudaErrorNotSupported unknown=cudaErrorInvalidValue\n")


def test_graphs_by_stream_capture_replay_what_was_captured(gdevd, tmp_path_factory) -> None:
    prog = _build(tmp_path_factory, "rt_graph")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == (
        "graph legacy=cudaErrorStreamCaptureUnsupported status=0,1 end=cudaSuccess nodes=4 "
        "pending=-1 totals=1000,0,1000 v0=13 sync=cudaErrorStreamCaptureUnsupported "
        "invalid=cudaErrorStreamCaptureInvalidated\n"), res.stdout


def test_3d_pitched_memory_copies_memsets_and_kernels(gdevd, tmp_path_factory) -> None:
    prog = _build(tmp_path_factory, "rt_3d")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "3d pitch=256 copy=cudaSuccess,cudaSuccess bad=0\n", res.stdout


def test_gdev_run_names_a_missing_mount(rt_features, tmp_path) -> None:
    res = subprocess.run([str(GDEV_RUN), "--mount", str(tmp_path), str(rt_features)],
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert f"{tmp_path}/dev/gdev0 does not exist" in res.stderr


def test_readme_example_runs_as_shown(gdevd, tmp_path) -> None:
    need_cuda_h()
    clib_dir()
    readme = (ROOT / "README.md").read_text()
    src = readme.split("```cuda\n", 1)[1].split("```", 1)[0]
    shown = readme.split("scripts/gdev-run --mount mnt ./vadd", 1)[1].split("\n")[1]
    (tmp_path / "vadd.cu").write_text(src)
    subprocess.run([nvcc(), "-cudart", "shared", "-gencode", "arch=compute_75,code=compute_75",
                    "-o", str(tmp_path / "vadd"), str(tmp_path / "vadd.cu")], check=True,
                   capture_output=True)
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(tmp_path / "vadd")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == shown.strip()


FAULTING = r"""#include <cstdio>
__global__ void store_at(int *p) { p[threadIdx.x] = 1; }
int main() {
    store_at<<<1, 32>>>((int *)0x10);
    cudaError_t a = cudaDeviceSynchronize(), b = cudaDeviceSynchronize();
    printf("%s %s\n", cudaGetErrorName(a), cudaGetErrorName(b));
}
"""


def test_a_kernel_fault_names_kernel_address_and_line_on_stderr(gdevd, tmp_path) -> None:
    """An unmodified program prints only "an illegal memory access": libcuda.so.1 says once,
    for the context the fault poisons, which kernel faulted, at which address, on which PTX
    line (the daemon's words, without its verb and errno)."""
    (tmp_path / "f.cu").write_text(FAULTING)
    prog = build_cuda(tmp_path / "f.cu", tmp_path / "f")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.stdout == "cudaErrorIllegalAddress cudaErrorIllegalAddress\n", res.stdout
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and re.fullmatch(
        r"gdev: illegal address 0x10 \(unmapped\) in _Z8store_atPi at line \d+", lines[0]), lines


def test_runtime_under_asan_ubsan(gdevd, rt_features) -> None:
    """The same program on the ASan/UBSan build of the libraries (the sanitizer runtimes
    preloaded, since nvcc's program is not instrumented)."""
    preload = " ".join(subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True,
                                      text=True, check=True).stdout.strip()
                       for lib in ("libasan.so", "libubsan.so"))
    env = sanitizer_env({**os.environ, "GDEV_CLIB_DIR": str(clib_dir(sanitized=True)),
                         "LD_PRELOAD": preload})
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(rt_features)], env=env,
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "more ok dev=1 host=1 hostfn=1" in res.stdout


def test_a_failed_device_assert_is_printed_and_poisons_the_context(gdevd, tmp_path_factory):
    prog = _build(tmp_path_factory, "rt_assert")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("ok=cudaSuccess sync=cudaErrorAssert (device-side assert triggered)\n"
                          "again launch=cudaErrorAssert sync=cudaErrorAssert\n"), res.stdout
    # the first failing thread (block 1, thread 28: gtid 60), once, as CUDA prints it
    assert res.stderr.count("Assertion `gtid < n` failed.") == 1, res.stderr
    assert "rt_assert.cu:10: void checked(int): block: [1,0,0], thread: [28,0,0] " \
           "Assertion `gtid < n` failed." in res.stderr, res.stderr
