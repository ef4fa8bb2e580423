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


MANAGED_PTX = b"""
.version 7.0
.target sm_75
.address_size 64
.global .align 4 .u32 plain = 3;
.global .attribute(.managed) .align 4 .u32 counter = 5;
.visible .entry bump()
{
  .reg .b32 r<2>;
  .reg .b64 rd<2>;
  mov.u64 rd1, counter;
  atom.global.add.u32 r1, [rd1], 1;
  ret;
}
"""


def test_a_module_with_managed_variables_shares_its_data_with_the_host(gdevd) -> None:
    """MODULE_DATA: a module with a __managed__ variable keeps its data segment in pinned
    memory that the client maps; what the host writes there the kernels see, and the
    reverse, with no copy.  A module without one has none to give."""
    with libgdev.gopen(0, gdevd.mount) as h:
        t = h.gmodule_load(MANAGED_PTX, "managed.ptx")
        data = h.gmodule_data(t.module_id)
        assert (data.addr, data.size >= t.data_size) == (t.data_addr, True)
        counter, plain = t.global_("counter"), t.global_("plain")
        words = data.array.view(np.uint32)
        at = (counter.addr - data.addr) // 4
        assert (words[at], words[(plain.addr - data.addr) // 4]) == (5, 3)
        words[at] = 100
        h.gsync(h.gmodule_launch(t.module_id, 0, (2, 1, 1), (32, 1, 1), 0, b""))
        assert words[at] == 164
        got = np.zeros(1, np.uint32)
        h.gmemcpy_from_device(got, counter.addr)
        assert got[0] == 164
        plain_only = h.gmodule_load(MANAGED_PTX.replace(b".attribute(.managed) ", b""), "p")
        with pytest.raises(FileNotFoundError, match="no __managed__ variable"):
            h.gmodule_data(plain_only.module_id)
        h.gmodule_unload(t.module_id)
        with pytest.raises(FileNotFoundError, match="no module"):
            h.gmodule_data(t.module_id)
