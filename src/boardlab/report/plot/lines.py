"""Line plots: series against time or size, with optional error bars and breaks at gaps."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

from boardlab.analysis.document import Line
from boardlab.report.plot.axes import (
    AXIS,
    GRID,
    INK,
    PALETTE,
    Scale,
    _circle,
    _f,
    _line,
    _rect,
    _svg,
    _text,
    _text_width,
    _tick_formatter,
    fmt_num,
    padded_domain,
    text_lines,
    tick_labels,
    title_block,
    truncate,
    wrap,
)

# --- line plots ---------------------------------------------------------------------------------------------


def line_color(ln: Line, i: int) -> str:
    """A line's color: its palette index, else the i-th palette color."""
    if isinstance(ln.color, int):
        return PALETTE[ln.color % len(PALETTE)]
    return ln.color or PALETTE[i % len(PALETTE)]


def downsample(
    points: Sequence[tuple[float, float | None]], max_points: int
) -> list[tuple[float, float | None]]:
    """Mean per equal-width x bucket, keeping breaks (None): a long series stays a small SVG."""
    if len(points) <= max_points:
        return list(points)
    xs = [x for x, _ in points]
    lo, hi = min(xs), max(xs)
    span = (hi - lo) or 1.0
    buckets: dict[int, list[float]] = {}
    xsum: dict[int, list[float]] = {}
    breaks: set[int] = set()
    for x, y in points:
        k = min(int((x - lo) / span * max_points), max_points - 1)
        if y is None:
            breaks.add(k)
            continue
        buckets.setdefault(k, []).append(y)
        xsum.setdefault(k, []).append(x)
    out: list[tuple[float, float | None]] = []
    for k in sorted(set(buckets) | breaks):
        if k in buckets:
            out.append((statistics.fmean(xsum[k]), statistics.fmean(buckets[k])))
        if k in breaks:
            out.append((lo + span * (k + 1) / max_points, None))
    return out


def line_plot(
    lines: Sequence[Line],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_kind: str = "linear",
    y_kind: str = "linear",
    x_format: Callable[[float], str] | None = None,
    y_format: Callable[[float], str] | None = None,
    y_zero: bool = False,
    width: int = 800,
    height: int = 300,
    legend: bool = True,
    frame: str | None = None,
    title_size: int = 14,
    subtitle: str | None = None,
    x_integer: bool = False,
) -> str:
    """Lines (with optional markers and error bars) on linear, log10 or log2 axes, and a legend below.
    A `subtitle` line under the title is never truncated away (it carries e.g. a test's result).
    `x_integer`: x counts things (campaign 1, 2, 3): its ticks are whole numbers only."""
    small = width < 400
    pts = [(x, y) for ln in lines for x, y in ln.points if y is not None]
    ys = [y for _, y in pts] + [e for ln in lines for pair in (ln.errors or ()) if pair for e in pair]
    left = 50 if small else 66
    right = 12 if small else 20
    top = (30 if small else 36) + (14 if subtitle else 0)
    legend_items = legend_layout(lines, width, left, right) if legend else []
    legend_rows = max((row for *_, row, _ in legend_items), default=-1) + 1
    height += legend_rows * 18  # the legend below the plot, outside it: the plot keeps its height
    # a long title or subtitle wraps: the figure grows by its further lines
    head, extra = title_block(title, width, title_size, 8 if small else 10, 18 if small else 20)
    sub = wrap(subtitle, int((width - 16) / (11 * 0.55))) if subtitle else []  # digits, spaces: narrow
    grow = int(extra + 13 * max(len(sub) - 1, 0))
    top += grow
    height += grow
    plot_bottom = height - (34 if small else 46) - legend_rows * 18
    body = []
    if frame:
        body.append(_rect(0.5, 0.5, width - 1, height - 1, stroke=frame, width=2))
    body += head
    body += text_lines(8 if small else 10, (18 if small else 20) + 15 + extra, sub, 13, size=11, fill=INK)
    if not pts:
        body.append(_text(left, top + 30, "no data", fill=AXIS))
        return _svg(width, height, title, body)
    xs = [x for x, _ in pts]
    if x_kind != "linear" and min(xs) <= 0:
        x_kind = "linear"
    if y_kind != "linear" and min(ys) <= 0:
        y_kind = "linear"
    xlo, xhi = padded_domain(xs, x_kind, 0.03)
    ylo, yhi = padded_domain(ys, y_kind, 0.06)
    if y_zero and y_kind == "linear":
        ylo = min(0.0, ylo) if min(ys) >= 0 else ylo
    yfmt_early = y_format or _tick_formatter(y_kind)
    ylabels_early = tick_labels(Scale(ylo, yhi, 1, 0, y_kind).ticks(4 if small else 5), yfmt_early)
    widest = max((_text_width(t, 10 if small else 11) for t in ylabels_early), default=0)
    left = max(left, int(widest + (30 if small else 34)))  # the y title, a gap, the widest tick label
    sx = Scale(xlo, xhi, left, width - right, x_kind)
    sy = Scale(ylo, yhi, plot_bottom, top, y_kind)
    xfmt = x_format or _tick_formatter(x_kind)
    yfmt = y_format or _tick_formatter(y_kind)
    xticks = integer_ticks(xlo, xhi, 4 if small else 7) if x_integer else sx.ticks(4 if small else 7)
    body += _grid(sx, sy, xticks, xfmt, yfmt, small)
    body += _axis_titles(sx, sy, x_label, y_label, small)
    for i, ln in enumerate(lines):
        body += _drawn_line(ln, line_color(ln, i), sx, sy, xfmt, small)
    ly0 = sy.px0 + 44  # below the x axis' title (at +28 small, +32 wide), never on it
    for label, color, x, row, whole in legend_items:
        y = ly0 + row * 18
        body.append(_line(x, y - 4, x + 20, y - 4, stroke=color, width=2.5))
        body.append(_text(x + 26, y, label, size=11, title=whole if whole != label else None))
    return _svg(width, height, title, body)


def _grid(sx: Scale, sy: Scale, xticks, xfmt, yfmt, small: bool) -> list[str]:
    """Grid lines and tick labels of both axes (x labels thinned until none touch), and the two axes."""
    left, right, top, bottom = sx.px0, sx.px1, sy.px1, sy.px0
    out = []
    xticks, xlabels = spaced_ticks(xticks, tick_labels(xticks, xfmt), sx, 10 if small else 11)
    for t, label in zip(xticks, xlabels, strict=True):
        p = sx(t)
        out.append(_line(p, top, p, bottom, stroke=GRID))
        out.append(_text(p, bottom + 14, label, anchor="middle", size=10 if small else 11, fill=AXIS))
    yticks = sy.ticks(4 if small else 5)
    for t, label in zip(yticks, tick_labels(yticks, yfmt), strict=True):
        p = sy(t)
        out.append(_line(left, p, right, p, stroke=GRID))
        if p <= bottom - 4:  # a label lower than this prints into the first x tick's label
            out.append(_text(left - 6, p + 4, label, anchor="end", size=10 if small else 11, fill=AXIS))
    out.append(_line(left, bottom, right, bottom))
    out.append(_line(left, top, left, bottom))
    return out


def _axis_titles(sx: Scale, sy: Scale, x_label: str, y_label: str, small: bool) -> list[str]:
    """The x title under the tick labels, the y title turned along the left edge."""
    bottom, ymid = sy.px0, (sy.px1 + sy.px0) / 2
    size = 10 if small else 12
    return [
        _text((sx.px0 + sx.px1) / 2, bottom + (28 if small else 32), x_label, anchor="middle", size=size),
        _text(12 if small else 14, ymid, y_label, anchor="middle", size=size, rotate=-90),
    ]


def _drawn_line(ln: Line, color: str, sx: Scale, sy: Scale, xfmt, small: bool) -> list[str]:
    """One series: its polyline broken where a point is missing, error bars, and markers with tooltips."""
    out = []
    # each point's pixels, computed once for its line, error bar and marker (None: a break)
    pixels = [None if y is None else (sx(x), sy(y)) for x, y in ln.points]
    segments: list[list[tuple[float, float]]] = [[]]
    for px in pixels:
        if px is None:
            segments.append([])
        else:
            segments[-1].append(px)
    for seg in segments:
        if len(seg) > 1:
            d = " ".join(f"{_f(x)},{_f(y)}" for x, y in seg)
            out.append(
                f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.6" '
                'stroke-linejoin="round"/>'
            )
    for k, ((x, y), px) in enumerate(zip(ln.points, pixels, strict=True)):
        if px is None:
            continue
        err = ln.errors[k] if ln.errors and k < len(ln.errors) else None
        if err:
            out.append(_line(px[0], sy(err[0]), px[0], sy(err[1]), stroke=color, width=1.2))
        if ln.markers:
            tip = f"{ln.label}: {xfmt(x)}, {fmt_num(y, 4)}"
            out.append(_circle(px[0], px[1], 2.6 if small else 3.2, fill=color, title=tip))
    return out


def legend_layout(lines: Sequence[Line], width: int, left: float, right: float) -> list[tuple]:
    """Where each line's legend entry goes, in rows under the plot: (shown label, color, x, row, whole
    label). A label wider than the figure is cut, its whole text in a tooltip."""
    items: list[tuple[str, str, float, int, str]] = []
    x, row = left, 0
    fits = int((width - left - right - 40) / (11 * 0.62))
    for i, ln in enumerate(lines):
        shown = truncate(ln.label, fits)
        w = 26 + _text_width(shown, 11) + 14
        if x + w > width - right and x > left:
            x, row = left, row + 1
        items.append((shown, line_color(ln, i), x, row, ln.label))
        x += w
    return items


def with_gaps(points: Sequence[tuple[float, float | None]]) -> list[tuple[float, float | None]]:
    """Breaks (None) where the samples pause for longer than the plot can ignore: between runs, when the gap
    is wider than about 5 px at 800 px and than 5 sampling intervals."""
    pts = [p for p in points if p[1] is not None]
    if len(pts) < 3:
        return pts
    steps = sorted(b[0] - a[0] for a, b in zip(pts, pts[1:], strict=False))
    limit = max(5 * steps[len(steps) // 2], (pts[-1][0] - pts[0][0]) / 150)
    out: list[tuple[float, float | None]] = [pts[0]]
    for a, b in zip(pts, pts[1:], strict=False):
        if b[0] - a[0] > limit:
            out.append(((a[0] + b[0]) / 2, None))
        out.append(b)
    return out


def integer_ticks(lo: float, hi: float, target: int) -> list[float]:
    """Whole-number ticks within [lo, hi], about `target` of them, never a fraction (campaign 1.5 is none)."""
    first, last = math.ceil(lo), math.floor(hi)
    if last < first:
        return [float(round((lo + hi) / 2))]
    step = max(1, math.ceil((last - first + 1) / max(target, 1)))
    return [float(v) for v in range(first, last + 1, step)]


def spaced_ticks(ticks: Sequence[float], labels: Sequence[str], scale: Scale, size: float):
    """Every k-th tick, the smallest k at which no two labels (centred on their ticks, widths estimated per
    character) touch: "64 KiB128 KiB" never prints."""
    for k in range(1, max(len(ticks), 1) + 1):
        kept = list(range(0, len(ticks), k))
        px = [scale(ticks[i]) for i in kept]
        ws = [_text_width(labels[i], size) for i in kept]
        if all(px[j + 1] - px[j] >= (ws[j] + ws[j + 1]) / 2 + 6 for j in range(len(kept) - 1)):
            return [ticks[i] for i in kept], [labels[i] for i in kept]
    return list(ticks[:1]), list(labels[:1])
