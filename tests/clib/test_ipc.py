"""CUDA IPC through libcuda.so.1 against a mounted gdevd, plain and under ASan/UBSan:
progs/drv_ipc.c (simpleIPC's shape: fork, the 64-byte memory and event handles through a
pipe, the child writes by kernel behind a stream wait and records the event, the parent's
event query and stream wait see the child's record, the parent frees first and the child's
mapping keeps the memory; CUDA's results for each misuse) and progs/drv_pool_ipc.c
(streamOrderedAllocationIPC's shape: a pool shared by a file descriptor over a Unix socket,
a pointer by its export data, which imports only through its own pool).  Every byte is back
in /proc/gdev when the programs have ended."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import sanitizer_env
from tests.clib.test_libcuda import MADD_PTX, build

pytestmark = pytest.mark.mount

OUT = ("child forged=CUDA_ERROR_INVALID_HANDLE junk=CUDA_ERROR_INVALID_VALUE "
       "flags=CUDA_ERROR_INVALID_VALUE other_context=CUDA_ERROR_ALREADY_MAPPED "
       "data_after_free_wrong=0 reopen_after_free=CUDA_ERROR_INVALID_HANDLE "
       "close_twice=CUDA_ERROR_INVALID_VALUE\n"
       "parent own_mem=CUDA_ERROR_INVALID_CONTEXT own_event=CUDA_ERROR_INVALID_CONTEXT "
       "not_alloc=CUDA_ERROR_INVALID_VALUE timed_interprocess=CUDA_ERROR_INVALID_VALUE "
       "plain_event=CUDA_ERROR_INVALID_VALUE interior_same=1 pending=CUDA_ERROR_NOT_READY "
       "answer_wrong=0 child_exit=0\n")

POOL_OUT = ("child other_pool=CUDA_ERROR_INVALID_VALUE alloc_from_import=CUDA_ERROR_INVALID_VALUE "
            "attr_pool=1 data_wrong=0 free_twice=CUDA_ERROR_INVALID_VALUE\n"
            "parent handle_types=1 plain_export=CUDA_ERROR_INVALID_VALUE "
            "plain_pointer=CUDA_ERROR_INVALID_VALUE self_import=CUDA_ERROR_INVALID_VALUE "
            "answer_wrong=0 child_exit=0\n")


@pytest.fixture(scope="module")
def progs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ipc")


def _all_returned(gdevd) -> bool:
    used = [int(Path(gdevd.proc_path(f"vd{i}", "memory_used")).read_text()) for i in (0, 1)]
    return used == [0, 0] and len(Path(gdevd.proc_path("shm")).read_text().splitlines()) == 1


@pytest.mark.parametrize("sanitized", [False, True], ids=["plain", "asan"])
def test_two_processes_share_memory_and_an_event_by_ipc_handles(gdevd, progs,
                                                                sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = subprocess.run([str(build("drv_ipc", progs, sanitized)), str(MADD_PTX), "1"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.splitlines()) == OUT.splitlines(), res.stdout
    assert _all_returned(gdevd)


@pytest.mark.parametrize("sanitized", [False, True], ids=["plain", "asan"])
def test_two_processes_share_a_memory_pool_and_its_pointer(gdevd, progs,
                                                          sanitized: bool) -> None:
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = subprocess.run([str(build("drv_pool_ipc", progs, sanitized)), "1"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.splitlines()) == POOL_OUT.splitlines(), res.stdout
    assert _all_returned(gdevd)
