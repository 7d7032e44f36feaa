"""Numbers as a plan and a command line write them: sizes with a K/M/G suffix read, plain numbers printed.

The one home of both, for the parameter checkers of workloads and conditions, `boardlab list` and the
commands that take a size. Reports format measured values elsewhere (analysis/format.py), with a chosen
number of significant digits; these keep every digit the user wrote.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kKMG]?)")
_SIZE_SHIFT = {"": 0, "k": 10, "K": 10, "M": 20, "G": 30}  # powers of 1024, as dd and stress-ng read them


def parse_size(value: object) -> int | None:
    """16777216, "16M", "512K" (or "512k"), "1G", "1.5M" -> bytes (powers of 1024); None when malformed."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return None
    if "." in m[1]:
        return int(float(m[1]) * (1 << _SIZE_SHIFT[m[2]]))
    return int(m[1]) << _SIZE_SHIFT[m[2]]


def size_text(n: int) -> str:
    """Bytes as a plan may write them, the inverse of parse_size: 4096 -> "4K", 4 << 30 -> "4G",
    1000 -> "1000"."""
    for suffix in ("G", "M", "K"):
        shift = _SIZE_SHIFT[suffix]
        if n and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def plain_number(x: float) -> str:
    """A number as the user would write it: 4096, not 4096.0; 0.25, 2.0689 with every digit kept."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def fmt_duration(seconds: float | None) -> str:
    """A duration as a person reads it: "45 s", "3.5 min", "2.1 h"; "–" when unknown."""
    if seconds is None or seconds < 0:
        return "–"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
