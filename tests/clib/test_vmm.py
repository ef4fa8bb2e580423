"""CUDA's virtual memory management through libcuda.so.1 against a mounted gdevd, plain and
under ASan/UBSan: progs/drv_vmm.c (vectorAddMMAP's shape: one VA range backed by two
allocations, a vector straddling them, release while mapped, CUDA's results for bad
arguments, a store into the unmapped rest faulting) and progs/drv_vmm_ipc.c (memMapIPCDrv's:
two processes sharing an allocation through a POSIX file descriptor passed over a Unix
socket).  Every byte is back in /proc/gdev when the programs have ended."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import sanitizer_env
from tests.clib.test_libcuda import MADD_PTX, build

pytestmark = pytest.mark.mount

VMM_OUT = (
    "vmm supported=1 granularity=4096/2097152 access=3 range_ok=1 procs=1\n"
    "vector add over two allocations: wrong=0 retained=1\n"
    "other device's allocation mapped here: ok\n"
    "refused create_size=CUDA_ERROR_INVALID_VALUE map_handle=CUDA_ERROR_INVALID_VALUE "
    "map_released=CUDA_ERROR_INVALID_VALUE free_mapped=CUDA_ERROR_INVALID_VALUE "
    "device=CUDA_ERROR_INVALID_DEVICE share=CUDA_ERROR_OUT_OF_MEMORY "
    "copy_unmapped=CUDA_ERROR_INVALID_VALUE\n"
    "unmapped store=CUDA_ERROR_ILLEGAL_ADDRESS sticky=CUDA_ERROR_ILLEGAL_ADDRESS\n")
IPC_OUT = ("child wrong=0 reimport_after_release=CUDA_ERROR_INVALID_VALUE still_mapped=1 "
           "unmap_after_destroy=CUDA_SUCCESS free_after_destroy=CUDA_SUCCESS\n"
           "parent granularity=4096 child_answer_wrong=0 child_exit=0\n")


@pytest.fixture(scope="module")
def progs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vmm")


def _run(exe: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _all_returned(gdevd) -> bool:
    used = [int(Path(gdevd.proc_path(f"vd{i}", "memory_used")).read_text()) for i in (0, 1)]
    return used == [0, 0] and len(Path(gdevd.proc_path("shm")).read_text().splitlines()) == 1


@pytest.mark.parametrize("sanitized", [False, True], ids=["plain", "asan"])
def test_vector_add_over_a_range_of_two_allocations(gdevd, progs, sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = _run(build("drv_vmm", progs, sanitized), str(MADD_PTX), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == VMM_OUT, res.stdout
    assert _all_returned(gdevd)


@pytest.mark.parametrize("sanitized", [False, True], ids=["plain", "asan"])
def test_two_processes_share_an_allocation_through_a_file_descriptor(gdevd, progs,
                                                                     sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = _run(build("drv_vmm_ipc", progs, sanitized), str(MADD_PTX), "1", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.splitlines()) == IPC_OUT.splitlines(), res.stdout
    assert _all_returned(gdevd)
