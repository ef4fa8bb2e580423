"""Kernel objects shared by content: a kernel is compiled once whatever its name, its place
in the PTX or the module it is in, and a fault still names its own PTX line.

The translation counts lines from each kernel's first (cgen.relative) and names the C
function by the hash of its C, which is also its key in the cache's object store."""

from __future__ import annotations

import logging
import re
import shutil

import numpy as np
import pytest

from gdevd.errors import KernelFault
from gdevd.gpu.ptx import load_module

from .helpers import Device

pytestmark = [pytest.mark.parametrize("engine", ["jit"], indirect=True),
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]

HEADER = ".version 7.0\n.target sm_75\n.address_size 64\n"


def kernel(name: str, op: str = "add.u32 %r1, %r1, %r2;") -> str:
    """out[tid] = op(v, tid), nvcc-style parameter names (they differ per kernel)."""
    return f"""
.visible .entry {name}(.param .u64 {name}_param_0, .param .u32 {name}_param_1)
{{
\t.reg .b32 %r<3>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [{name}_param_0];
\tld.param.u32 %r1, [{name}_param_1];
\tmov.u32 %r2, %tid.x;
\t{op}
\tmul.wide.u32 %rd2, %r2, 4;
\tadd.s64 %rd1, %rd1, %rd2;
\tst.global.u32 [%rd1], %r1;
\tret;
}}
"""


def compiled(text: str, name: str):
    mod = load_module(text, name)
    mod.start_compile(wait=True)
    assert mod.jit.status == "jit", mod.jit.error
    return mod


def run(mod, name: str, v: int) -> np.ndarray:
    dev = Device()
    out = dev.put(np.zeros(32, np.uint32))
    launch = dev.launch(mod, name, (1,), (32,), out, v)
    assert type(launch).__name__ == "JitLaunch"
    return dev.get(out, 32, np.uint32)


def store_lines(text: str) -> list[int]:
    return [k + 1 for k, line in enumerate(text.splitlines()) if "st.global" in line]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_kernels_differing_only_in_name_and_place_are_one_object(cache_dir):
    text = HEADER + kernel("poke_a") + kernel("other", "mul.lo.u32 %r1, %r1, %r2;") + \
        kernel("poke_b")
    mod = compiled(text, "twins")
    fn = mod.jit.compiled.kernels
    assert fn["poke_a"] == fn["poke_b"] != fn["other"]
    assert mod.jit.compiled.compiled == 2
    assert len(list(cache_dir.glob("obj/*/*.so"))) == 2
    assert run(mod, "poke_a", 5).tolist() == run(mod, "poke_b", 5).tolist() == \
        [5 + t for t in range(32)]
    assert run(mod, "other", 3).tolist() == [3 * t for t in range(32)]
    # one object, but each kernel's fault names its own line
    dev = Device()
    for name, line in zip(("poke_a", "other", "poke_b"), store_lines(text), strict=True):
        with pytest.raises(KernelFault) as ei:
            dev.launch(mod, name, (1,), (32,), 0x10, 1)
        assert re.search(rf"in {name} at line {line}$", str(ei.value)), str(ei.value)


def test_a_module_sharing_a_kernel_with_an_earlier_one_compiles_only_the_new(cache_dir):
    compiled(HEADER + kernel("scale", "mul.lo.u32 %r1, %r1, %r2;") + kernel("poke"), "first")
    second = compiled(HEADER + kernel("xor_it", "xor.b32 %r1, %r1, %r2;") +
                      kernel("renamed"), "second")
    assert second.jit.compiled.compiled == 1              # xor_it: "renamed" is "poke"
    assert not second.jit.compiled.cached
    assert run(second, "renamed", 7).tolist() == [7 + t for t in range(32)]
    assert run(second, "xor_it", 7).tolist() == [7 ^ t for t in range(32)]


def test_a_damaged_object_is_compiled_again(cache_dir, caplog):
    compiled(HEADER + kernel("poke"), "first")
    (obj,) = cache_dir.glob("obj/*/*.so")
    obj.write_bytes(obj.read_bytes()[:100])               # a crash mid-write
    with caplog.at_level(logging.WARNING, logger="gdevd.gpu.ptx.jit.cache"):
        again = compiled(HEADER + "\n// another module\n" + kernel("poke"), "again")
    assert again.jit.compiled.compiled == 1
    assert any("is damaged" in r.message for r in caplog.records)
    assert run(again, "poke", 2).tolist() == [2 + t for t in range(32)]


def _bytes(root) -> int:
    return sum(f.stat().st_size for f in root.rglob("*")        # (the runtime is not
               if f.suffix in (".so", ".json", ".o", ".sum") and "rt" not in f.parts)  # counted)


def test_the_cache_stays_within_its_bound_dropping_the_least_recently_used(cache_dir,
                                                                           monkeypatch):
    from gdevd.gpu.ptx.jit import build, cache
    first = HEADER + kernel("poke")
    compiled(first, "first")
    one = _bytes(cache_dir)
    monkeypatch.setenv("GDEV_JIT_CACHE_MAX", str(one * 3 // 2))     # room for one module
    second = HEADER + kernel("scale", "mul.lo.u32 %r1, %r1, %r2;")
    compiled(second, "second")
    assert _bytes(cache_dir) <= one * 3 // 2
    poke = build._translate(load_module(first, "first"))[1]["poke"]
    assert cache.object_lookup(cache_dir, poke) is None                 # the older's code
    assert compiled(second, "second").jit.compiled.cached                  # the newer kept
    again = compiled(first, "first")              # compiled again when wanted, and correct
    assert not again.jit.compiled.cached
    assert run(again, "poke", 1).tolist() == [1 + t for t in range(32)]


def test_builds_list_the_cache_again_only_when_it_may_be_over_its_bound(cache_dir,
                                                                         monkeypatch):
    """Listing a large cache costs a build a good fraction of a second: with room to spare,
    three builds list it once; with a bound that each build's stores take a large share of,
    every build lists it (and keeps the cache within it)."""
    from gdevd.gpu.ptx.jit import cache
    scans = []
    units = cache._units
    monkeypatch.setattr(cache, "_units", lambda base: scans.append(base) or units(base))
    for op in ("add", "sub", "xor"):
        compiled(HEADER + kernel(f"k_{op}", f"{op}.u32 %r1, %r1, %r2;"), op)
    assert len(scans) == 1
    one = _bytes(cache_dir)
    monkeypatch.setenv("GDEV_JIT_CACHE_MAX", str(one + one // 8))
    compiled(HEADER + kernel("k_or", "or.b32 %r1, %r1, %r2;"), "or")
    compiled(HEADER + kernel("k_and", "and.b32 %r1, %r1, %r2;"), "and")
    assert len(scans) == 3 and _bytes(cache_dir) <= one + one // 8


def test_a_malformed_cache_bound_is_an_error_that_says_so(cache_dir, monkeypatch):
    monkeypatch.setenv("GDEV_JIT_CACHE_MAX", "lots")
    mod = load_module(HEADER + kernel("poke"), "bounded")
    mod.start_compile(wait=True)
    assert mod.jit.status == "failed" and "GDEV_JIT_CACHE_MAX='LOTS'" in mod.jit.error
