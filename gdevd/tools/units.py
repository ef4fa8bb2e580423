"""Numbers in few columns, for the 80-column views of gdev-smi and gmonitor: each function
returns at most 6 characters for any value the tree can show."""

from __future__ import annotations


def size(n: float) -> str:
    """Bytes in binary units, at most 6 characters: ``0``, ``512K``, ``64.0M``, ``1.5G``."""
    if n < 1024:
        return f"{int(n)}"
    for unit in "KMGT":
        n /= 1024
        if n < 1000 or unit == "T":
            return f"{n:.0f}{unit}" if n >= 100 or unit == "K" else f"{n:.1f}{unit}"
    raise AssertionError("unreachable")


def count(n: int) -> str:
    """A count in at most 6 characters: ``123456``, ``1234k``, ``12345M``, ``1000G``."""
    for unit, scale in (("", 1), ("k", 1000), ("M", 10**6), ("G", 10**9)):
        if n < 10**6 * scale or unit == "G":
            return f"{n // scale}{unit}"
    raise AssertionError("unreachable")


def seconds(s: float) -> str:
    """Seconds in at most 6 characters: ``12.34``, ``1234.5``, ``98765``, ``12345k``,
    ``1234M``."""
    if s < 1000:
        return f"{s:.2f}"
    if s < 10_000:
        return f"{s:.1f}"
    if s < 1e6:
        return f"{s:.0f}"
    return f"{s / 1e3:.0f}k" if s < 1e9 else f"{s / 1e6:.0f}M"


def duration_us(us: int) -> str:
    """Microseconds as ``750us``, ``30ms`` or ``4295s``, at most 6 characters."""
    if us < 1000:
        return f"{us}us"
    if us < 10**7:
        return f"{us // 1000}ms"
    return f"{us // 10**6}s"


def id_list(ids: list[int], width: int = 20) -> str:
    """``0,1,2,3``, or ``0-63`` (runs as ranges) when the plain list would pass ``width``."""
    plain = ",".join(map(str, ids))
    if len(plain) <= width:
        return plain
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)
