"""scripts/bench/benchdoc.py: one section replaced, every other byte kept."""

import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scripts.bench import benchdoc

ROOT = pathlib.Path(__file__).resolve().parents[2]

RUN = benchdoc.Run(command=".venv/bin/python scripts/bench/x.py --quick")
DOC = ("# Benchmarks\n\n<!-- BEGIN a.py -->\n## A\n\nold a\n<!-- END a.py -->\n\n"
       "text between\n<!-- BEGIN b.py -->\nold b\n<!-- END b.py -->\ntail without newline")


def test_replace_keeps_the_other_sections(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(DOC)
    section = benchdoc.write_section("a.py", "A new", "new a\n", RUN, doc)
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\n" + section)
    assert text.endswith("\n\ntext between\n<!-- BEGIN b.py -->\nold b\n<!-- END b.py -->\n"
                         "tail without newline")
    assert "old a" not in text and "new a\n<!-- END a.py -->" in text
    assert "## A new\n\nCommand: `.venv/bin/python scripts/bench/x.py --quick` (" in section
    assert "CPUs, shared; load average" in section and " at end)" in section


def test_append_when_absent_and_create_when_missing(tmp_path):
    doc = tmp_path / "sub" / "benchmarks.md"
    first = benchdoc.write_section("c.py", "C", "c body", RUN, doc)
    assert doc.read_text() == "# Benchmarks\n\n" + first
    doc.write_text(DOC)
    sec = benchdoc.write_section("c.py", "C", "c body", RUN, doc)
    assert doc.read_text() == DOC + "\n\n" + sec


def test_nested_section_keeps_the_enclosing_one(tmp_path):
    """dataflow.py's table lives inside the hand-written "memory" section."""
    doc = tmp_path / "benchmarks.md"
    outer = ("<!-- BEGIN memory -->\nprose before\n\n<!-- BEGIN dataflow.py -->\nold\n"
             "<!-- END dataflow.py -->\n\nprose after\n<!-- END memory -->\n")
    doc.write_text(outer)
    benchdoc.write_section("dataflow.py", "", "| n |\n|---|\n| 256 |\n", RUN, doc)
    text = doc.read_text()
    assert text.startswith("<!-- BEGIN memory -->\nprose before\n\n<!-- BEGIN dataflow.py -->\n"
                           "Command: `")
    assert text.endswith("| 256 |\n<!-- END dataflow.py -->\n\nprose after\n"
                         "<!-- END memory -->\n")


def test_idempotent(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text(DOC)
    sec = benchdoc.write_section("b.py", "B", "body\n", RUN, doc)
    once = doc.read_text()
    assert benchdoc.replace_section(once, "b.py", sec) == once
    z = benchdoc.render("z", "Z", "z body")
    appended = benchdoc.replace_section(DOC, "z", z)
    assert benchdoc.replace_section(appended, "z", z) == appended
    assert once.count("<!-- BEGIN b.py -->") == 1


def test_unterminated_section_is_an_error(tmp_path):
    doc = tmp_path / "benchmarks.md"
    doc.write_text("<!-- BEGIN a.py -->\nno end\n")
    with pytest.raises(ValueError):
        benchdoc.write_section("a.py", "A", "x", RUN, doc)
    assert doc.read_text() == "<!-- BEGIN a.py -->\nno end\n"
    with pytest.raises(ValueError):
        benchdoc.markers("bad -->")


def test_command_line_is_relative_to_the_repository():
    cmd = benchdoc.command_line([str(ROOT / "scripts/bench/kernels.py"), "--quick"],
                                str(ROOT / ".venv/bin/python"))
    assert cmd == ".venv/bin/python scripts/bench/kernels.py --quick"


names = st.sampled_from(["a.py", "b.py", "c.py", "memory"])
bodies = st.text(st.characters(blacklist_characters="<>", blacklist_categories=["Cs"]),
                 max_size=40)


@given(st.lists(st.tuples(names, bodies), max_size=8), st.text(max_size=30))
def test_model_last_write_wins(writes, prefix):
    """Model: a dict of marker -> body; the file always holds exactly the last body of each."""
    prefix = prefix.replace("<", "")
    text, model = prefix, {}
    for name, body in writes:
        text = benchdoc.replace_section(text, name, benchdoc.render(name, "", body))
        model[name] = body
    assert text.startswith(prefix)
    for name, body in model.items():
        begin, end = benchdoc.markers(name)
        assert text.count(begin) == 1 and text.count(end) == 1
        inner = text[text.index(begin) + len(begin) + 1:text.index(end)]
        assert inner == body.rstrip("\n") + "\n"


SCRIPTS = sorted(p for p in (ROOT / "scripts" / "bench").glob("*.py")   # the writers
                 if p.name != "benchdoc.py" and "write_section(" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_script_writes_docs_only_under_write_docs(script: pathlib.Path) -> None:
    """Each call of write_section sits under ``if <args>.write_docs:`` and the script offers
    the flag through benchdoc.add_write_flag (one flag, one meaning, in every script)."""
    import ast

    tree = ast.parse(script.read_text())
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Attribute) and \
                node.test.attr == "write_docs":
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
             isinstance(n.func, ast.Attribute) and n.func.attr == "write_section"]
    assert all(id(c) in guarded for c in calls)
    assert "benchdoc.add_write_flag(" in script.read_text()


def test_make_bench_asks_for_the_docs_and_bench_quick_does_not() -> None:
    make = (ROOT / "Makefile").read_text()
    bench = [line for line in make.split("bench: bench-deps", 1)[1].split("\n\n")[0]
             .splitlines() if "$(BENCH)/" in line]
    quick = [line for line in make.split("bench-quick: bench-deps", 1)[1].split("\n\n")[0]
             .splitlines() if "$(BENCH)/" in line]
    assert len(bench) == len(SCRIPTS) == len(quick)
    assert all("--write-docs" in line for line in bench)
    assert not any("--write-docs" in line for line in quick)


@pytest.mark.parametrize("script", sorted((ROOT / "scripts" / "bench").glob("[!_]*.py")),
                         ids=lambda p: p.name)
def test_every_script_imports_as_a_module_without_path_edits(script: pathlib.Path) -> None:
    """scripts.bench is a package: a script finds its siblings (benchdoc, daemon) and the
    project through the installed tree, never through sys.path edits."""
    import ast
    import importlib

    text = script.read_text()
    assert "sys.path" not in text
    siblings = {p.stem for p in script.parent.glob("*.py")}
    for node in ast.walk(ast.parse(text)):           # imports inside functions too
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        bare = [n for n in names if n.split(".")[0] in siblings]
        assert not bare, f"{script.name}:{node.lineno} imports {bare}: use scripts.bench"
    module = importlib.import_module(f"scripts.bench.{script.stem}")
    assert module.__doc__
