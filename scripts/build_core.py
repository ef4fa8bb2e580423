"""Build the C core in place (``make build``); a no-op when it is up to date."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import sys
import sysconfig

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _stale(target: pathlib.Path) -> bool:
    """True if the compiled module is missing or older than any C source or the builder."""
    if not target.exists():
        return True
    srcs = list((ROOT / "gdevd/gpu/csrc").glob("*.[ch]")) + [ROOT / "gdevd/gpu/_build_core.py"]
    return any(s.stat().st_mtime > target.stat().st_mtime for s in srcs)


def main() -> int:
    """Compile ``gdevd.gpu._core`` into the source tree if it is stale."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = ROOT / "gdevd" / "gpu" / f"_core{suffix}"
    if not _stale(target):
        return 0
    os.chdir(ROOT)  # the builder names its sources relative to the project root
    spec = importlib.util.spec_from_file_location("_build_core", ROOT / "gdevd/gpu/_build_core.py")
    assert spec and spec.loader
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    ffibuilder = builder.ffibuilder

    # tmpdir "." writes gdevd/gpu/_core.c and the extension in place, next to the sources
    built = pathlib.Path(ffibuilder.compile(tmpdir=".", verbose=False))
    if built.resolve() != target:
        shutil.copy2(built, target)
    print(f"built {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
