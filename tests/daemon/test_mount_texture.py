"""Texture objects through a mounted daemon with libgdev's own verbs (gtex_create,
gtex_destroy, gmodule_launch) on the compiled engine, and /proc/gdev/ptx_interpreted naming
the kernels that the compiling engine leaves on the interpreter, with the reason."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import numpy as np
import pytest

import libgdev
from libgdev import texture as T
from tests.daemon.conftest import read_text as _read
from tests.daemon.conftest import write_once as _write

pytestmark = pytest.mark.mount
DATA = Path(__file__).resolve().parents[1] / "ptx" / "data"
PTX = (DATA / "texture.ptx").read_bytes()


def _launch(h, table, name: str, *params: int) -> None:
    index = [f.name for f in table.functions].index(name)
    fence = h.gmodule_launch(table.module_id, index, (1, 1, 1), (32, 1, 1), 0,
                             b"".join(p.to_bytes(8 if k < 3 else 4, "little")
                                      for k, p in enumerate(params)) + bytes(4))
    h.gsync(fence, timeout=60)


def test_texture_fetch_through_the_daemon(gdevd) -> None:
    _write(gdevd.proc_path("ptx_engine"), b"jit")
    try:
        with libgdev.gopen(0, gdevd.mount) as h:
            table = h.gmodule_load(PTX, "texture")
            data = np.arange(32, dtype=np.float32) * 1.5
            idx = np.arange(8, dtype=np.int32) * 3 - 2
            d_data, d_idx, d_out = h.gmalloc(data.nbytes), h.gmalloc(idx.nbytes), h.gmalloc(128)
            h.gmemcpy_to_device(d_data, data)
            h.gmemcpy_to_device(d_idx, idx)
            tex = h.gtex_create(T.tex_desc(T.TEX_RESOURCE_LINEAR, d_data, T.TEX_FORMAT_FLOAT,
                                           4, 8))
            _launch(h, table, "fetch_f4", tex, d_idx, d_out, 8)
            got = np.empty((8, 4), np.float32)
            h.gmemcpy_from_device(got, d_out)
            want = np.array([data[4 * i:4 * i + 4] if 0 <= i < 8 else np.zeros(4)
                             for i in idx], np.float32)
            np.testing.assert_array_equal(got, want)
            with pytest.raises(OSError) as info:     # the texels past their allocation
                h.gtex_create(T.tex_desc(T.TEX_RESOURCE_LINEAR, d_data, T.TEX_FORMAT_FLOAT,
                                         4, 1 << 20))
            assert info.value.errno in (errno.EFAULT, errno.ENOENT)
            h.gtex_destroy(tex)
            with pytest.raises(OSError) as info:
                h.gtex_destroy(tex)
            assert info.value.errno == errno.EINVAL
    finally:
        _write(gdevd.proc_path("ptx_engine"), b"auto")


def _rows(gdevd, entry: str, want: str) -> list[str]:
    """The lines of /proc/gdev/<entry> once one contains ``want`` (compiles run in the
    background), at most two minutes on."""
    deadline = time.monotonic() + 120
    while True:
        rows = _read(gdevd.proc_path(entry)).splitlines()
        if any(want in r for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_proc_names_the_kernels_left_on_the_interpreter(gdevd) -> None:
    _write(gdevd.proc_path("ptx_engine"), b"jit")
    try:
        with libgdev.gopen(0, gdevd.mount) as h:
            h.gmodule_load((DATA / "recursion.ptx").read_bytes(), "recursion")
            h.gmodule_load(PTX, "texture")
            rows = _rows(gdevd, "ptx_interpreted", "fib_kernel")
            assert rows[0].split() == ["gpu", "module", "kernel", "reason"]
            assert any(r.split()[2] == "fib_kernel" and "recursive functions" in r
                       for r in rows[1:]), rows
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:      # the texture module: all 8 compiled
                mods = [r.split() for r in
                        _read(gdevd.proc_path("ptx_modules")).splitlines()[1:]]
                if any(m[2] == "jit" and m[4:] == ["8", "8"] for m in mods):
                    break
                time.sleep(0.2)
            assert any(m[2] == "jit" and m[4:] == ["8", "8"] for m in mods), mods
            rows = _read(gdevd.proc_path("ptx_interpreted")).splitlines()
            assert not any("fetch_f4" in r for r in rows), rows    # tex is translated
    finally:
        _write(gdevd.proc_path("ptx_engine"), b"auto")


def test_slices_of_a_3d_texture_through_the_daemon(gdevd) -> None:
    """A 3D texture's slices must lie inside one allocation of the context; hostile depths
    and slice pitches are refused with the field named, and the daemon serves on."""
    with libgdev.gopen(0, gdevd.mount) as h:
        buf = h.gmalloc(4096)                 # 16 slices of 4 rows of 16 floats: a page
        good = T.tex_desc(T.TEX_RESOURCE_PITCH2D, buf, T.TEX_FORMAT_FLOAT, 1, 16, 4, 64,
                          shape=T.TEX_SHAPE_3D, depth=16, slice_pitch=256)
        h.gtex_destroy(h.gtex_create(good))
        for change, err, words in [
                ({"depth": 17}, (errno.EFAULT, errno.ENOENT), ""),    # one slice too many
                ({"depth": 1 << 40}, (errno.EINVAL,), "depth"),
                ({"slice_pitch": 1 << 63}, (errno.EINVAL,), "slice pitch"),
                ({"slice_pitch": 128}, (errno.EINVAL,), "slice pitch"),   # slices overlap
                ({"shape": 99}, (errno.EINVAL,), "shape")]:
            with pytest.raises(OSError) as info:
                h.gtex_create(good._replace(**change))
            assert info.value.errno in err and words in str(info.value), change
        h.gtex_destroy(h.gtex_create(good))
