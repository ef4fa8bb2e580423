"""The README and docs/*.md point only at files that exist: Markdown links and images, and
repository paths named in the text (``docs/x.md``, ``scripts/bench/y.py``, quoted or not)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
TOP = ("docs", "scripts", "gdevd", "libgdev", "kcuda", "procfs", "kernels", "tests")
# A repository path: starts with a top-level folder, ends in a file name with an
# extension, and holds no placeholder (N, X, *, {...}, <...>).
QUOTED = re.compile(rf"(?<![\w/.$-])((?:{'|'.join(TOP)})/[A-Za-z0-9_./-]*\.[a-z]{{1,7}})\b")


def _targets(doc: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    text = doc.read_text()
    out = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in this page
        out.append((target, (doc.parent / target.split("#")[0]).resolve()))
    for path in QUOTED.findall(text):
        if not re.search(r"[*{}<>]|/[A-Z]{1,2}(/|\.)|[a-z][NX](/|\.)|XXXX", path):
            out.append((path, ROOT / path))
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_quoted_path_exists(doc: pathlib.Path) -> None:
    missing = [target for target, path in _targets(doc) if not path.exists()]
    assert missing == [], f"{doc.relative_to(ROOT)} points at missing files: {missing}"


def test_the_checker_sees_links_and_paths(tmp_path: pathlib.Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("[a](gone.md) ![b](img/gone.png) [c](https://x.org) [d](#top) "
                   "`docs/gone.md` `docs/vdN.md` `MOUNT/proc/gdev`\n")
    assert [t for t, p in _targets(doc) if not p.exists()] == \
        ["gone.md", "img/gone.png", "docs/gone.md"]


BRANCH_TALK = re.compile(r"this branch|merged with `|\(branch `|`\w+` branch|main at the time")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_state_the_system_not_branches(doc: pathlib.Path) -> None:
    """Docs describe the code as it is; which branch measured what belongs in git history."""
    talk = [m.group(0) for m in BRANCH_TALK.finditer(doc.read_text())]
    assert talk == [], f"{doc.relative_to(ROOT)} names branches: {talk}"
