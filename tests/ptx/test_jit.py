"""The compiling engine's own contract: coverage of the repository's kernels, faults worded
as the interpreter's, the on-disk cache, and the interpreter serving without a compiler.
(Every other test of tests/ptx runs on both engines through conftest.py.)"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import cffi
import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.jit import build
from gdevd.gpu.ptx.jit.compiled import CDEF

from .helpers import Device, load

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
# kernels the translator leaves to the interpreter, and why (shrinks as coverage grows)
NOT_COMPILED: dict[tuple[str, str], str] = {}
only_jit = pytest.mark.parametrize("engine", ["jit"], indirect=True)


@pytest.mark.slow   # a cold cache compiles every module of kernels/
@only_jit
@pytest.mark.parametrize("path", sorted(KERNELS.glob("*.ptx")), ids=lambda p: p.stem)
def test_repository_kernels_compile(path):
    mod = load_module(path.read_text(), path.stem)
    mod.start_compile(wait=True)
    assert mod.jit.status == "jit", mod.jit.error
    rejected = {(path.stem, k): why for k, why in mod.jit.compiled.rejected.items()}
    assert rejected == {k: v for k, v in NOT_COMPILED.items() if k[0] == path.stem}
    for name in mod.kernels:
        expect = "interp" if (path.stem, name) in NOT_COMPILED else "jit"
        assert mod.jit.engine_of(name) == expect


def _fault_text(engine: str) -> str:
    jit.set_engine(engine)
    dev = Device()
    p = dev.alloc(64)
    with pytest.raises(KernelFault) as ei:
        dev.launch(load("exec"), "faulty", (1,), (32,), p, 1 << 30)
    return str(ei.value)


@only_jit
def test_fault_names_kernel_address_and_line_like_the_interpreter():
    compiled, interpreted = _fault_text("jit"), _fault_text("interp")
    assert compiled == interpreted and "faulty at line" in compiled


@only_jit
def test_a_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    text = (KERNELS / "madd.ptx").read_text()
    first = load_module(text, "madd")
    first.start_compile(wait=True)
    second = load_module(text, "madd")
    second.start_compile(wait=True)
    assert not first.jit.compiled.cached and second.jit.compiled.cached
    assert second.jit.compiled.kernels == first.jit.compiled.kernels
    assert len(list(tmp_path.glob("obj/*/*.so"))) == 1     # (and the runtime: rt/)


@only_jit
def test_without_a_compiler_the_interpreter_serves(monkeypatch, caplog):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(jit, "_warned", False)
    build.compiler.cache_clear()
    try:
        mod = load_module((KERNELS / "madd.ptx").read_text(), "madd")
        with caplog.at_level(logging.WARNING, logger="gdevd.gpu.ptx.jit"):
            mod.start_compile(wait=True)
            load_module((KERNELS / "madd.ptx").read_text(), "madd").start_compile(wait=True)
        assert mod.jit.status == "interp" and mod.jit.engine_of("add") == "interp"
        assert [r.message for r in caplog.records] == \
            ["no C compiler found: PTX kernels run on the interpreter"]
        dev = Device()
        a = dev.put(np.arange(256, dtype=np.uint32))
        c = dev.put(np.zeros(256, np.uint32))
        launch = dev.launch(mod, "add", (1, 1), (16, 16), a, a, c, 16)
        assert type(launch).__name__ == "Launch"
        assert dev.get(c, 256, np.uint32).tolist() == list(range(0, 512, 2))
    finally:
        build.compiler.cache_clear()


@only_jit
def test_the_context_struct_allocated_in_python_is_the_one_compiled_code_uses(tmp_path):
    prog = tmp_path / "size.c"
    prog.write_text('#include <stdio.h>\n#include "prelude.h"\n'
                    'int main(void) { printf("%zu", sizeof(struct jctx)); return 0; }\n')
    exe = tmp_path / "size"
    subprocess.run([build.compiler(), "-O1", f"-I{build.HERE}", f"-I{build.CSRC}", "-o",
                    str(exe), str(prog), "-lm"], check=True)
    ffi = cffi.FFI()
    ffi.cdef(CDEF)
    assert int(subprocess.run([str(exe)], capture_output=True, check=True).stdout) == \
        ffi.sizeof("struct jctx")
