"""Modules loaded by the daemon (MODULE_LOAD / MODULE_LAUNCH / MODULE_UNLOAD) through a real
mount: the function table, launches by (module, index), globals, and the refusals."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import numpy as np
import pytest

import libgdev
from libgdev import abi

pytestmark = pytest.mark.mount
ROOT = Path(__file__).resolve().parents[2]
MADD = (ROOT / "kernels" / "madd.ptx").read_bytes()
VADD = (ROOT / "tests" / "runtime" / "data" / "vadd.ptx").read_bytes()


def test_the_table_describes_the_kernels_and_a_launch_runs(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        t = h.gmodule_load(MADD, "madd.ptx")
        (index, add), = [t.function("add")]
        assert (index, add.param_size, add.max_threads) == (0, 28, 1024)
        assert [(p.offset, p.size, p.align, p.type) for p in add.params] == \
            [(0, 8, 8, "u64"), (8, 8, 8, "u64"), (16, 8, 8, "u64"), (24, 4, 4, "u32")]
        assert (t.ptx_version, t.target_sm, t.globals) == (90, 75, ())
        n = 32
        a = np.arange(n * n, dtype=np.uint32)
        d = [h.gmalloc(a.nbytes) for _ in range(3)]
        h.gmemcpy_to_device(d[0], a)
        h.gmemcpy_to_device(d[1], a)
        params = struct.pack("<QQQI", *d, n)
        h.gsync(h.gmodule_launch(t.module_id, 0, (2, 2, 1), (16, 16, 1), 0, params))
        c = np.empty_like(a)
        h.gmemcpy_from_device(c, d[2])
        assert np.array_equal(c, 2 * a)
        h.gmodule_unload(t.module_id)
        with pytest.raises(FileNotFoundError, match="no module"):
            h.gmodule_launch(t.module_id, 0, (1, 1, 1), (1, 1, 1), 0, params)


def test_globals_have_device_addresses(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        t = h.gmodule_load(VADD, "vadd.ptx")
        g = t.global_("launched")
        assert g is not None and (g.size, g.space) == (4, "global") and g.addr
        assert [f.name for f in t.functions][:2] == ["vadd", "poke"]
        h.gmemcpy_to_device(g.addr, np.array([7], np.uint32))
        got = np.zeros(1, np.uint32)
        h.gmemcpy_from_device(got, g.addr)
        assert got[0] == 7


def test_refusals_say_why(gdevd) -> None:
    with libgdev.gopen(0, gdevd.mount) as h:
        with pytest.raises(OSError) as info:
            h.gmodule_load(b"\x7fELF" + bytes(60), "k.cubin")
        assert info.value.errno == errno.ENOEXEC and "nvcc -ptx" in str(info.value)
        with pytest.raises(OSError) as info:
            h.gmodule_load(MADD.replace(b"ld.param", b"ld.bogus", 1), "bad.ptx")
        assert info.value.errno == errno.EINVAL and "MODULE_LOAD: bad.ptx:" in str(info.value)
        t = h.gmodule_load(MADD, "madd.ptx")
        with pytest.raises(FileNotFoundError, match=r"its kernels: add"):
            h.gmodule_launch(t.module_id, 3, (1, 1, 1), (1, 1, 1), 0, bytes(28))
        with libgdev.gopen(1, gdevd.mount) as other:  # ids name nothing in another context
            with pytest.raises(FileNotFoundError):
                other.gmodule_launch(t.module_id, 0, (1, 1, 1), (1, 1, 1), 0, bytes(28))


def test_a_large_image_travels_through_a_pinned_buffer(gdevd) -> None:
    from libgdev.loader import INLINE_IMAGE_MAX

    big = MADD + b"\n//" + b"x" * (INLINE_IMAGE_MAX + 10) + b"\n"
    with libgdev.gopen(0, gdevd.mount) as h:
        t = h.gmodule_load(big, "big.ptx")
        assert [f.name for f in t.functions] == ["add"]
        assert h._dma == {}  # the image's buffer is gone


def test_the_reply_layout_is_what_docs_abi_says() -> None:
    cmd = abi.BY_NAME["MODULE_LOAD"]
    assert cmd.reply.struct.size == 40 and abi.BY_NAME["MODULE_LAUNCH"].request.struct.size == 56
