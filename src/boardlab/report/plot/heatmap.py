"""A ratio heatmap (rows x columns colored by the cost ratio on a diverging log scale, verdict marks)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from boardlab.analysis.document import HeatCell
from boardlab.analysis.format import CONFOUNDED_MARK, VERDICT_MARKS
from boardlab.report.plot.axes import (
    AXIS,
    GRID,
    INK,
    LABEL_LINE_H,
    _line,
    _rect,
    _svg,
    _text,
    _text_width,
    fmt_num,
    fmt_tick,
    text_lines,
    wrap,
)

# --- heatmap ------------------------------------------------------------------------------------------------

# ColorBrewer RdBu (Brewer 2003), diverging around 1.0: blue = faster (cheaper), red = slower.
_DIVERGING = (
    (-1.0, (33, 102, 172)),
    (-0.5, (146, 197, 222)),
    (0.0, (247, 247, 247)),
    (0.5, (244, 165, 130)),
    (1.0, (178, 24, 43)),
)


def diverging_color(ratio: float | None, limit: float = 2.0) -> str:
    """Color of a cost ratio on a log scale symmetric around 1: 1/limit full blue, limit full red."""
    if ratio is None or not ratio > 0 or not math.isfinite(ratio):
        return "#dddddd"
    t = max(-1.0, min(1.0, math.log(ratio) / math.log(limit)))
    for (t0, c0), (t1, c1) in zip(_DIVERGING, _DIVERGING[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            rgb = tuple(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            return "#{:02x}{:02x}{:02x}".format(*rgb)
    return "#{:02x}{:02x}{:02x}".format(*_DIVERGING[-1][1])


def _is_dark(hex_color: str) -> bool:
    r, g, b = (int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.45


def verdict_mark(verdict: str | None, confounded: bool = False) -> str:
    mark = VERDICT_MARKS.get(verdict or "", "")
    return f"{mark}{CONFOUNDED_MARK}" if confounded else mark


def heatmap(
    rows: Sequence[str],
    cols: Sequence[str],
    cells: dict[tuple[int, int], HeatCell],
    *,
    title: str,
    width: int = 800,
    limit: float = 2.0,
) -> str:
    """Rows (workloads) x columns (conditions), colored by the cost ratio on a diverging log scale around
    1.0 (saturating at `limit` and 1/`limit`); each cell shows the ratio and the verdict mark."""
    wrapped = [wrap(r, 56) for r in rows]  # a long row label wraps, never cut
    label_chars = min(max((len(r) for r in rows), default=4), 56)
    left = 16 + _text_width("M" * label_chars, 12)
    n_cols = max(len(cols), 1)
    cell_w = max(64.0, min(140.0, (width - left - 16) / n_cols))
    longest_col = max((_text_width(c, 11) for c in cols), default=0)
    rotate = longest_col > cell_w - 6
    # a turned label reaches right of its column by cos(35°) of its length: the last one needs that room
    # inside the figure, or `daemon:anti-snoop` is cut at the edge
    tail = max(0.0, _text_width(cols[-1], 11) * 0.82 - cell_w / 2 - 4) if rotate and cols else 0.0
    if tail:
        cell_w = max(64.0, min(140.0, (width - left - 16 - tail) / n_cols))
    head = 40 + (longest_col * 0.7 if rotate else 18)
    cell_h = max(34, LABEL_LINE_H * max((len(w) for w in wrapped), default=1) + 8)
    grid_w = cell_w * n_cols
    width = max(width, int(left + grid_w + tail + 16))
    height = head + cell_h * len(rows) + 84
    body = [_text(10, 20, title, size=14, weight="bold")]
    for j, c in enumerate(cols):
        cx = left + cell_w * j + cell_w / 2
        if rotate:
            body.append(_text(cx - 4, head - 8, c, anchor="start", size=11, rotate=-35))
        else:
            body.append(_text(cx, head - 8, c, anchor="middle", size=11))
    for i, lines in enumerate(wrapped):
        cy = head + cell_h * i
        y0 = cy + cell_h / 2 + 4 - 7 * (len(lines) - 1)
        body += text_lines(left - 8, y0, lines, LABEL_LINE_H, anchor="end", size=12)
        for j in range(len(cols)):
            x = left + cell_w * j
            cell = cells.get((i, j))
            if cell is None:
                body.append(_rect(x + 1, cy + 1, cell_w - 2, cell_h - 2, fill="#ffffff", stroke=GRID))
                continue
            fill = diverging_color(cell.ratio, limit)
            body.append(
                _rect(
                    x + 1,
                    cy + 1,
                    cell_w - 2,
                    cell_h - 2,
                    fill=fill,
                    stroke="#ffffff",
                    title=cell.tooltip or None,
                )
            )
            ink = "#ffffff" if _is_dark(fill) else INK
            text = "n/a" if cell.ratio is None else f"{fmt_num(cell.ratio)}×"
            mark = verdict_mark(cell.verdict, cell.confounded)
            label = f"{text} {mark}".strip()
            body.append(
                _text(
                    x + cell_w / 2,
                    cy + cell_h / 2 + 4,
                    label,
                    anchor="middle",
                    size=12,
                    fill=ink,
                    weight="bold",
                    title=cell.tooltip or None,
                )
            )
    # Legend: the color scale (discrete steps: no gradient ids to clash between SVGs) and the marks.
    ly = head + cell_h * len(rows) + 22
    lx, lw, steps = left, min(320.0, width - left - 20), 40
    for k in range(steps):
        t = -1 + 2 * (k + 0.5) / steps
        body.append(
            _rect(lx + lw * k / steps, ly, lw / steps + 0.5, 12, fill=diverging_color(limit**t, limit))
        )
    body.append(_rect(lx, ly, lw, 12, stroke=AXIS, width=0.8))
    for v in (1 / limit, 0.8, 1.0, 1.25, limit) if limit > 1.3 else (1 / limit, 1.0, limit):
        x = lx + lw * (math.log(v) / math.log(limit) + 1) / 2
        body.append(_line(x, ly + 12, x, ly + 16))
        body.append(_text(x, ly + 28, f"{fmt_tick(v)}×", anchor="middle", size=10, fill=AXIS))
    body.append(_text(lx, ly - 6, "cost ratio (condition / baseline; > 1 = worse)", size=10, fill=AXIS))
    key = (
        "   ".join(f"{m} {k.replace('_', ' ')}" for k, m in VERDICT_MARKS.items())
        + f"   {CONFOUNDED_MARK} confounded"
    )
    body.append(_text(10, ly + 50, key, size=11))
    return _svg(width, height, title, body)
