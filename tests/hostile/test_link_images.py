"""Linked-module images from a hostile tenant through a real mount: too many inputs,
enormous names and lengths, duplicate definitions in every input, calls cycling across
inputs and an inlining bomb each end in a clear error for that tenant only; the daemon
goes on serving, a linked image too large for a message travels through shared memory."""

from __future__ import annotations

import errno
import struct
from pathlib import Path

import pytest

import libgdev
import libgdev.loader
from libgdev import linkimage
from tests.daemon.conftest import gdevd  # noqa: F401  (the module-scoped daemon)
from tests.ptx.linkunits import VAL, A, B, unit

pytestmark = pytest.mark.mount
MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_bytes()


def _raw(units: list[tuple[bytes, bytes]], count: int | None = None) -> bytes:
    """An image of ``units`` laid out by hand (no bound checked), claiming ``count``."""
    body = b""
    for name, text in units:
        rec = struct.pack("<IIQ", len(name), 0, len(text)) + name + text
        body += rec + bytes(-len(rec) % 8)
    n = len(units) if count is None else count
    return struct.pack("<8sIIQ", b"GDEVLNK1", n, 0, 24 + len(body)) + body


def _bomb(levels: int = 24) -> bytes:
    fns = [f".visible .func f{k} () {{ call.uni f{k - 1}, (); call.uni f{k - 1}, (); ret; }}"
           for k in range(1, levels)]
    top = unit("".join(f".extern .func f{k} ();\n" for k in range(levels))
               + f".visible .entry go () {{ call.uni f{levels - 1}, (); ret; }}\n")
    units = [("top", top), ("f0", unit(".visible .func f0 () { ret; }\n"))]
    units += [(f"f{k}", unit(f".extern .func f{k - 1} ();\n" + fns[k - 1] + "\n"))
              for k in range(1, levels)]
    return linkimage.encode(units)


CYCLE = linkimage.encode([
    ("ping", unit(".extern .func pong ();\n.visible .func ping () { call.uni pong, (); ret; }\n"
                  ".visible .entry go () { call.uni ping, (); ret; }\n")),
    ("pong", unit(".extern .func ping ();\n.visible .func pong () { call.uni ping, (); ret; }\n"))])
SAME = unit(VAL.format(linkage=".visible", value=1))


@pytest.mark.parametrize("image, err, says", [
    (_raw([(b"u", A.encode())] * 3, count=linkimage.MAX_INPUTS + 1), errno.ENOEXEC, "inputs"),
    (_raw([(b"n" * (1 << 20), A.encode())]), errno.ENOEXEC, "bad lengths"),
    (struct.pack("<8sIIQ", b"GDEVLNK1", 1, 0, 48) + struct.pack("<IIQ", 1, 0, 1 << 62)
     + b"u" + bytes(7), errno.ENOEXEC, "bad lengths"),
    (_raw([(b"u", b"\xff" * 64)]), errno.ENOEXEC, "not UTF-8"),
    (linkimage.encode([(f"u{k}", SAME) for k in range(linkimage.MAX_INPUTS)]), errno.EINVAL,
     "duplicate definition of 'val': defined in u0 and u1"),
    (_bomb(), errno.EINVAL, "statements with its calls inlined"),
    (linkimage.encode([("long", unit(VAL.format(linkage=".extern", value=0).replace(
        "val", "v" * 200_000).split("{")[0] + ";\n"))]), errno.EINVAL, "unresolved"),
])
def test_hostile_images_fail_for_their_tenant_only(gdevd, image, err, says) -> None:  # noqa: F811
    with libgdev.gopen(0, gdevd.mount) as h, libgdev.gopen(1, gdevd.mount) as other:
        with pytest.raises(OSError) as exc:
            h.gmodule_load(image, "hostile")
        assert exc.value.errno == err and says in str(exc.value), exc.value
        assert len(str(exc.value)) < 4096
        t = other.gmodule_load(MADD, "madd.ptx")              # the daemon still serves
        assert t.function("add")[1].name == "add"


def test_unbounded_recursion_faults_its_tenant_only(gdevd) -> None:  # noqa: F811
    """Calls cycling across inputs (ping/pong, no base case) load: recursive functions get
    real calls; the launch's stack overflows in every thread at once, a fault of that
    context (naming the kernel) while another tenant's work goes on."""
    with libgdev.gopen(0, gdevd.mount) as h, libgdev.gopen(1, gdevd.mount) as other:
        t = h.gmodule_load(CYCLE, "cycle")
        index, _ = t.function("go")
        fence = h.gmodule_launch(t.module_id, index, (64, 1, 1), (256, 1, 1), 0, b"")
        with pytest.raises(OSError) as exc:
            h.gsync(fence, timeout=300)
        assert exc.value.errno == errno.EFAULT and "stack overflow" in str(exc.value)
        assert "go" in str(exc.value)
        t = other.gmodule_load(MADD, "madd.ptx")
        assert t.function("add")[1].name == "add"


def test_a_large_linked_image_travels_through_shared_memory(gdevd) -> None:  # noqa: F811
    padding = "// " + "x" * 1000 + "\n"
    big = unit(padding * 2048)                                 # 2 MiB of comments
    image = linkimage.encode([("a.ptx", A), ("b.ptx", B), ("big.ptx", big)])
    assert len(image) > libgdev.loader.INLINE_IMAGE_MAX
    with libgdev.gopen(0, gdevd.mount) as h:
        t = h.gmodule_load(image, "big")
        assert sorted(f.name for f in t.functions) == ["g", "h", "k"]
        assert [g.name for g in t.globals] == ["counter"]
