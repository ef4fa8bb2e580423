"""Compile PTX modules into the JIT cache ahead of time, as the daemon would compile them::

    python -m gdevd.tools.precompile [--nice N] [--builds N] FILE.ptx...

A module's first load by a daemon (or a test) then finds its native code in the cache
(``$GDEV_JIT_CACHE`` or ``~/.cache/gdev-py/jit``, docs/ptx-engine.md) and runs compiled from
its first launch instead of on the interpreter while a background compile runs.  Use it at
install time for the modules a site runs, or at the start of a test session (tests/conftest.py
warms the session's cache with the repository's kernels this way).

Files are compiled in the order given, ``--builds`` at a time (each build runs up to one
compiler process per core; the compilers at niceness ``--nice``, default the daemon's 10).
A file the loader rejects, or that fails to compile, is reported on stderr and skipped; the
exit status is 1 if any did.  Killing this process kills its compilers (docs/ptx-engine.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gdevd.gpu.ptx import load_module
from gdevd.gpu.ptx.errors import PtxError
from gdevd.gpu.ptx.jit import build, cache


def compile_file(path: Path) -> str:
    """Compile the module in ``path`` into the cache; a one-line outcome (``cached``,
    ``compiled in S s``), ValueError naming the problem if it cannot be.  A module already
    in the cache is not even parsed."""
    try:
        text = path.read_text()
        if cache.lookup(cache.root(), build.cache_key(text)) is not None:
            return f"{path}: cached"
        mod = load_module(text, path.stem)
    except (OSError, UnicodeDecodeError, PtxError) as exc:
        raise ValueError(f"{path}: not loaded: {exc}") from None
    t0 = time.monotonic()
    try:
        compiled = build.build(mod, mod.jit.ptx)
    except RuntimeError as exc:
        raise ValueError(f"{path}: compile failed: {exc}") from None
    if compiled.cached:
        return f"{path}: cached"
    return f"{path}: compiled in {time.monotonic() - t0:.1f} s"


def main(argv: list[str] | None = None) -> int:
    """The command line above; the exit status."""
    ap = argparse.ArgumentParser(prog="python -m gdevd.tools.precompile",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE.ptx")
    ap.add_argument("--nice", type=int, default=build.nice(),
                    help="niceness of the compiler processes (0..19)")
    ap.add_argument("--builds", type=int, default=2, help="modules compiled at once")
    args = ap.parse_args(argv)
    if build.compiler() is None:
        print("no C compiler ($CC or cc): nothing to compile", file=sys.stderr)
        return 1
    build.set_nice(args.nice)
    failed = 0
    with ThreadPoolExecutor(max(1, args.builds)) as pool:
        for outcome in pool.map(_outcome, args.files):
            failed += outcome.startswith("!")
            print(outcome.lstrip("!"), file=sys.stderr if outcome.startswith("!") else
                  sys.stdout, flush=True)
    return 1 if failed else 0


def _outcome(path: Path) -> str:
    try:
        return compile_file(path)
    except ValueError as exc:
        return f"!{exc}"


if __name__ == "__main__":
    sys.exit(main())
