"""Import direction: data flows client -> protocol -> dispatch -> runtime -> engines.

Every module's AST is walked (imports inside functions count too):

- the client (``libgdev``) imports no ``gdevd`` module;
- ``gdevd`` imports from ``libgdev`` only the protocol surface (``libgdev.PROTOCOL``), and the
  protocol surface imports nothing else of ``libgdev``;
- ``procfs`` imports from the runtime only its public face (the package, its constants and
  defaults), not its internals;
- the hardware (``gdevd.gpu``) imports nothing above it (runtime, ioctl, fuse, modules).

:data:`KNOWN_GAPS` lists, by file, the imports that still break a rule; the test fails when
one disappears too, so the list shrinks with the code.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import libgdev

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("libgdev", "gdevd", "procfs", "kcuda")
PROCFS_MAY = ("gdevd.runtime", "gdevd.runtime.constants", "gdevd.runtime.defaults",
              "gdevd.errors")
ABOVE_GPU = ("gdevd.runtime", "gdevd.ioctl", "gdevd.fuse", "gdevd.modules", "gdevd.daemon",
             "gdevd.gdev", "procfs", "libgdev")

# (file, imported module): the rule breaks that remain, each a client process or a gap.
KNOWN_GAPS = {
    # the ecryptfs helper is a client process of its own (it uses the CUDA layer)
    ("gdevd/modules/ecryptfs/helper.py", "libgdev.cuda"),
    # procfs' scheduler entries read the runtime's scheduler classes (issue 18, item 5)
    ("procfs/sched.py", "gdevd.runtime.sched"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of every module ``path`` imports (``from a import b`` counts as a.b
    when a.b is a module, else as a)."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path) if path.name == "__init__.py" else \
        _module_name(path).rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for a in node.names:
                sub = f"{base}.{a.name}"
                names.add(sub if _is_module(sub) else base)
    return names


def _is_module(name: str) -> bool:
    rel = ROOT / Path(*name.split("."))
    return rel.with_suffix(".py").exists() or (rel / "__init__.py").exists()


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _violation(src: str, name: str) -> bool:
    if src.startswith("libgdev"):
        if _under(name, ("gdevd", "procfs", "kcuda")):
            return True
        return src in libgdev.PROTOCOL and _under(name, ("libgdev",)) and \
            name not in (*libgdev.PROTOCOL, "libgdev")
    if src.startswith("gdevd.gpu") and _under(name, ABOVE_GPU):
        return True
    if src.startswith("gdevd") and _under(name, ("libgdev",)):
        return name not in (*libgdev.PROTOCOL, "libgdev")
    if src.startswith("procfs") and _under(name, ("gdevd.runtime",)):
        return name not in PROCFS_MAY
    return False


def _all_violations() -> set[tuple[str, str]]:
    found = set()
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            src = _module_name(path)
            for name in _imports(path):
                if _violation(src, name):
                    found.add((str(path.relative_to(ROOT)), name))
    return found


def test_imports_flow_one_way() -> None:
    found = _all_violations()
    assert found - KNOWN_GAPS == set(), "imports against the layering"
    assert KNOWN_GAPS - found == set(), "gaps closed: remove them from KNOWN_GAPS"


def test_the_rules_catch_a_breach() -> None:
    assert _violation("libgdev.cuda.module", "gdevd.gpu.ptx")
    assert _violation("gdevd.ioctl.backend", "libgdev.handle")
    assert _violation("libgdev.abi", "libgdev.handle")
    assert _violation("gdevd.gpu.compute", "gdevd.runtime.system")
    assert _violation("procfs.table", "gdevd.runtime.system")
    assert not _violation("gdevd.ioctl.server", "libgdev.abi")


@pytest.mark.parametrize("module", libgdev.PROTOCOL)
def test_the_protocol_surface_imports_alone(module: str) -> None:
    code = (f"import sys, {module}\n"
            "extra = sorted(m for m in sys.modules if m.startswith(('libgdev.', 'gdevd', "
            "'numpy')))\nprint(' '.join(extra))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert set(out) <= set(libgdev.PROTOCOL), out
