"""Horizontal bars with their values: e.g. the CPU each stage of a pipeline costs per byte."""

from __future__ import annotations

from collections.abc import Sequence

from boardlab.report.plot.axes import PALETTE, _rect, _svg, _text, fmt_num


def bars(bars: Sequence[tuple[str, float]], *, unit: str, title: str, width: int = 420) -> str:
    top = max((v for _, v in bars), default=0.0)
    row, left, head = 18, 80, 26
    body = [_text(4, 16, title, size=12, weight="bold")]
    for i, (name, v) in enumerate(bars):
        w = (width - left - 90) * v / top if top > 0 else 0
        y = head + i * row
        body.append(_text(4, y + 12, name, size=11))
        body.append(
            _rect(left, y, max(w, 0.5), row - 4, fill=PALETTE[1], title=f"{name}: {fmt_num(v)} {unit}")
        )
        body.append(_text(left + w + 4, y + 12, f"{fmt_num(v)} {unit}", size=10))
    return _svg(width, head + len(bars) * row + 6, title, body)
