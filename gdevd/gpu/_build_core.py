"""cffi build script for the emulated GPU's C core (out-of-line API mode).

``ffibuilder`` is picked up by setup.py (``cffi_modules``) and by ``scripts/build_core.py``.
The cdef is the header itself minus its ``#define`` expressions, so there is one source of truth.
"""

from __future__ import annotations

import pathlib
import re

from cffi import FFI

HERE = pathlib.Path(__file__).resolve().parent
CSRC = HERE / "csrc"
SOURCES = sorted(str(p.relative_to(HERE.parent.parent)) for p in CSRC.glob("*.c"))


def _cdef_from_header(text: str) -> str:
    """Strip comments; keep ``#define NAME <int>`` as ``#define NAME ...`` for cffi."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"^#define\s+(\w+)\s+.*$", r"#define \1 ...", text, flags=re.M)


ffibuilder = FFI()
ffibuilder.cdef(_cdef_from_header((CSRC / "gdev_core.h").read_text()))
ffibuilder.set_source(
    "gdevd.gpu._core",
    '#include <stdint.h>\n#include "gdev_core.h"',
    sources=SOURCES,
    include_dirs=[str(CSRC)],
    extra_compile_args=["-O3", "-Wall", "-Wextra", "-std=c11", "-D_GNU_SOURCE", "-pthread"],
    extra_link_args=["-pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
