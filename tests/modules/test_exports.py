"""Modules use the GPU only through kcuda's exported names (like a kernel module that links
against kcuda's exported symbols): no imports of the runtime or the hardware, and every
``cuda.X`` / ``kcuda.X`` they touch is in ``kcuda.__all__``.  The helper is user space: it
may import libgdev, nothing of the daemon's insides."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import kcuda

MODULES = Path(__file__).resolve().parents[2] / "gdevd" / "modules"
FORBIDDEN = ("gdevd.runtime", "gdevd.gpu", "gdevd.ioctl", "gdevd.fuse", "gdevd.gdev", "libgdev")
SOURCES = sorted(MODULES.rglob("*.py"))
# Gdev's priority extension (branch sched): used only where the driver has it (hasattr)
OPTIONAL = {"cuCtxSetPriority", "cuCtxGetPriority"}


def _imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(MODULES)))
def test_modules_import_only_kcuda(path: Path) -> None:
    tree = ast.parse(path.read_text())
    allowed = ("libgdev",) if path.name == "helper.py" else ()
    bad = [n for n in _imports(tree)
           if n.startswith(FORBIDDEN) and not n.startswith(allowed)]
    assert not bad, f"{path.name} imports {bad}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("cu") and \
                isinstance(node.value, (ast.Name, ast.Attribute)):
            owner = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
            if owner in ("cuda", "kcuda"):
                assert node.attr in {*kcuda.__all__, *OPTIONAL}, f"{path.name}: {owner}.{node.attr}"


def test_the_check_sees_the_cipher() -> None:
    assert any(p.name == "cipher.py" for p in SOURCES) and any(p.name == "helper.py"
                                                                for p in SOURCES)
