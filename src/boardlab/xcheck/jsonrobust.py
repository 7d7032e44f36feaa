"""Parsing the JSON that fio and iperf3 print, which is not always JSON.

- fio mixes non-JSON lines into its JSON output (warnings such as "fio: file hash not empty on exit" or
  "note: both iodepth >= 1 and synchronous I/O engine are selected", axboe/fio issues 731, 1685, 2048); the
  maintainer's advice is to skip lines until the output parses (axboe/fio issue 1333).
- iperf3 prints `-nan` / `nan` / `inf` for undefined figures (esnet/iperf issue 613), which JSON forbids.
"""

from __future__ import annotations

import json
import re

# A bare nan/inf token (outside strings), as C's printf writes them.
_NONFINITE = re.compile(r"-?(?:nan|inf(?:inity)?)\b", re.IGNORECASE)


def _sanitize(text: str) -> str:
    """Replaces bare nan/inf values with null, leaving string contents alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
            continue
        m = _NONFINITE.match(text, i) if c in "-nNiI" else None
        if m:
            out.append("null")
            i = m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse(text: str, what: str = "the tool") -> dict:
    """The first JSON object in `text`, skipping any lines before it that do not parse, with non-finite
    numbers read as null. Raises ValueError naming `what` when no object parses."""
    lines = text.splitlines(keepends=True)
    decoder = json.JSONDecoder()
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("{"):
            continue
        rest = _sanitize("".join(lines[i:]))
        try:
            obj, _ = decoder.raw_decode(rest.lstrip())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    head = text.strip().splitlines()[:3]
    raise ValueError(f"no JSON object in the output of {what}: {' | '.join(head) or '(empty)'}")
