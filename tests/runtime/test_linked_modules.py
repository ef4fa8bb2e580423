"""Linked-module images (libgdev/linkimage.py) through gmodule_load: several PTX texts
linked into one module in the daemon, cached by content, refused with the reason."""

from __future__ import annotations

import errno
import struct

import numpy as np
import pytest

from gdevd import runtime as rt
from libgdev import linkimage
from libgdev.wire import ProtocolError

from ..ptx.linkunits import USE_VAL, A, B
from .conftest import raises_errno, run_system


async def _run(h: rt.Handle, table, name: str, n: int = 32) -> np.ndarray:  # type: ignore[no-untyped-def]
    index = [f.name for f in table.functions].index(name)
    out = await rt.gmalloc(h, 4 * n)
    fence = await rt.gmodule_launch(h, table.module_id, index, (1, 1, 1), (n, 1, 1), 0,
                                    struct.pack("<Q", out))
    await rt.gsync(h, fence)
    got = np.empty(n, np.int32)
    await rt.gmemcpy_from_device(h, got, out, got.nbytes)
    return got


def test_a_linked_image_loads_as_one_module_and_is_cached_by_content() -> None:
    image = linkimage.encode([("a.ptx", A), ("b.ptx", B)])

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        table = await rt.gmodule_load(h, image, "ab")
        assert {f.name for f in table.functions} == {"k", "h", "g"}
        assert [g.name for g in table.globals] == ["counter"]
        assert (table.ptx_version, table.target_sm) == (80, 80)
        assert (await _run(h, table, "k")).view(np.float32)[5] == 10.0
        assert (await _run(h, table, "g"))[0] == 2 + 132
        assert (await _run(h, table, "h"))[0] == 1
        misses = h.gpu.modules.misses
        again = await rt.gmodule_load(h, bytes(image), "ab")  # parsed and linked once
        assert h.gpu.modules.misses == misses and again.module_id != table.module_id
        await rt.gclose(h)
    run_system(body)


@pytest.mark.parametrize("units, err, says", [
    ([("use.ptx", USE_VAL)], errno.EINVAL, "unresolved reference to 'val'"),
    ([("a.ptx", A), ("b.ptx", B), ("b2.ptx", B)], errno.EINVAL,
     "duplicate definition of 'counter': defined in b.ptx and b2.ptx"),
    ([("a.ptx", A), ("junk", "no ptx here")], errno.ENOEXEC, "linked input 'junk'"),
])
def test_link_errors_carry_the_reason(units, err, says) -> None:  # type: ignore[no-untyped-def]
    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        used = h.vgpu.memory_used
        with raises_errno(err) as exc:
            await rt.gmodule_load(h, linkimage.encode(units), "img")
        assert says in str(exc.value)
        assert h.vgpu.memory_used == used
        await rt.gclose(h)
    run_system(body)


def test_malformed_images_are_enoexec() -> None:
    good = linkimage.encode([("a.ptx", A), ("b.ptx", B)])
    bad = [good[:30], good + b"\0" * 8, good[:8] + struct.pack("<I", 0) + good[12:],
           good[:8] + struct.pack("<I", 10_000) + good[12:],
           good[:24] + struct.pack("<I", 1 << 30) + good[28:]]

    async def body(s: rt.GdevSystem) -> None:
        h = await rt.gopen(s, 0)
        for image in bad:
            with raises_errno(errno.ENOEXEC):
                await rt.gmodule_load(h, image, "bad")
        await rt.gclose(h)
    run_system(body)


def test_image_codec_round_trips_and_bounds() -> None:
    units = [("a.ptx", A), ("ü", B)]
    assert linkimage.decode(linkimage.encode(units)) == units
    for junk in (b"", b"GDEVLNK1", bytes(64)):
        with pytest.raises(ProtocolError):
            linkimage.decode(junk)
    with pytest.raises(ValueError):
        linkimage.encode([("x", A)] * (linkimage.MAX_INPUTS + 1))
    with pytest.raises(ValueError):
        linkimage.encode([("x" * (linkimage.NAME_MAX + 1), A)])
