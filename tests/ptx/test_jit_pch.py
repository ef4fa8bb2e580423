"""The precompiled prelude (gdevd/gpu/ptx/jit/pch.py): made once per cache and salt, read
by GCC in place of prelude.h (``cc -H`` marks a used one with ``!``), checked against its
summary (a damaged one is made again), the directories of other salts deleted, and no
harm where it cannot be had: a compiler that fails to precompile, or one that is not GCC,
compiles every kernel as before.  Real compilers throughout; other compilers are played by
wrappers around the real one."""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

import pytest

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.jit import build, pch

MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_text()
pytestmark = [pytest.mark.parametrize("engine", ["jit"], indirect=True),
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    """An empty cache root, and no decision about a precompiled header remembered."""
    root = tmp_path / "cache"
    monkeypatch.setenv("GDEV_JIT_CACHE", str(root))
    pch._known.clear()
    yield root
    pch._known.clear()


def _include_dir(root: Path) -> Path | None:
    return pch.include_dir(root, build._salt(), build._command, build.FLAGS, build.INCLUDES)


def _compiles_madd() -> None:
    mod = load_module(MADD, "madd")
    mod.start_compile(wait=True)
    assert mod.jit.status == "jit", mod.jit.error


def _used_by_gcc(where: Path, tmp_path: Path) -> bool:
    """Whether GCC reads where's prelude.h.gch for a kernel's translation unit."""
    mod = load_module(MADD, "madd")
    _, src = build._kernel_unit(mod, mod.kernels["add"])
    c_file = tmp_path / "unit.c"
    c_file.write_text(src)
    run = subprocess.run([shutil.which("cc"), *build.FLAGS, f"-I{where}", *build.INCLUDES,
                          "-H", "-c", "-o", str(tmp_path / "unit.o"), str(c_file)],
                         capture_output=True, text=True, check=True)
    return run.stderr.startswith(f"! {where / 'prelude.h.gch'}")


def test_a_compile_makes_it_and_gcc_reads_it(cache_root, tmp_path):
    _compiles_madd()
    where = _include_dir(cache_root)
    assert where is not None and where.parent == cache_root / "pch"
    assert (where / "prelude.h.gch").stat().st_mode & 0o077 == 0
    assert _used_by_gcc(where, tmp_path)


def test_a_damaged_one_is_made_again_and_other_salts_go(cache_root, tmp_path, caplog):
    where = _include_dir(cache_root)
    stale = cache_root / "pch" / "0123456789abcdef01234567"
    stale.mkdir()
    (stale / "prelude.h.gch").write_bytes(b"old")
    gch = where / "prelude.h.gch"
    data = bytearray(gch.read_bytes())
    data[len(data) // 2] ^= 0xFF                # same size, other bytes
    gch.write_bytes(bytes(data))
    pch._known.clear()
    with caplog.at_level(logging.WARNING, logger="gdevd.gpu.ptx.jit.pch"):
        assert _include_dir(cache_root) == where
    assert "damaged" in caplog.text
    assert not stale.exists()
    assert _used_by_gcc(where, tmp_path)


def test_a_compiler_that_cannot_precompile_still_compiles_kernels(cache_root, wrapped_cc,
                                                                  caplog):
    wrapped_cc('case " $* " in *" c-header "*) echo "no headers here" >&2; exit 1;; esac\n'
               'exec "$REAL" "$@"')
    with caplog.at_level(logging.WARNING, logger="gdevd.gpu.ptx.jit.pch"):
        _compiles_madd()
    assert "precompiling prelude.h failed (no headers here)" in caplog.text
    assert _include_dir(cache_root) is None


def test_a_compiler_that_is_not_gcc_gets_none(cache_root, wrapped_cc):
    out = wrapped_cc('case " $* " in *" -dM "*) "$REAL" "$@"; echo "#define __clang__ 1";'
                     ' exit 0;; *" c-header "*) touch "$OUT/asked";; esac\nexec "$REAL" "$@"')
    _compiles_madd()
    assert _include_dir(cache_root) is None
    assert not (out / "asked").exists()
    assert not (cache_root / "pch").exists()
