"""scripts/bench/memcpy.py replaces only its own section of docs/benchmarks.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(monkeypatch: pytest.MonkeyPatch, doc: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_memcpy",
                                                  ROOT / "scripts" / "bench" / "memcpy.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "DOC", doc)
    return mod


def test_section_is_replaced_and_others_kept(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "benchmarks.md"
    bench = _bench(monkeypatch, doc)
    bench.write_section(["first"])                       # creates the file
    doc.write_text(doc.read_text() + "\n<!-- BEGIN ioctl.py -->\nother\n<!-- END ioctl.py -->\n")
    bench.write_section(["second"])
    text = doc.read_text()
    assert "second" in text and "first" not in text
    assert "<!-- BEGIN ioctl.py -->\nother\n<!-- END ioctl.py -->" in text
    assert text.count(bench.BEGIN) == 1 and text.count(bench.END) == 1
