"""A strict parser of Prometheus' text exposition format (0.0.4), for the metrics tests.

Stricter than scrapers are: every line is a ``# HELP``, a ``# TYPE`` or a sample; a family
has exactly one HELP and one TYPE, before its samples, and its lines are contiguous; names
and label names follow the format's grammar; label values use only the three escapes;
values are Go-style floats; no series appears twice; counters end in ``_total``; the text
ends with a newline.  Anything else raises ``ValueError`` naming the line.
"""

from __future__ import annotations

import math
import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(rf"^({NAME})(?:\{{((?:{LABEL}={VALUE})(?:,{LABEL}={VALUE})*)?\}})? (\S+)$")
PAIR = re.compile(rf"({LABEL})=({VALUE})")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _unescape(quoted: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), quoted[1:-1])


def _number(text: str, lineno: int) -> float:
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise ValueError(f"line {lineno}: bad value {text!r}")
    return float(text)


def parse(text: str) -> dict[str, dict]:
    """``{family: {"type", "help", "samples": {labels tuple: value}}}``; ValueError if any
    rule is broken."""
    if not text.endswith("\n"):
        raise ValueError("exposition does not end with a newline")
    families: dict[str, dict] = {}
    current: str | None = None
    for lineno, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("# "):
            current = _comment(line, lineno, families, current)
            continue
        m = SAMPLE.match(line)
        if not m or current is None or m.group(1) != current:
            raise ValueError(f"line {lineno}: not a sample of family {current}: {line!r}")
        fam = families[current]
        if "type" not in fam:
            raise ValueError(f"line {lineno}: sample before # TYPE {current}")
        labels = tuple(sorted((k, _unescape(v)) for k, v in PAIR.findall(m.group(2) or "")))
        if len({k for k, _ in labels}) != len(labels) or labels in fam["samples"]:
            raise ValueError(f"line {lineno}: repeated label or series: {line!r}")
        value = _number(m.group(3), lineno)
        if fam["type"] == "counter" and (value < 0 or math.isnan(value)):
            raise ValueError(f"line {lineno}: counter below zero")
        fam["samples"][labels] = value
    for name, fam in families.items():
        if "help" not in fam or "type" not in fam:
            raise ValueError(f"family {name} lacks HELP or TYPE")
        if fam["type"] == "counter" and not name.endswith("_total"):
            raise ValueError(f"counter {name} does not end in _total")
    return families


def _comment(line: str, lineno: int, families: dict[str, dict], current: str | None) -> str:
    m = re.fullmatch(rf"# (HELP|TYPE) ({NAME}) ?(.*)", line)
    if not m:
        raise ValueError(f"line {lineno}: stray comment {line!r}")
    kind, name, rest = m.groups()
    if name != current and name in families:
        raise ValueError(f"line {lineno}: family {name} is not contiguous")
    fam = families.setdefault(name, {"samples": {}})
    if fam["samples"] or kind.lower() in fam:
        raise ValueError(f"line {lineno}: {kind} after samples or repeated")
    if kind == "TYPE" and rest not in TYPES:
        raise ValueError(f"line {lineno}: unknown type {rest!r}")
    if kind == "HELP" and re.search(r"\\[^\\n]", rest):
        raise ValueError(f"line {lineno}: bad escape in HELP")
    fam[kind.lower()] = rest
    return name
