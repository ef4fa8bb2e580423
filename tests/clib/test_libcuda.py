"""libcuda.so.1 against a mounted gdevd: madd through cuda.h from PTX whatever the file is
called and from nvcc fatbinaries (compressed or not; machine code only is refused with the
flag to use), under ASan/UBSan too; CUDA's error results with their reasons; two programs on
two vGPUs, their shares in /proc/gdev."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.clib.cbuild import PROGS, ROOT, clib_dir, compile_program, sanitizer_env
from tests.clib.runner import CUDA_HOME, need_cuda_h, nvcc

MADD_PTX = ROOT / "kernels" / "madd.ptx"


def build(name: str, out: Path, sanitized: bool = False) -> Path:
    """progs/<name>.c linked with libcuda.so.1 (ASan/UBSan-built if ``sanitized``)."""
    need_cuda_h()
    libs = clib_dir(sanitized)
    return compile_program(PROGS / f"{name}.c", out / (name + "-asan" * sanitized), None,
                           f"-I{CUDA_HOME / 'include'}", f"-L{libs}", "-lcuda",
                           f"-Wl,-rpath,{libs}", "-Wno-deprecated-declarations",
                           sanitized=sanitized)


@pytest.fixture(scope="module")
def progs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("libcuda")


@pytest.fixture(scope="module")
def fatbins(progs) -> dict[str, Path]:
    """madd.cu built by nvcc as a PTX fatbinary (compressed, uncompressed) and as SASS only."""
    out = {}
    for name, flags in {"compressed": ["-gencode", "arch=compute_75,code=compute_75"],
                        "plain": ["-gencode", "arch=compute_75,code=compute_75", "--no-compress"],
                        "sass": ["-gencode", "arch=compute_75,code=sm_75"]}.items():
        out[name] = progs / f"madd-{name}.fatbin"
        subprocess.run([nvcc(), "-fatbin", *flags, "-o", str(out[name]),
                        str(ROOT / "kernels" / "madd.cu")], check=True, capture_output=True)
    return out


def run(exe: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=120)


def test_madd_from_ptx_with_any_file_name(gdevd, progs) -> None:
    odd = progs / "kernels.bin"
    shutil.copy(MADD_PTX, odd)
    res = run(build("drv_madd", progs), str(odd), "100", env=gdevd.env())
    assert res.returncode == 0, res.stderr
    assert "drv_madd ok n=100 devices=4 name=Gdev Emulated GPU cc=7.5" in res.stdout


@pytest.mark.parametrize("kind", ["compressed", "plain"])
def test_madd_from_nvcc_fatbinary(gdevd, progs, fatbins, kind: str) -> None:
    res = run(build("drv_madd", progs), str(fatbins[kind]), "40", env=gdevd.env())
    assert res.returncode == 0, res.stderr


def test_machine_code_only_fatbinary_is_refused(gdevd, progs, fatbins) -> None:
    res = run(build("drv_madd", progs), str(fatbins["sass"]), "40", env=gdevd.env())
    assert res.returncode == 1
    assert "CUDA_ERROR_NO_BINARY_FOR_GPU" in res.stderr


def test_madd_under_asan_ubsan(gdevd, progs) -> None:
    res = run(build("drv_madd", progs, sanitized=True), str(MADD_PTX), "64",
              env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("case,reason", [
    ("beyond-share", "GMALLOC"), ("bad-pointer", "GMEMCPY_TO_DEVICE"),
    ("bad-free", "not an allocation"), ("unknown-kernel", "no kernel named no_such_kernel"),
    ("bad-image", "not PTX text"), ("bad-ptx", "<module>:2"),
    ("cubin", "build with PTX"), ("missing-file", "/nonexistent/module.ptx"),
    ("illegal-address", ""), ("fault-then-copy", ""), ("bad-launch", "block 2048x1x1"),
    ("no-context", "no current"),
])
def test_error_paths(gdevd, progs, case: str, reason: str) -> None:
    res = run(build("drv_errors", progs, sanitized=True), case, str(MADD_PTX),
              env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stdout + res.stderr
    assert reason in res.stdout
    assert "Traceback" not in gdevd.log_text()


def test_no_daemon(progs, tmp_path) -> None:
    """An unmodified program prints only cuGetErrorString's fixed text, so cuInit says once
    on stderr what is missing and the command that starts it; GDEV_QUIET=1 silences that."""
    env = {"GDEV_MOUNT": str(tmp_path), "PATH": "/usr/bin:/bin"}
    res = run(build("drv_errors", progs), "no-daemon", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    hint = f"no gdevd at {tmp_path} (GDEV_MOUNT={tmp_path}): start it with `gdevd {tmp_path}`"
    assert hint in res.stdout                            # the reason, gdevCudaLastError
    assert res.stderr.count(hint) == 1 and res.stderr.startswith("gdev: cuInit: ")
    quiet = run(build("drv_errors", progs), "no-daemon", env={**env, "GDEV_QUIET": "1"})
    assert quiet.returncode == 0 and quiet.stderr == "" and hint in quiet.stdout


def _read(gdevd, *parts: str) -> int:
    with open(gdevd.proc_path(*parts)) as f:
        return int(f.read().split()[0])


def test_two_programs_on_two_vgpus_show_their_shares(gdevd, progs) -> None:
    exe = build("drv_share", progs)
    procs = [subprocess.Popen([str(exe), str(dev), str(mib)], env=gdevd.env(), text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
             for dev, mib in ((0, 24), (1, 40))]
    try:
        lines = [p.stdout.readline() for p in procs]
        assert all(line.startswith("ready") for line in lines), lines
        used = [_read(gdevd, f"vd{i}", "memory_used") for i in (0, 1)]
        size = [_read(gdevd, f"vd{i}", "memory_size") for i in (0, 1)]
        assert 24 << 20 <= used[0] < 40 << 20 <= used[1] <= size[1]
        assert f"total={size[0]}" in lines[0] and f"total={size[1]}" in lines[1]
    finally:
        for p in procs:
            p.stdin.close()
            assert p.wait(60) == 0


def test_get_proc_address_by_name_and_version(progs) -> None:
    res = run(build("drv_proc", progs), env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "proc ok\n"


def test_legacy_launch_api_in_a_primary_context(gdevd, progs) -> None:
    """Gdev's own tests' style: cuParamSetv/i, cuFuncSetBlockShape, cuLaunchGrid.  The primary
    context's handle stays the same after its release (retained again, a new context behind
    it, without the old allocations) and it is inactive after a reset."""
    res = run(build("drv_legacy", progs, sanitized=True), str(MADD_PTX), "40",
              env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "legacy ok same=1 active_after=0 again=1 old_gone=1 after_reset=0\n"


def test_legacy_names_found_by_dlsym(gdevd, progs) -> None:
    """The entry points a program dlsyms by their old names (matrixMulDynlinkJIT's way)."""
    res = run(build("drv_dynlink", progs, sanitized=True), env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "dynlink ok\n"


def test_threads_share_a_context(gdevd, progs) -> None:
    res = run(build("drv_threads", progs, sanitized=True), str(MADD_PTX), "4", "5",
              env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == "threads ok\n"


def test_streams_overlap_by_event_timestamps(gdevd, progs) -> None:
    res = run(build("drv_streams", progs), str(ROOT / "kernels" / "streams.ptx"),
              env=gdevd.env())
    assert res.returncode == 0, res.stderr
    assert "drv_streams ok" in res.stdout


def test_jit_linker_as_ptxjit_uses_it(gdevd, progs) -> None:
    """cuLink* hands back the PTX it was given, writes the output options a program reads
    (wall time, logs), and refuses with CUDA's results what it cannot link."""
    res = run(build("drv_link", progs, sanitized=True), str(MADD_PTX),
              env=sanitizer_env(gdevd.env()))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == (
        "linked size_ok=1 ms_ok=1 info_len=1\n"
        "twice=CUDA_ERROR_INVALID_PTX log_names_both=1\n"
        "refused file=CUDA_ERROR_FILE_NOT_FOUND cubin=CUDA_ERROR_NO_BINARY_FOR_GPU "
        "library=CUDA_ERROR_NO_BINARY_FOR_GPU unterminated=CUDA_ERROR_INVALID_VALUE "
        "empty=CUDA_ERROR_INVALID_VALUE\n"
        "loadex=CUDA_ERROR_INVALID_PTX log_has_reason=1\n"), res.stdout


@pytest.mark.parametrize("sanitized", [False, True])
def test_jit_linker_links_several_inputs(gdevd, progs, sanitized) -> None:
    """cuLinkAddData of two PTX units: the image cuLinkComplete hands back is the linked-module
    image (byte for byte libgdev/linkimage.py's), cuModuleLoadData runs its kernels across
    units; an unresolved reference fails cuLinkComplete with the reason in the error log."""
    from libgdev import linkimage
    from tests.ptx.linkunits import A, B
    (progs / "a.ptx").write_text(A)
    (progs / "b.ptx").write_text(B)
    img = progs / f"linked{sanitized}.img"
    env = sanitizer_env(gdevd.env()) if sanitized else gdevd.env()
    res = run(build("drv_link2", progs, sanitized=sanitized), str(progs / "a.ptx"),
              str(progs / "b.ptx"), str(img), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout == ("linked k[5]=10 g[0]=134 h[0]=1 counter=132 size=4\n"
                          "unresolved=CUDA_ERROR_INVALID_PTX log=1\n"), res.stdout
    assert img.read_bytes() == linkimage.encode([("a.ptx", A), ("b.ptx", B)])


def test_cooperative_launches_through_the_driver_api(gdevd, progs) -> None:
    res = run(build("drv_coop", progs), str(ROOT / "tests" / "ptx" / "data" / "coop_sync.ptx"),
              env=gdevd.env())
    assert res.returncode == 0, res.stdout + res.stderr
    # 32-thread blocks: 16 per multiprocessor, 40 multiprocessors
    assert res.stdout == ("drv_coop attribute=1 per_mp=16 grid=640 seen=640,640 "
                          "oversized=CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE\n"
                          "drv_coop plain=CUDA_ERROR_LAUNCH_FAILED\n"), res.stdout
