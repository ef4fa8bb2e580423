"""Runtime calls of CUDA's samples beyond the basics (progs/rt_more_api.cu): PCI addresses,
device choice, peer access and copies between vGPUs, kernels by host stub, bank
configuration, driver entry points, stream attributes, the capture mode, memory pools,
channel descriptors and pinned memory's flags; each with the errors CUDA documents, plain
and on the ASan/UBSan build of the libraries."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import PROGS
from tests.clib.runner import asan_env, build_cuda, build_rt_program, gdev_run

EXPECTED = (
    # device N on PCI bus N + 1 (of 4 vGPUs): ids, the short form, truncation to the length
    "pci id=0000:01:00.0 by_id=0 short=0000:04 last=3 by_short=0 prop_bus=4 attr_bus=4 "
    "bad=cudaErrorInvalidValue none=cudaErrorInvalidDevice bad_dev=cudaErrorInvalidDevice "
    "chosen=0 choose_null=cudaErrorInvalidValue\n"
    # each vGPU its own address space: no peer access, none to disable
    "peer enable=cudaErrorPeerAccessUnsupported self=cudaErrorInvalidDevice "
    "flags=cudaErrorInvalidValue disable=cudaErrorPeerAccessNotEnabled "
    "nodev=cudaErrorInvalidDevice p2p=0 p2p_same=cudaErrorInvalidDevice\n"
    # peer copies: on one device, and across devices through the host
    "peer_copy same=1 across=1 device_after=0 bad=cudaErrorInvalidDevice\n"
    "funcs name=_Z4axpbPiiii not_kernel=cudaErrorInvalidDeviceFunction handle=1 "
    "kernel=1,cudaErrorInvalidDeviceFunction "
    "param1=8,4 past=cudaErrorInvalidValue bank=1 bad_bank=cudaErrorInvalidValue entry=0,0 "
    "missing=cudaErrorSymbolNotFound,1\n"
    "stream_attr too_big=cudaErrorInvalidValue priority=cudaErrorNotSupported ratio=0.6 "
    "policy=3 mode=0,2\n"
    # 1 MiB + 2 MiB from the default pool, freed; a created pool made current
    "pools current=1 threshold=1 used=3145728 after=0 high=3145728 reset=0 "
    "bad_high=cudaErrorInvalidValue read_only=cudaErrorInvalidValue mine=4096 "
    "wrong_dev=cudaErrorInvalidDevice access=3,0 destroy_default=cudaErrorInvalidValue "
    "shareable=cudaErrorNotSupported\n"
    # a 2D array by cudaMalloc3DArray: element (2,1) is 12, (5,1) 15, (5,2) 25; two slices
    # of it are past its one; a 3D array is made; a layered one needs layers
    "array3d part=12,15,25 extent=8,4,0 two_slices=cudaErrorInvalidValue "
    "deep=cudaSuccess layered=cudaErrorInvalidValue\n"
    "misc channel=32,0,2 null=cudaErrorInvalidValue host_flags=2 "
    "not_pinned=cudaErrorInvalidValue\n")


# rt_newer_api.cu: 20 floats from (3,1) of one 16x4 array to (5,2) of another, crossing a
# row; a 3D memset seen after a 3D peer copy on one device and across two; 64 KiB of shared
# memory per multiprocessor less the kernel's 1 KiB, for one block and for two; the first of
# the valid devices taken; limits, pools by location, two batched copies (1+4, 5+8);
# portable pinned memory of device 0 used and freed on the last device
NEWER = ("arrays to_array=1 direction=cudaErrorInvalidMemcpyDirection\n"
         "memset3d same=1 across=1\n"
         "misc smem=64512,31744 valid=3 dup=cudaErrorInvalidValue bad=cudaErrorInvalidDevice "
         "tex1d=134217728 pool_set=1 batch=5,13 bad_idx=cudaErrorInvalidValue\n"
         "portable same=1\n"
         "rt_newer_api ok\n")


@pytest.fixture(scope="module")
def rt_more_api(tmp_path_factory) -> Path:
    return build_rt_program("rt_more_api", tmp_path_factory.mktemp("rtcalls"))


def test_runtime_calls_answer_as_cuda_does(gdevd, rt_more_api) -> None:
    assert gdev_run(gdevd.mount, rt_more_api) == EXPECTED


def test_per_thread_default_stream_build_binds_the_ptds_names(gdevd, tmp_path) -> None:
    """nvcc --default-stream per-thread binds the runtime's _ptds/_ptsz names (cudaMemcpy_ptds,
    cudaLaunchKernel_ptsz ...): the same program answers the same."""
    prog = build_cuda(PROGS / "rt_more_api.cu", tmp_path / "rt_more_api_pt",
                      flags=("--default-stream", "per-thread"))
    syms = subprocess.run(["nm", "-D", "--undefined-only", str(prog)], capture_output=True,
                          text=True, check=True).stdout
    assert "_ptds@libcudart.so.13" in syms and "_ptsz@libcudart.so.13" in syms, syms
    assert gdev_run(gdevd.mount, prog) == EXPECTED


def test_runtime_calls_under_asan_ubsan(gdevd, rt_more_api) -> None:
    assert gdev_run(gdevd.mount, rt_more_api, asan_env()) == EXPECTED


def test_newer_runtime_calls(gdevd, tmp_path_factory) -> None:
    prog = build_rt_program("rt_newer_api", tmp_path_factory.mktemp("rtnewer"))
    assert gdev_run(gdevd.mount, prog) == NEWER
    assert gdev_run(gdevd.mount, prog, asan_env()) == NEWER


def test_the_runtime_works_in_a_context_the_driver_made_current(gdevd, tmp_path) -> None:
    """simpleDrvRuntime's mix: the runtime's allocations and launches in the driver's current
    context (256 bytes found there by cuMemGetAddressRange, device 1, the kernel's values),
    then the primary context once it is popped, and device 0's after cudaSetDevice."""
    prog = build_cuda(PROGS / "rt_driver_ctx.cu", tmp_path / "rt_driver_ctx", driver=True)
    assert gdev_run(gdevd.mount, prog) == (
        "driver_ctx size=256 dev=1 values=1 same=1 primary=1 set=1\n")
