"""The memcpy tunables through a real mount: /proc/gdev/chunk_size, pipeline_count,
iowrite_limit and ioread_limit, bounded by gdevd.runtime.defaults, refused with EINVAL (the
value unchanged), and taken by the next copy (``copy_paths`` shows which path it took)."""

from __future__ import annotations

import errno

import numpy as np
import pytest

import libgdev
from gdevd.runtime import defaults as D
from tests.daemon.conftest import read_text, write_once

pytestmark = pytest.mark.mount

TUNABLES = ("chunk_size", "pipeline_count", "iowrite_limit", "ioread_limit")


def _paths(gdevd, cid: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    lines = read_text(gdevd.proc_path("copy_paths")).splitlines()
    head = lines[0].split()
    rows = {int(r.split()[0]): dict(zip(head, map(int, r.split()), strict=True))
            for r in lines[1:]}
    return rows[cid]


def _only_cid(gdevd) -> int:  # type: ignore[no-untyped-def]
    rows = read_text(gdevd.proc_path("copy_paths")).splitlines()[1:]
    assert len(rows) == 1, rows
    return int(rows[0].split()[0])


def test_tunables_read_their_defaults_and_refuse_out_of_bounds(gdevd) -> None:
    defaults = {"chunk_size": D.CHUNK_SIZE, "pipeline_count": D.PIPELINE_COUNT,
                "iowrite_limit": D.IOWRITE_LIMIT, "ioread_limit": D.IOREAD_LIMIT}
    for name in TUNABLES:
        path = gdevd.proc_path(name)
        assert read_text(path) == f"{defaults[name]}\n"
        lo, hi = D.BOUNDS[name]
        bad = [b"%d\n" % (hi + 1), b"-1\n", b"lots\n"] + ([b"%d\n" % (lo - 1)] if lo else [])
        for data in bad:
            with pytest.raises(OSError) as info:
                write_once(path, data)
            assert info.value.errno == errno.EINVAL, (name, data)
            assert read_text(path) == f"{defaults[name]}\n"
    with pytest.raises(OSError) as info:       # in bounds, but not a page multiple
        write_once(gdevd.proc_path("chunk_size"), b"%d\n" % (D.CHUNK_SIZE + 1))
    assert info.value.errno == errno.EINVAL
    assert "chunk_size" in gdevd.log_text()    # the refusal is logged with its reason


def test_direct_limits_take_effect_on_the_next_copy(gdevd) -> None:
    data = np.arange(8192, dtype=np.uint8)
    back = np.zeros_like(data)
    try:
        with libgdev.gopen(0, gdevd.mount) as h:
            cid, va = _only_cid(gdevd), h.gmalloc(data.nbytes)
            h.gmemcpy_to_device(va, data)
            h.gmemcpy_from_device(back, va)
            assert _paths(gdevd, cid)["direct"] == 2
            write_once(gdevd.proc_path("iowrite_limit"), b"0\n")
            write_once(gdevd.proc_path("ioread_limit"), b"4096\n")
            h.gmemcpy_to_device(va, data)      # 8 KiB > 0: the copy engine
            h.gmemcpy_from_device(back, va)    # 8 KiB > 4 KiB: the copy engine
            after = _paths(gdevd, cid)
            assert after["direct"] == 2 and after["chunked"] + after["pipelined"] == 2
            assert np.array_equal(back, data)
    finally:
        write_once(gdevd.proc_path("iowrite_limit"), b"%d\n" % D.IOWRITE_LIMIT)
        write_once(gdevd.proc_path("ioread_limit"), b"%d\n" % D.IOREAD_LIMIT)


def test_chunk_and_depth_are_the_defaults_of_new_contexts(gdevd) -> None:
    data = np.arange(8192, dtype=np.uint8)      # two 4 KiB chunks
    try:
        with libgdev.gopen(0, gdevd.mount) as old:
            write_once(gdevd.proc_path("chunk_size"), b"4096\n")
            write_once(gdevd.proc_path("pipeline_count"), b"2\n")
            write_once(gdevd.proc_path("iowrite_limit"), b"0\n")
            with libgdev.gopen(0, gdevd.mount) as h:
                rows = read_text(gdevd.proc_path("copy_paths")).splitlines()[1:]
                cid = max(int(r.split()[0]) for r in rows)
                row = _paths(gdevd, cid)
                assert (row["chunk_size"], row["pipeline_count"]) == (4096, 2)
                h.gmemcpy_to_device(h.gmalloc(data.nbytes), data)
                assert _paths(gdevd, cid)["pipelined"] == 1
                h.gtune(libgdev.GDEV_TUNE_MEMCPY_PIPELINE_COUNT, 1)  # gtune still wins
                h.gmemcpy_to_device(h.gmalloc(data.nbytes), data)
                assert _paths(gdevd, cid)["chunked"] == 1
            old_row = _paths(gdevd, _only_cid(gdevd))  # opened before: Gdev's defaults
            assert (old_row["chunk_size"], old_row["pipeline_count"]) == (D.CHUNK_SIZE,
                                                                          D.PIPELINE_COUNT)
            old.gmemcpy_to_device(old.gmalloc(data.nbytes), data)
            assert _paths(gdevd, old_row["cid"])["chunked"] == 1   # 8 KiB < its chunk
    finally:
        write_once(gdevd.proc_path("chunk_size"), b"%d\n" % D.CHUNK_SIZE)
        write_once(gdevd.proc_path("pipeline_count"), b"%d\n" % D.PIPELINE_COUNT)
        write_once(gdevd.proc_path("iowrite_limit"), b"%d\n" % D.IOWRITE_LIMIT)
