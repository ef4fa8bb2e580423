"""Import direction: data flows client -> protocol -> dispatch -> runtime -> engines.

Every module's AST is walked (imports inside functions count too):

- the client (``libgdev``) imports no ``gdevd`` module;
- ``gdevd`` imports from ``libgdev`` only the protocol surface (``libgdev.PROTOCOL``), and the
  protocol surface imports nothing else of ``libgdev``;
- ``procfs`` imports from the runtime only its public face (the package, its constants and
  defaults), not its internals;
- the hardware (``gdevd.gpu``) imports nothing above it (runtime, ioctl, fuse, modules);
- inside the runtime (``gdevd.runtime``) no function imports (a deferred import hides a
  cycle), and the module-level imports, those under ``if TYPE_CHECKING:`` aside, form a DAG;
- the memory manager (``gdevd.runtime.mm``) imports at load time only its own modules and
  the runtime's defaults and constants: it sits below the handles, verbs and system.

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
    return {name for node in ast.walk(tree) for name in _resolve(path, node)}


def _resolve(path: Path, node: ast.AST) -> set[str]:
    """The absolute module names one import statement of ``path`` names (none for others)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    package = _module_name(path) if path.name == "__init__.py" else \
        _module_name(path).rpartition(".")[0]
    base = node.module or ""
    if node.level:
        up = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join([*up, base] if base else up)
    return {f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base for a in node.names}


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


RUNTIME = ROOT / "gdevd" / "runtime"


def _function_imports(tree: ast.AST) -> list[int]:
    """Line numbers of the import statements inside a function (or lambda) of ``tree``."""
    return sorted({n.lineno for f in ast.walk(tree)
                   if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                   for n in ast.walk(f) if isinstance(n, ast.Import | ast.ImportFrom)})


def _load_time_imports(body: list[ast.stmt]) -> list[ast.stmt]:
    """The import statements that run when the module is imported: module and class level,
    in any block, except function bodies and ``if TYPE_CHECKING:`` bodies."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += _load_time_imports(node.orelse)
        else:
            for block in ("body", "orelse", "finalbody", "handlers"):   # handlers: except
                inner = getattr(node, block, None)
                if isinstance(inner, list):
                    found += _load_time_imports(inner)
    return found


def _runtime_graph() -> dict[str, set[str]]:
    """Runtime module -> the runtime modules it imports at load time."""
    graph = {}
    for path in sorted(RUNTIME.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        names = {n for node in _load_time_imports(tree.body) for n in _resolve(path, node)}
        src = _module_name(path)
        graph[src] = {n for n in names if _under(n, ("gdevd.runtime",)) and n != src}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as a path that ends where it starts, or [] if it is a DAG."""
    state: dict[str, int] = {}      # 1: on the current path, 2: done (no cycle through it)
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_no_function_in_the_runtime_imports() -> None:
    found = {str(p.relative_to(ROOT)): lines for p in sorted(RUNTIME.rglob("*.py"))
             if (lines := _function_imports(ast.parse(p.read_text(), str(p))))}
    assert found == {}, "imports inside functions (restructure so the dependency goes one way)"


def test_the_runtime_imports_form_a_dag() -> None:
    graph = _runtime_graph()
    assert graph["gdevd.runtime.system"] >= {"gdevd.runtime.teardown"}   # the graph is read
    assert _cycle(graph) == [], "an import cycle among runtime modules"


MM = "gdevd.runtime.mm"
MM_MAY = ("gdevd.runtime.defaults", "gdevd.runtime.constants")


def _mm_breaches(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, import) where the memory manager imports, at load time, a runtime module
    above it: it may import only its own modules and the runtime's defaults and constants."""
    return {(src, name) for src, names in graph.items() if _under(src, (MM,))
            for name in names if not _under(name, (MM, *MM_MAY))}


def test_the_memory_manager_sits_below_the_runtime() -> None:
    graph = _runtime_graph()
    assert {"gdevd.runtime.mm.swap", "gdevd.runtime.mm.memory"} <= set(graph)  # it is read
    assert _mm_breaches(graph) == set(), "the memory manager imports the runtime above it"
    assert any(_under(n, (MM,)) for n in graph["gdevd.runtime.api_mem"])


def test_the_runtime_rules_catch_a_breach() -> None:
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nimport b\n"
           "try:\n    import c\nexcept ImportError:\n    import d\n"
           "class K:\n    import e\n    def f(self):\n        import g\n"
           "def h():\n    x = lambda: __import__('i')\n    from . import j\n")
    tree = ast.parse(src)
    assert _function_imports(tree) == [12, 15]
    assert [ast.unparse(n) for n in _load_time_imports(tree.body)] == [
        "from typing import TYPE_CHECKING", "import b", "import c", "import d", "import e"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []
    assert _mm_breaches({"gdevd.runtime.mm.swap": {"gdevd.runtime.handle"}}) == {
        ("gdevd.runtime.mm.swap", "gdevd.runtime.handle")}
    assert _mm_breaches({"gdevd.runtime.mm.swap": {"gdevd.runtime.mm.swaparea",
                                                    "gdevd.runtime.defaults"}}) == set()
