"""Texture objects through a mounted daemon with libgdev's own verbs (gtex_create,
gtex_destroy, gmodule_launch), and /proc/gdev/ptx_interpreted naming the kernels that the
compiling engine leaves on the interpreter because they sample a texture."""

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
PTX = (Path(__file__).resolve().parents[1] / "ptx" / "data" / "texture.ptx").read_bytes()


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
        deadline = time.monotonic() + 120
        rows: list[str] = []
        while time.monotonic() < deadline:
            rows = _read(gdevd.proc_path("ptx_interpreted")).splitlines()
            if any("fetch_f4" in r for r in rows):
                break
            time.sleep(0.2)
        assert rows[0].split() == ["gpu", "module", "kernel", "reason"]
        assert any(r.split()[2:] == ["fetch_f4", "instruction", "tex"] for r in rows[1:]), rows
    finally:
        _write(gdevd.proc_path("ptx_engine"), b"auto")
