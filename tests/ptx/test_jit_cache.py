"""The compiled-module cache under hostile conditions: a key that names the CPU, damaged
entries rebuilt instead of loaded, cache directories others can write to refused, and the
compiler run at a lower priority.

Other machines and crashes are played by real programs: a compiler wrapper that resolves
``-march=native`` to a plain x86-64 (another CPU, the same compiler), files cut short as a
crash or a full disk leaves them, directories chmod/chown-ed as another user would leave them.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gdevd.gpu.ptx import jit, load_module
from gdevd.gpu.ptx.jit import build, cache

from .helpers import Device

MADD = (Path(__file__).resolve().parents[2] / "kernels" / "madd.ptx").read_text()
pytestmark = [pytest.mark.parametrize("engine", ["jit"], indirect=True),
              pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")]


def _compiled():
    mod = load_module(MADD, "madd")
    mod.start_compile(wait=True)
    assert mod.jit.status == "jit", mod.jit.error
    return mod


def _runs_exactly(mod) -> None:
    dev = Device()
    a = dev.put(np.arange(256, dtype=np.uint32))
    c = dev.put(np.zeros(256, np.uint32))
    launch = dev.launch(mod, "add", (1, 1), (16, 16), a, a, c, 16)
    assert type(launch).__name__ == "JitLaunch"
    assert dev.get(c, 256, np.uint32).tolist() == list(range(0, 512, 2))


@pytest.mark.skipif(platform.machine() != "x86_64", reason="plays an older x86-64 CPU")
def test_the_key_names_the_cpu_that_native_resolves_to(tmp_path, monkeypatch, wrapped_cc):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "shared"))
    here = _compiled()
    key_here = build.cache_key(MADD)
    # the same compiler on a machine whose CPU resolves -march=native to plain x86-64
    wrapped_cc('for a; do shift; [ "$a" = -march=native ] && a=-march=x86-64; '
               'set -- "$@" "$a"; done; exec "$REAL" "$@"')
    assert build._compiler_version(build.compiler()) == \
        build._compiler_version(shutil.which("cc"))
    there = _compiled()
    assert build.cache_key(MADD) != key_here
    assert not there.jit.compiled.cached and here.jit.compiled.kernels
    assert len(list((tmp_path / "shared").glob("obj/*/*.so"))) == 2
    _runs_exactly(there)


def _entry(root: Path) -> tuple[Path, Path]:
    """(the kernel's shared object, the module's manifest) of MADD's entry."""
    (so,) = root.glob("obj/*/*.so")
    return so, cache.manifest_path(root, build.cache_key(MADD))


def _compiled_by_an_earlier_daemon(root: Path) -> None:
    """Fill cache ``root`` from another process (this one must not have the ``.so`` mapped
    when the test damages it in place, as a crash leaves it for the next daemon)."""
    code = ("import sys; from gdevd.gpu.ptx import jit, load_module; jit.set_engine('jit'); "
            "m = load_module(sys.stdin.read(), 'madd'); m.start_compile(wait=True); "
            "assert m.jit.status == 'jit', m.jit.error")
    subprocess.run([sys.executable, "-c", code], input=MADD, text=True, check=True,
                   env={**os.environ, "GDEV_JIT_CACHE": str(root)})


@pytest.mark.parametrize("damage", ["so_truncated", "so_empty", "manifest_truncated",
                                    "manifest_injects_cdef", "manifest_other_key"])
def test_a_damaged_entry_is_compiled_again_not_loaded(tmp_path, monkeypatch, caplog, damage):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path))
    _compiled_by_an_earlier_daemon(tmp_path)
    so, manifest = _entry(tmp_path)
    if damage == "so_truncated":      # a crash mid-write, or a full disk
        so.write_bytes(so.read_bytes()[: so.stat().st_size // 2])
    elif damage == "so_empty":
        so.write_bytes(b"")
    elif damage == "manifest_truncated":
        manifest.write_text(manifest.read_text()[:40])
    else:
        meta = json.loads(manifest.read_text())
        if damage == "manifest_injects_cdef":
            meta["kernels"] = {"add": "k0_run(struct jctx *, int64_t); void k0"}
        else:
            meta["key"] = "0" * 40
        manifest.write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING, logger="gdevd.gpu.ptx.jit.cache"):
        again = _compiled()
    assert not again.jit.compiled.cached
    assert any("is damaged" in r.message for r in caplog.records)
    _runs_exactly(again)
    assert _compiled().jit.compiled.cached           # the entry was replaced whole


@pytest.mark.skipif(os.geteuid() != 0, reason="plays another user with chown (needs root)")
@pytest.mark.parametrize("how", ["world_writable", "group_writable", "other_owner",
                                 "parent_world_writable", "symlink_to_other_owner"])
def test_a_cache_others_can_write_is_refused(tmp_path, monkeypatch, caplog, how):
    parent = tmp_path / "parent"
    root = parent / "jit"
    root.mkdir(parents=True, mode=0o700)
    target = root
    if how == "world_writable":
        root.chmod(0o777)
    elif how == "group_writable":
        root.chmod(0o770)
    elif how == "other_owner":
        os.chown(root, 65534, 65534)
    elif how == "parent_world_writable":
        parent.chmod(0o777)
    else:
        planted = tmp_path / "planted"
        planted.mkdir(mode=0o700)
        os.chown(planted, 65534, 65534)
        target = tmp_path / "link"
        target.symlink_to(planted)
    monkeypatch.setenv("GDEV_JIT_CACHE", str(target))
    monkeypatch.setattr(cache, "_refused", set())
    with caplog.at_level(logging.ERROR, logger="gdevd.gpu.ptx.jit.cache"):
        mod = _compiled()
        _compiled()
    refusals = [r.message for r in caplog.records if "refused" in r.message]
    assert len(refusals) == 1 and str(target) in refusals[0]
    assert not list(Path(os.path.realpath(target)).rglob("*.so"))
    private = cache.root()
    assert private != target and (private.stat().st_mode & 0o777) == 0o700
    assert private.stat().st_uid == os.geteuid() and list(private.rglob("*.so"))
    _runs_exactly(mod)


def test_a_sticky_world_writable_ancestor_is_trusted(tmp_path, monkeypatch):
    shared = tmp_path / "tmp-like"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("GDEV_JIT_CACHE", str(shared / "mine" / "jit"))
    assert cache.untrusted_reason(shared) is not None      # as a root it is refused
    old = os.umask(0)                  # a daemon started with umask 0
    try:
        assert cache.root() == shared / "mine" / "jit"
    finally:
        os.umask(old)
    for made in (shared / "mine", shared / "mine" / "jit"):
        assert made.stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("nice", [0, 7])
def test_the_compiler_runs_at_the_configured_niceness(tmp_path, monkeypatch, wrapped_cc,
                                                       nice):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "cache"))
    out = wrapped_cc('case " $* " in *" -shared "*) nice >> "$OUT/nice";; esac\n'
                     'exec "$REAL" "$@"')     # the compile jobs record their nice
    old = jit.compile_nice()
    jit.set_compile_nice(nice)
    try:
        _compiled()
    finally:
        jit.set_compile_nice(old)
    seen = {int(v) for v in (out / "nice").read_text().split()}
    assert seen == {min(os.nice(0) + nice, 19)}


def test_the_largest_kernels_compile_first_and_a_failure_carries_its_message(
        tmp_path, monkeypatch, wrapped_cc):
    monkeypatch.setenv("GDEV_JIT_CACHE", str(tmp_path / "cache"))
    # (the kernels' runtime, compiled first, is let through: runtime.py)
    out = wrapped_cc('case " $* " in *"/runtime."*) ;; *" -shared "*)\n'
                     '  for a; do case $a in *.c) basename "$a" >> "$OUT/order";; esac; done\n'
                     '  echo "cc: planted failure" >&2; exit 1;;\nesac\nexec "$REAL" "$@"')
    aes = load_module((Path(__file__).resolve().parents[2] / "kernels" / "aes.ptx")
                      .read_text(), "aes")
    aes.start_compile(wait=True)
    assert aes.jit.status == "failed" and "planted failure" in aes.jit.error
    names = list(aes.kernels)
    by_size = sorted(names, key=lambda n: -build._size(aes.kernels[n]))
    assert by_size[:2] == ["aes256_xts_decrypt", "aes256_xts_encrypt"]
    started = (out / "order").read_text().split()
    fnames = build._translate(aes)[1]
    assert started and started == [f"{fnames[n]}.c" for n in by_size][:len(started)]
    assert not list((tmp_path / "cache").rglob("*.json"))      # nothing cached
