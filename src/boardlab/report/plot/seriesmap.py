"""Many series as one heatmap: a row per series (sorted as a reader counts, `label_sort_key`), a column per x
value, the colour the y value on a sequential scale with its colour bar. `draw` chooses it for a line figure
with more series than a reader can tell apart by colour (`MAX_LINES`): 744 curves drawn as lines are a 1.2 MB
tangle whose legend buries the plot; as rows they are a picture of the whole sweep, each row's values in its
tooltip."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from boardlab.analysis.document import Line
from boardlab.analysis.format import label_sort_key
from boardlab.report.plot.axes import (
    AXIS,
    INK,
    Scale,
    _f,
    _line,
    _rect,
    _svg,
    _text,
    _text_width,
    _tick_formatter,
    esc,
    text_lines,
    tick_labels,
    title_block,
    wrap,
)

MAX_LINES = 8  # more lines than the palette has colours: a reader can no longer tell them apart
MAX_COLUMNS = 48  # more distinct x values than this (a time series): binned along the x scale
LABEL_CHARS = 46  # a longer row label loses its middle, its whole text in the row's tooltip
LEVELS = 32  # colours drawn: one <path> per colour keeps thousands of cells a small SVG
# viridis (van der Walt & Smith 2015): perceptually uniform, readable with colour-vision deficiencies and in
# gray
_VIRIDIS = ((0.0, (68, 1, 84)), (0.25, (59, 82, 139)), (0.5, (33, 145, 140)), (0.75, (94, 201, 98)),
            (1.0, (253, 231, 37)))  # fmt: skip


def sequential_color(t: float) -> str:
    """The colour of t in [0, 1] on the viridis scale."""
    t = max(0.0, min(1.0, t))
    for (t0, c0), (t1, c1) in zip(_VIRIDIS, _VIRIDIS[1:], strict=False):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return "#{:02x}{:02x}{:02x}".format(
                *(round(a + (b - a) * f) for a, b in zip(c0, c1, strict=True))
            )
    return "#fde725"


def abbreviated(label: str, max_chars: int) -> str:
    """A long label with its middle left out: its start names the group and its end tells the rows of a
    group apart ("pattern=seq @ policy0 1.2 GHz + policy4 1.9 GHz" keeps both the pattern and the 1.9 GHz)."""
    if len(label) <= max_chars:
        return label
    head = max_chars // 3
    tail = label[len(label) - (max_chars - head - 1) :]
    if " " in tail[1:]:  # the end from a word's start, not from the middle of one
        tail = tail[tail.index(" ", 1) + 1 :]
    return label[:head].rstrip() + "…" + tail


def _columns(lines: Sequence[Line], x_kind: str) -> tuple[list[float], Callable[[float], int]]:
    """The x value of each column and the column of an x: one per distinct x, or MAX_COLUMNS equal bins along
    the x scale (log when the axis is) when there are more."""
    xs = sorted({x for ln in lines for x, y in ln.points if y is not None})
    if len(xs) <= MAX_COLUMNS:
        index = {x: i for i, x in enumerate(xs)}
        return xs, index.__getitem__
    kind = x_kind if x_kind != "linear" and xs[0] > 0 else "linear"
    scale = Scale(xs[0], xs[-1], 0.0, float(MAX_COLUMNS), kind)
    centres = [scale.lo + (scale.hi - scale.lo) * (k + 0.5) / MAX_COLUMNS for k in range(MAX_COLUMNS)]
    if kind != "linear":
        centres = [xs[0] * (xs[-1] / xs[0]) ** ((k + 0.5) / MAX_COLUMNS) for k in range(MAX_COLUMNS)]
    return centres, lambda x: min(int(scale(x)), MAX_COLUMNS - 1)


def _rows(lines: Sequence[Line], column: Callable[[float], int], n_cols: int) -> list[tuple[str, list]]:
    """(label, the mean y of each column or None) per series, sorted by label as a reader counts."""
    rows = []
    for ln in sorted(lines, key=lambda ln: label_sort_key(ln.label)):
        sums: list[list[float]] = [[] for _ in range(n_cols)]
        for x, y in ln.points:
            if y is not None and math.isfinite(y):
                sums[column(x)].append(y)
        rows.append((ln.label, [statistics.fmean(v) if v else None for v in sums]))
    return rows


def series_heatmap(
    lines: Sequence[Line],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_kind: str = "linear",
    y_kind: str = "linear",
    x_format: Callable[[float], str] | None = None,
    y_format: Callable[[float], str] | None = None,
    width: int = 800,
    **_line_options,
) -> str:
    """The series of a line figure as rows of a heatmap (the line plot's arguments; its options of line
    drawing, such as markers and error bars, do not apply)."""
    xfmt = x_format or _tick_formatter(x_kind)
    yfmt = y_format or _tick_formatter(y_kind)
    centres, column = _columns(lines, x_kind)
    rows = _rows(lines, column, len(centres))
    values = [v for _, vs in rows for v in vs if v is not None]
    if not values:
        return _svg(
            width, 60, title, [_text(10, 20, title, size=14, weight="bold"), _text(10, 44, "no data")]
        )
    log = y_kind != "linear" and min(values) > 0
    lo, hi = min(values), max(values)
    shade = Scale(lo, hi, 0.0, 1.0, "log10" if log else "linear")
    head, extra = title_block(title, width, 14)
    note = wrap(
        f"{len(rows)} series, too many to tell apart as lines: one row each, its colour the {y_label}; "
        "a row's tooltip lists its values.",
        int((width - 16) / (11 * 0.6)),
    )
    body = head + text_lines(10, 40 + extra, note, 14, size=11, fill=AXIS)
    top = 40 + extra + 14 * len(note) + 4
    shown = [abbreviated(label, LABEL_CHARS) for label, _ in rows]
    left = 14 + max(_text_width(s, 11) for s in shown)
    grid_w = max(width - left - 16, 120.0)
    width = max(width, int(left + grid_w + 16))
    cell_w, row_h = grid_w / len(centres), max(2.0, min(16.0, 720 / len(rows)))
    body.append(_rect(left, top, grid_w, row_h * len(rows), fill="#dddddd"))  # a cell without a value
    cells_at = len(body)
    paths: dict[int, list[str]] = {}
    every = max(1, math.ceil(13 / row_h))  # a row label every `every` rows: 13 px apart, never overprinted
    for i, (label, vs) in enumerate(rows):
        y = top + row_h * i
        for j, v in enumerate(vs):
            if v is not None:
                level = min(LEVELS - 1, int(shade(v) * LEVELS))
                paths.setdefault(level, []).append(
                    f"M{_f(left + cell_w * j)} {_f(y)}h{_f(cell_w)}v{_f(row_h)}h-{_f(cell_w)}z"
                )
        tip = f"{label}: " + ", ".join(
            f"{xfmt(x)} {yfmt(v)}" for x, v in zip(centres, vs, strict=True) if v is not None
        )
        body.append(f'<rect x="{_f(left)}" y="{_f(y)}" width="{_f(grid_w)}" height="{_f(row_h)}" '
                    f'fill="#000" fill-opacity="0"><title>{esc(tip)}</title></rect>')  # fmt: skip
        if i % every == 0:
            body.append(_text(left - 6, y + row_h / 2 + 4, shown[i], anchor="end", size=11, title=label))
    body[cells_at:cells_at] = [  # the cells, under the rows' tooltips
        f'<path d="{"".join(d)}" fill="{sequential_color((k + 0.5) / LEVELS)}"/>'
        for k, d in sorted(paths.items())
    ]
    bottom = top + row_h * len(rows)
    body += _column_labels(centres, xfmt, left, cell_w, bottom)
    body.append(_text(left + grid_w / 2, bottom + 34, x_label, anchor="middle", size=12))
    body += _colour_bar(shade, yfmt, y_label, left, bottom + 58, min(320.0, grid_w))
    return _svg(width, bottom + 100, title, body)


def _column_labels(centres: Sequence[float], fmt, left: float, cell_w: float, y: float) -> list[str]:
    """The x value under every k-th column, the smallest k at which no two labels touch."""
    labels = tick_labels(centres, fmt)
    widest = max(_text_width(s, 11) for s in labels)
    every = max(1, math.ceil((widest + 6) / cell_w))
    out = []
    for j in range(0, len(centres), every):
        x = left + cell_w * (j + 0.5)
        out += [_line(x, y, x, y + 4), _text(x, y + 16, labels[j], anchor="middle", size=11, fill=AXIS)]
    return out


def _colour_bar(shade: Scale, fmt, label: str, x: float, y: float, w: float) -> list[str]:
    """The colour scale: discrete steps (no gradient ids to clash between SVGs), its ticks and its name."""
    out = [_text(x, y - 6, label, size=11, fill=INK)]
    out += [_rect(x + w * k / LEVELS, y, w / LEVELS + 0.5, 12, fill=sequential_color((k + 0.5) / LEVELS))
            for k in range(LEVELS)]  # fmt: skip
    out.append(_rect(x, y, w, 12, stroke=AXIS, width=0.8))
    ticks = [t for t in shade.ticks(4) if shade.lo <= t <= shade.hi] or [shade.lo, shade.hi]
    labels = tick_labels(ticks, fmt)
    last = -1e9
    for t, text in zip(ticks, labels, strict=True):
        px = x + w * shade(t)
        if px - _text_width(text, 10) / 2 < last + 6:  # a label that would touch the one before it
            continue
        out += [_line(px, y + 12, px, y + 16), _text(px, y + 28, text, anchor="middle", size=10, fill=AXIS)]
        last = px + _text_width(text, 10) / 2
    return out
