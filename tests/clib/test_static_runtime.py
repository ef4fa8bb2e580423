"""Programs built by nvcc's default, which links NVIDIA's static runtime
(libcudart_static.a) into the program, run unchanged on gdevd over gdev-py's libcuda.so.1:
the driver's private tables the runtime asks for (cuGetExportTable), its integrity check,
context-local storage, primary contexts whose handles outlive a reset, and __managed__
variables in module data the host maps (export.c, integrity.c, cls.c, context.c,
library.c).  The kernels of kernels/ run this way in test_kernels.py ("rt-static")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import ROOT
from tests.clib.runner import PROGS, build_cuda

GDEV_RUN = ROOT / "scripts" / "gdev-run"

EXPECTED = """devices=4 name=Gdev Emulated GPU cc=7.5 driver=13000 runtime_ok=1
axpy n=1000 bad=0 y[999]=1999
stream scaled=10,20,30,40 elapsed_ok=1
shared max_dyn=60000 out=63,0
kernel says 40
kernel says 41
bad_free=cudaErrorInvalidValue then=cudaErrorInvalidValue
axpy n=300 bad=0 y[299]=-298
axpy n=10 bad=0 y[9]=28
kernel says 7
last device=3
"""


@pytest.fixture(scope="module")
def rt_static(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("static")
    return build_cuda(PROGS / "rt_static.cu", out / "rt_static", flags=(f"-I{PROGS}",),
                      cudart="static")


def test_binary_carries_nvidias_runtime_and_needs_no_libcudart(rt_static) -> None:
    syms = subprocess.run(["nm", "-D", str(rt_static)], capture_output=True, text=True).stdout
    assert "libcudart.so" not in syms and "__cudaRegisterFatBinary" not in syms
    needed = subprocess.run(["readelf", "-d", str(rt_static)], capture_output=True,
                            text=True).stdout
    assert "libcudart" not in needed, needed


def test_static_runtime_program_runs_unchanged(gdevd, rt_static) -> None:
    """Device queries, copies, kernels, streams and events, a constant symbol, a function
    attribute said back, device printf, a failed call that cudaGetLastError reports once and
    that poisons nothing, a device reset followed by more work, another device."""
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(rt_static)],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == EXPECTED, res.stdout
    assert res.stderr == "", res.stderr


MANAGED = r"""#include <cstdio>
__managed__ int counter;
__global__ void bump() { atomicAdd(&counter, 1); }
int main() { counter = 1; bump<<<1, 4>>>(); cudaDeviceSynchronize(); printf("%d\n", counter); }
"""


def test_a_managed_variable_is_one_copy_for_host_and_kernels(gdevd, tmp_path) -> None:
    """NVIDIA's runtime sets the host's pointer of a __managed__ variable from
    cuLibraryGetManaged, before any context is current: the module's data segment is pinned
    memory mapped at its GPU address, so what the host writes the kernels add to."""
    (tmp_path / "m.cu").write_text(MANAGED)
    prog = build_cuda(tmp_path / "m.cu", tmp_path / "m", cudart="static")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert (res.returncode, res.stdout, res.stderr) == (0, "5\n", ""), res


def test_managed_variables_and_memory_as_with_gdev_pys_runtime(gdevd, tmp_path) -> None:
    """progs/rt_managed.cu says the same under NVIDIA's runtime as under ours
    (test_libcudart.py): managed variables written by name and through their address,
    what a device reset leaves on the host, managed allocations and their refusals."""
    prog = build_cuda(PROGS / "rt_managed.cu", tmp_path / "rt_managed", cudart="static")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines()[1:3] == [
        "managed_vars counter=9,102 vals=2,8,8",
        "managed_addresses flag=0 hits=74,148 unified=1 after_reset=74,148"], res.stdout
    assert res.stdout.splitlines()[3].startswith("rt_managed ok bad=0 managed=1 copied=1 "), \
        res.stdout


CAPTURE = r"""#include <cstdio>
__global__ void k(int *p) { p[threadIdx.x] += 1; }
int main() {
    int *d, h[32];
    cudaStream_t s;
    cudaMalloc(&d, sizeof h);
    cudaMemset(d, 0, sizeof h);
    cudaStreamCreate(&s);
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    cudaError_t e = cudaStreamIsCapturing(s, &st);
    cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
    cudaError_t x = cudaThreadExchangeStreamCaptureMode(&m);
    printf("capturing=%s,%d exchange=%s,%d", cudaGetErrorName(e), (int)st,
           cudaGetErrorName(x), (int)m);
    e = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaGraph_t g;
    printf(" begin=%s create=%s", cudaGetErrorName(e), cudaGetErrorName(cudaGraphCreate(&g, 0)));
    k<<<1, 32, 0, s>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf(" then=%d\n", h[5]);
}
"""


def test_stream_capture_queries_answer_and_graphs_say_where_they_are(gdevd, tmp_path) -> None:
    """No stream of libcuda is ever capturing (libraries ask before their work); beginning a
    capture or making a graph under NVIDIA's runtime fails with the build that has them, once
    on stderr, and the program goes on."""
    (tmp_path / "c.cu").write_text(CAPTURE)
    prog = build_cuda(tmp_path / "c.cu", tmp_path / "c", cudart="static")
    res = subprocess.run([str(GDEV_RUN), "--mount", gdevd.mount, str(prog)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("capturing=cudaSuccess,0 exchange=cudaSuccess,0 "
                          "begin=cudaErrorNotSupported create=cudaErrorNotSupported then=1\n")
    assert res.stderr.count("rebuild the program with nvcc -cudart shared") == 1, res.stderr
