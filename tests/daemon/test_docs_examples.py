"""The code examples of the README and docs/*.md run as written.

A fenced block opened with ```` ```python runnable ```` runs in a fresh interpreter from the
repository root; ```` ```python runnable mount ```` runs against a real gdevd
(``$GDEV_MOUNT`` set).  Every other ``python`` block must say it is a ``fragment``, so that
no example escapes the choice.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(kind: str) -> list[tuple[str, str]]:
    """(doc:line, code) of every python block whose info string's words are ``kind``."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1).split() == kind.split():
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{doc.relative_to(ROOT)}:{line}", m.group(2)))
    return out


def _run(code: str, env: dict[str, str] | None = None) -> None:
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]


def test_every_python_block_is_runnable_or_a_fragment() -> None:
    kinds = {"runnable", "runnable mount", "fragment"}
    for doc in DOCS:
        for m in FENCE.finditer(doc.read_text()):
            assert " ".join(m.group(1).split()) in kinds, f"{doc.name}: ```python{m.group(1)}"
    assert blocks("runnable") and blocks("runnable mount")


@pytest.mark.parametrize("where, code", blocks("runnable"), ids=lambda x: x[:40])
def test_in_process_example_runs(where: str, code: str) -> None:
    _run(code)


@pytest.mark.mount
@pytest.mark.parametrize("where, code", blocks("runnable mount"), ids=lambda x: x[:40])
def test_mounted_example_runs(gdevd, where: str, code: str) -> None:
    _run(code, gdevd.env())
