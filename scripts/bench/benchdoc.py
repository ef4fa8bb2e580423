"""docs/benchmarks.md sections: the one place a benchmark script writes its results.

Each script owns one section between ``<!-- BEGIN marker -->`` and ``<!-- END marker -->``.
:func:`write_section` replaces that section (or appends it when the file has none) and keeps
every other byte of the file as it was. The section records how its numbers were produced:
the exact command line, the UTC time, the CPU count and the machine's load average when the
run started and when it ended (the machine is shared, so the load qualifies every number).

A script writes only when asked: :func:`add_write_flag` gives every script the same
``--write-docs`` flag (``make bench`` passes it; without it a script only prints).

Usage in a script::

    run = benchdoc.Run()                 # first thing: records the command and start load
    benchdoc.add_write_flag(parser)
    ...measure...
    if args.write_docs:
        benchdoc.write_section("kernels.py", "PTX kernels (scripts/bench/kernels.py)", body, run)
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# GDEV_BENCH_DOC=/tmp/x.md sends every script's section elsewhere (a dry run of the writers).
DOC = Path(os.environ.get("GDEV_BENCH_DOC") or ROOT / "docs" / "benchmarks.md")
HEAD = "# Benchmarks\n"


def add_write_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--write-docs`` (``args.write_docs``): replace the script's section of
    docs/benchmarks.md (and its figures).  Without it the script prints and writes nothing."""
    parser.add_argument("--write-docs", action="store_true",
                        help="replace this script's section of docs/benchmarks.md (and its "
                        "figures); default: print only")


def command_line(argv: list[str] | None = None, python: str | None = None) -> str:
    """The command that runs this process, as a user would type it from the repository root.

    ``argv`` defaults to ``sys.argv`` and ``python`` to ``sys.executable``; both are made
    relative to the repository root when they live inside it (``.venv/bin/python
    scripts/bench/x.py --quick``)."""
    argv = list(sys.argv if argv is None else argv)
    python = sys.executable if python is None else python
    words = [_relative(python)] + [_relative(argv[0]) if argv else ""] + argv[1:]
    return shlex.join(w for w in words if w)


def _relative(path: str) -> str:
    p = Path(path)
    if not p.is_absolute():
        return path
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return path


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass
class Run:
    """Facts about one benchmark run, captured when it is created (at the script's start).

    ``command`` defaults to :func:`command_line`; ``started`` is the UTC start time and
    ``load`` the 1/5/15-minute load averages at that moment."""

    command: str = field(default_factory=command_line)
    started: time.struct_time = field(default_factory=time.gmtime)
    load: str = field(default_factory=_load)
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)

    def header(self) -> str:
        """The section's provenance paragraph (ends with a blank line)."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", self.started)
        return (f"Command: `{self.command}` ({when}; {self.cpus} CPUs, shared; load average "
                f"{self.load} at start, {_load()} at end)\n\n")


def markers(marker: str) -> tuple[str, str]:
    """The BEGIN and END comment lines that delimit ``marker``'s section."""
    if not marker or "-->" in marker or "\n" in marker:
        raise ValueError(f"bad section marker {marker!r}")
    return f"<!-- BEGIN {marker} -->", f"<!-- END {marker} -->"


def render(marker: str, title: str, body: str, run: Run | None = None) -> str:
    """The full section text, markers included, ending in a newline.

    ``title`` becomes a ``##`` heading (none when empty); ``run`` adds :meth:`Run.header`."""
    begin, end = markers(marker)
    parts = [begin, "\n"]
    if title:
        parts += ["## ", title, "\n\n"]
    if run is not None:
        parts.append(run.header())
    parts += [body.rstrip("\n"), "\n", end, "\n"]
    return "".join(parts)


def replace_section(text: str, marker: str, section: str) -> str:
    """``text`` with ``marker``'s section replaced by ``section`` (a :func:`render` result).

    Everything outside the old section's BEGIN..END lines (END's newline included) is kept
    byte for byte. Without an existing section, ``section`` is appended after one blank line.
    A BEGIN without a matching END later in the file is an error, not a guess."""
    begin, end = markers(marker)
    i = text.find(begin)
    if i < 0:
        if text and not text.endswith("\n"):
            text += "\n"
        return text + ("\n" if text else "") + section
    j = text.find(end, i)
    if j < 0:
        raise ValueError(f"{begin} without {end}")
    j += len(end)
    if text.startswith("\n", j):
        j += 1
    return text[:i] + section + text[j:]


def write_section(marker: str, title: str, body: str, run: Run | None = None,
                  doc: Path | str = DOC) -> str:
    """Replace (or append) ``marker``'s section of ``doc`` and return the section written.

    ``run`` (default: a :class:`Run` made now) supplies the command line, time, CPU count and
    load. A missing ``doc`` is created with a ``# Benchmarks`` heading. The file is written
    to a temporary name and renamed, so a crash never leaves it half-written."""
    path = Path(doc)
    section = render(marker, title, body, Run() if run is None else run)
    text = path.read_text() if path.exists() else HEAD
    new = replace_section(text, marker, section)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new)
    os.replace(tmp, path)
    return section


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table (header row, separator, one line per row), ending in a newline."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def verdict(met: bool) -> str:
    """'met' or '**not met**', for the targets printed beside the measured values."""
    return "met" if met else "**not met**"


FIGURES = DOC.parent / "figures"


def pyplot():  # type: ignore[no-untyped-def]
    """matplotlib's pyplot on the Agg backend, or None when the ``bench`` extra is missing
    (``pip install -e '.[bench]'``): the caller then writes its tables without figures."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, name: str) -> str:  # type: ignore[no-untyped-def]
    """Save ``fig`` as docs/figures/``name``.png (beside the benchmarks document), close it;
    the path relative to the document, for a Markdown image link."""
    FIGURES.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    path = FIGURES / f"{name}.png"
    fig.savefig(path, dpi=90)
    fig.clf()
    import matplotlib.pyplot as plt
    plt.close(fig)
    return str(path.relative_to(DOC.parent))
