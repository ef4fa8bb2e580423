"""The typed face (_core.pyi) names exactly what the compiled C core exports."""

from __future__ import annotations

import ast
import pathlib

from gdevd.gpu import _core


def test_stub_matches_compiled_module() -> None:
    stub = pathlib.Path(_core.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    lib_cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_Lib")
    names = {n.name for n in lib_cls.body if isinstance(n, ast.FunctionDef)}
    names |= {n.target.id for n in lib_cls.body
              if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert names == set(dir(_core.lib))
