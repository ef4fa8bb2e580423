"""The on-disk cache of compiled kernels: where it is, whether to trust it, whole entries.

Each kernel's shared object is kept by the hash of its C (its function name,
``ROOT/obj/HH/NAME.so`` and ``NAME.sum``, its size and digest), so a module that shares a
kernel with one compiled before, or is compiled again after an edit of another kernel,
compiles only what is new, and each kernel can run as soon as its own object exists.  A
module's entry is its manifest ``ROOT/KK/KEY.json`` (``KK`` = the key's first two hex
digits): the key, the C function of each compiled kernel, the reason for each rejected one.
Both are written to a temporary name and renamed, the voucher last, so a reader never sees
half a file from a live writer.  A crash or a full disk can still leave a short or empty
file behind (renames are not flushed), and anyone able to write to the directory could
plant code that the daemon would ``dlopen``; so:

* **Integrity**: an entry is used only if its manifest parses, names this key and lists
  well-formed function names, and an object only if its ``.so`` has the size and digest its
  summary records; anything else is logged and rebuilt (the new file replaces it).
* **Trust**: the cache root and every directory above it must be owned by root or by us and
  not writable by group or others (an ancestor may be world-writable with the sticky bit,
  as ``/tmp`` is); entries must be regular files owned by us.  A root that fails is refused
  with one log line, and compiled modules go to a private temporary directory instead,
  removed at exit.

* **Bounded**: the cache keeps at most :func:`limit` bytes (``$GDEV_JIT_CACHE_MAX``, 2 GiB by
  default): after each build :func:`prune` deletes the least recently used entries and
  objects (a use touches the manifest or summary) down to 90% of it, so tenants loading ever
  new modules cannot fill the daemon's disk.  A deleted entry is compiled again when wanted.
  A prune lists the whole cache (0.37 s at 14,000 entries), so a process scans again only
  when what it stored since its last scan could have taken the cache over the bound, or
  reaches 1/SCAN_SHARE of it: the cache may exceed the bound by that share for each process
  storing into it between two of its scans.
* **One builder per key**: :func:`building` holds an exclusive ``flock`` on ``KEY.lock``
  while a process compiles ``KEY``; a second process (or thread) that wants the same key
  waits for it and then finds the entry, so two daemons or tenants loading one module at
  once compile it once.  The lock dies with its holder's open file, so a builder killed
  mid-compile releases it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
FUNCTION = re.compile(r"h[0-9a-f]{20}")   # the C names build.py gives kernels (cdef input)
DEFAULT_MAX = 2 << 30   # bytes the cache keeps (GDEV_JIT_CACHE_MAX)
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_refused: set[Path] = set()
SCAN_SHARE = 64     # a process lists the cache again once it stored 1/64 of the bound
# base -> [bytes the last prune's scan left, bytes this process stored since]
_scans: dict[Path, list[int]] = {}
_scans_lock = threading.Lock()


def configured() -> Path:
    """Where compiled modules are kept: ``$GDEV_JIT_CACHE`` or ``~/.cache/gdev-py/jit``."""
    env = os.environ.get("GDEV_JIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "gdev-py" / "jit"


def untrusted_reason(path: Path) -> str | None:
    """Why directory ``path`` (existing) may hold code planted by someone else, or None.

    ``path`` must be owned by root or the effective user and writable by no one else; so
    must every directory above it, except that a sticky world-writable one (``/tmp``) is
    fine above it, since no one else can rename or replace what we own there.
    """
    uid = os.geteuid()
    real = Path(os.path.realpath(path))
    for k, d in enumerate([real, *real.parents]):
        st = os.stat(d)
        if not stat.S_ISDIR(st.st_mode):
            return f"{d} is not a directory"
        if st.st_uid not in (0, uid):
            return f"{d} is owned by uid {st.st_uid}"
        sticky = k > 0 and st.st_mode & stat.S_ISVTX
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not sticky:
            return f"{d} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def root() -> Path:
    """The cache directory to use now: the configured one, created private if missing, or,
    if it cannot be trusted (:func:`untrusted_reason`), a private temporary directory."""
    want = configured()
    try:
        make_private(want)
        why = untrusted_reason(want)
    except OSError as exc:
        why = f"cannot use it: {exc.strerror}"
    if why is None:
        return want
    fallback = _private_dir()
    if want not in _refused:
        _refused.add(want)
        log.error("JIT cache %s refused (%s): compiled modules go to %s until exit",
                  want, why, fallback)
    return fallback


def make_private(path: Path) -> None:
    """Create ``path`` and its missing parents, each mode 0700 (``mkdir -p`` would give
    the parents the umask's mode, world-writable under umask 0)."""
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for p in reversed(missing):
        p.mkdir(mode=0o700, exist_ok=True)


@functools.cache
def _private_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="gdev-jit-cache-"))   # mode 0700, ours
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@dataclass(frozen=True)
class Entry:
    """A module's cache entry: its manifest's tables."""

    kernels: dict[str, str]
    rejected: dict[str, str]


@contextlib.contextmanager
def building(base: Path, key: str, cancelled: Callable[[], bool] = lambda: False
             ) -> Iterator[None]:
    """Hold the exclusive build lock of ``key`` under ``base`` (waiting for another holder,
    polling ``cancelled`` meanwhile: ``Cancelled`` from :mod:`.jobs` if it turns true)."""
    from .jobs import Cancelled
    lock = base / key[:2] / f"{key}.lock"
    lock.parent.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if cancelled():
                    raise Cancelled("compile cancelled") from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)                    # releases the lock


def manifest_path(base: Path, key: str) -> Path:
    """The manifest of ``key`` under cache root ``base``."""
    return base / key[:2] / f"{key}.json"


def lookup(base: Path, key: str) -> Entry | None:
    """The intact entry of ``key``, or None when there is none or it is damaged (logged);
    its objects are checked as they are loaded (:func:`object_lookup`)."""
    manifest = manifest_path(base, key)
    if not manifest.exists():
        return None
    try:
        meta = json.loads(read_own(manifest))
        _check_manifest(meta, key)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("JIT cache entry %s is damaged (%s): compiling it again", manifest, exc)
        return None
    _touch(manifest)
    return Entry(meta["kernels"], meta["rejected"])


def _check_manifest(meta, key: str) -> None:
    """ValueError unless ``meta`` is a manifest of ``key`` with well-formed tables."""
    if not isinstance(meta, dict) or meta.get("key") != key:
        raise ValueError("manifest of another key")
    kernels, rejected = meta["kernels"], meta["rejected"]
    if not (isinstance(kernels, dict) and isinstance(rejected, dict)):
        raise ValueError("malformed tables")
    for name, fn in kernels.items():
        if not (isinstance(name, str) and isinstance(fn, str) and FUNCTION.fullmatch(fn)):
            raise ValueError(f"bad function name {fn!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in rejected.items()):
        raise ValueError("malformed rejections")


def read_own(path: Path) -> bytes:
    """The bytes of regular file ``path`` if it is ours (OSError/ValueError otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()):
            raise ValueError(f"{path.name} is not our regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def digest(data: bytes) -> str:
    """The hex digest a summary records for ``data``."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()


def store(base: Path, key: str, kernels: dict[str, str], rejected: dict[str, str]) -> Entry:
    """Publish ``key``'s manifest (its kernels' objects are stored already)."""
    manifest = manifest_path(base, key)
    manifest.parent.mkdir(mode=0o700, exist_ok=True)
    meta = {"key": key, "kernels": kernels, "rejected": rejected}
    data = json.dumps(meta).encode()
    publish(manifest, data)
    _stored(base, len(data))
    return Entry(kernels, rejected)


def _stored(base: Path, nbytes: int) -> None:
    """Count ``nbytes`` just stored under ``base`` toward its next scan (:func:`prune`)."""
    with _scans_lock:
        if base in _scans:
            _scans[base][1] += nbytes


def publish(path: Path, data: bytes) -> None:
    """Write ``data`` under a temporary name beside ``path``, then rename it into place."""
    part = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(part, path)


def _object_paths(base: Path, fname: str) -> tuple[Path, Path]:
    stem = base / "obj" / fname[1:3] / fname
    return stem.with_suffix(".so"), stem.with_suffix(".sum")


def object_voucher(base: Path, fname: str) -> Path:
    """The summary file of kernel function ``fname``'s cached object."""
    return _object_paths(base, fname)[1]


def object_lookup(base: Path, fname: str) -> Path | None:
    """The intact cached shared object of kernel function ``fname``, or None (damaged:
    logged)."""
    if not FUNCTION.fullmatch(fname):
        raise ValueError(f"bad function name {fname!r}")
    obj, summary = _object_paths(base, fname)
    if not summary.exists():
        return None
    try:
        size, want = json.loads(read_own(summary))
        data = read_own(obj)
        if len(data) != size or digest(data) != want:
            raise ValueError(f"{obj.name} does not match its summary")
    except (OSError, ValueError, TypeError) as exc:
        log.warning("JIT cache object %s is damaged (%s): compiling it again", obj, exc)
        return None
    _touch(summary)
    return obj


def object_store(base: Path, fname: str, data: bytes) -> None:
    """Keep kernel function ``fname``'s shared object: the ``.so``, then the summary
    vouching for it."""
    obj, summary = _object_paths(base, fname)
    make_private(obj.parent)
    publish(obj, data)
    voucher = json.dumps([len(data), digest(data)]).encode()
    publish(summary, voucher)
    _stored(base, len(data) + len(voucher))


def _touch(voucher: Path) -> None:
    """Mark an entry or object used now (its manifest or summary: what :func:`prune` reads)."""
    with contextlib.suppress(OSError):
        os.utime(voucher)


def limit() -> int:
    """The most bytes the cache keeps: ``$GDEV_JIT_CACHE_MAX`` (bytes, or with a K, M or G
    suffix), else :data:`DEFAULT_MAX`.  ValueError names a malformed value."""
    raw = os.environ.get("GDEV_JIT_CACHE_MAX", "").strip().upper()
    if not raw:
        return DEFAULT_MAX
    m = re.fullmatch(r"([0-9]+)([KMG]?)", raw)
    if m is None:
        raise ValueError(f"GDEV_JIT_CACHE_MAX={raw!r}: want bytes, or a number with K, M or G")
    return int(m[1]) * _SUFFIX[m[2]]


# files that may sit beside a voucher: what it vouches for, and what earlier layouts of the
# cache kept there (a module's whole .so, a kernel's .o), deleted with it
_BESIDE = {".json": (".so",), ".sum": (".so", ".o")}


def _units(base: Path) -> list[tuple[float, int, list[Path]]]:
    """Every entry and object under ``base``: (last use, bytes, its files), the voucher
    (manifest or summary) first among the files."""
    out = []
    for voucher in [*base.glob("??/*.json"), *base.glob("obj/??/*.sum")]:
        files = [voucher, *(voucher.with_suffix(s) for s in _BESIDE[voucher.suffix])]
        try:
            st = voucher.lstat()
            size = sum(f.lstat().st_size for f in files if f.exists())
        except OSError:         # deleted meanwhile by another process's prune
            continue
        out.append((st.st_mtime, size, files))
    return out


def prune(base: Path, keep: Set[Path] = frozenset()) -> int:
    """Delete the least recently used entries and objects under ``base`` until it holds at
    most 90% of :func:`limit` (never those whose voucher is in ``keep``); the bytes freed.
    The voucher goes first, so a reader never finds a manifest without its ``.so``.
    Lists the cache only if this process's stores since its last scan may have taken it
    over the bound or reached 1/SCAN_SHARE of it (module docstring)."""
    cap = limit()
    with _scans_lock:
        last = _scans.get(base)
        if last is not None and sum(last) <= cap and last[1] < cap // SCAN_SHARE:
            return 0
        _scans[base] = [0, 0]   # stores from now on count toward the next scan
    units = sorted(_units(base), key=lambda u: u[0])
    total, freed = sum(u[1] for u in units), 0
    if total <= cap:
        _left(base, total)
        return 0
    for _, size, files in units:
        if total - freed <= cap * 9 // 10:
            break
        if files[0] in keep:
            continue
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                f.unlink()
        freed += size
    _left(base, total - freed)
    log.info("JIT cache %s over %d bytes: %d bytes of least recently used code deleted",
             base, cap, freed)
    return freed


def _left(base: Path, total: int) -> None:
    """Record that a scan left ``total`` bytes under ``base``."""
    with _scans_lock:
        _scans[base][0] = total
