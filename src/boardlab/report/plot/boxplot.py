"""Boxplots: horizontal (one row per cell) and grouped vertical ones (groups x series), every run a dot."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Iterator, Sequence

from boardlab.analysis.document import Box
from boardlab.report.plot.axes import (
    AXIS,
    CHAR_W,
    GRID,
    INK,
    LABEL_LINE_H,
    PALETTE,
    Scale,
    _circle,
    _line,
    _rect,
    _svg,
    _text,
    _text_width,
    _tick_formatter,
    _value_axis,
    fmt_num,
    padded_domain,
    text_lines,
    title_block,
    wants_log,
    wrap,
)

# --- boxplots -----------------------------------------------------------------------------------------------

# Dots per box: a box of more runs draws this many at evenly spaced ranks of the runs inside its whiskers, and
# up to as many of those beyond (the extremes always): the same shape, and a report of a million runs that a
# browser opens. A caption under the plot says so.
MAX_DOTS = 200
THINNED = (
    "Over {0} runs in a box: {0} dots at evenly spaced ranks, at most {0} beyond the whiskers and "
    "{0} invalid."
)


def box_stats(values: Sequence[float]) -> tuple[float, float, float, float, float]:
    """(whisker low, q1, median, q3, whisker high): quartiles by linear interpolation (as boardlab.stats),
    whiskers at the most extreme values within 1.5 IQR of the quartiles (Tukey)."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    iqr = q3 - q1
    lo = min(x for x in xs if x >= q1 - 1.5 * iqr)
    hi = max(x for x in xs if x <= q3 + 1.5 * iqr)
    return lo, q1, med, q3, hi


def _ranks(xs: list[float], m: int) -> list[float]:
    """m values at evenly spaced ranks of sorted `xs`, the first and the last included (all when fewer)."""
    if len(xs) <= m:
        return xs
    return [xs[round(i * (len(xs) - 1) / (m - 1))] for i in range(m)]


def dots(vals: Sequence[float], lo: float, hi: float) -> Sequence[float]:
    """The values a box draws as dots: every run up to MAX_DOTS, else MAX_DOTS at evenly spaced ranks of those
    within the whiskers [lo, hi] and up to MAX_DOTS of those beyond, in value order."""
    if len(vals) <= MAX_DOTS:
        return vals
    xs = sorted(vals)
    inside = [x for x in xs if lo <= x <= hi]
    beyond = [x for x in xs if x < lo or x > hi]
    return _ranks(inside, MAX_DOTS) + _ranks(beyond, MAX_DOTS)


def excluded_dots(excluded: Sequence[float | None]) -> Sequence[float | None]:
    """The invalid runs a box draws as hollow dots: all up to MAX_DOTS, else MAX_DOTS at evenly spaced
    ranks."""
    if len(excluded) <= MAX_DOTS:
        return excluded
    return _ranks(sorted(_finite(excluded)), MAX_DOTS)


def boxplot(
    boxes: Sequence[Box],
    *,
    title: str,
    unit: str,
    log: bool | None = None,
    width: int = 800,
    seed: int = 0,
) -> str:
    """Horizontal boxplots, one row per box, sharing a value axis; every run drawn as a jittered dot.

    `log` None picks a log axis when the values span more than 20x. Hollow dots are runs that did not
    count (invalid): shown so nothing is hidden, left out of the box.
    """
    extremes, kind = _values_and_axis(boxes, log)
    wrapped = [wrap(b.label, 44) for b in boxes]  # a long label wraps onto more lines, never cut
    row_h, top = max(30, LABEL_LINE_H * max((len(w) for w in wrapped), default=1) + 6), 34
    label_chars = min(max((len(b.label) for b in boxes), default=4), 44)
    left = 16 + _text_width("M" * label_chars, 12)
    right = 64
    bottom_axis = top + row_h * max(len(boxes), 1) + 6
    height = bottom_axis + 40
    body = [_text(10, 20, title, size=14, weight="bold")]
    if not extremes:
        body.append(_text(left, top + 16, "no run values to plot", fill=AXIS))
        return _svg(width, height, title, body)
    scale = Scale(*padded_domain(extremes, kind), left, width - right, kind)
    body += _value_axis(scale, bottom_axis, top - 4, _tick_formatter(kind), horizontal=True)
    body.append(_line(left, bottom_axis, width - right, bottom_axis))
    axis_label = f"{unit} (log scale)" if kind == "log10" else unit
    body.append(_text((left + width - right) / 2, bottom_axis + 33, axis_label, anchor="middle", size=12))
    rng = random.Random(seed)
    thinned = False
    for i, b in enumerate(boxes):
        color = PALETTE[i % len(PALETTE)]
        cy = top + row_h * i + row_h / 2
        lines = wrapped[i]
        body += text_lines(
            left - 10, cy + 4 - 7 * (len(lines) - 1), lines, LABEL_LINE_H, anchor="end", size=12
        )
        vals = list(_finite(b.values))
        if vals:
            lo, q1, med, q3, hi = box_stats(vals)
            hh = row_h * 0.32
            body.append(_line(scale(lo), cy, scale(q1), cy, stroke=INK))
            body.append(_line(scale(q3), cy, scale(hi), cy, stroke=INK))
            for w in (lo, hi):
                body.append(_line(scale(w), cy - hh * 0.6, scale(w), cy + hh * 0.6, stroke=INK))
            tip = (
                f"{b.label}: median {fmt_num(med, 4)} {unit}, IQR {fmt_num(q1, 4)}–{fmt_num(q3, 4)}, "
                f"n={len(vals)}"
            )
            body.append(
                _rect(
                    scale(q1),
                    cy - hh,
                    scale(q3) - scale(q1),
                    2 * hh,
                    fill=color,
                    opacity=0.18,
                    stroke=color,
                    width=1.2,
                    title=tip,
                )
            )
            body.append(_line(scale(med), cy - hh, scale(med), cy + hh, stroke=INK, width=2.5))
            thinned = thinned or len(vals) > MAX_DOTS
        for v in dots(vals, lo, hi) if vals else ():
            body.append(
                _circle(scale(v), cy + rng.uniform(-0.27, 0.27) * row_h, 2.6, fill=color, opacity=0.75)
            )
        thinned = thinned or len(b.excluded) > MAX_DOTS
        for x in excluded_dots(b.excluded):
            if x is not None and math.isfinite(x):
                jitter = rng.uniform(-0.27, 0.27) * row_h
                body.append(
                    _circle(scale(x), cy + jitter, 2.8, fill="white", stroke=color, title="invalid run")
                )
        body.append(_text(width - right + 8, cy + 4, b.note or f"n={len(vals)}", size=11, fill=AXIS))
    if thinned:
        body.append(_text(10, height + 8, THINNED.format(MAX_DOTS), size=11, fill=AXIS))
        height += 16
    return _svg(width, height, title, body)


# --- grouped (vertical) boxplots ----------------------------------------------------------------------------


def grouped_boxplot(
    groups: Sequence[tuple[str, Sequence[Box | None]]],
    *,
    series: Sequence[str],
    title: str,
    unit: str,
    x_label: str = "",
    log: bool | None = None,
    width: int = 800,
    height: int = 340,
    seed: int = 0,
) -> str:
    """Vertical boxplots: one category per group on the x axis (a load, a condition), one box per series in
    each group (an isolation mode), colored by series with a legend; with a single series each group gets its
    own color. A None slot is a combination without data. Every run is a jittered dot, hollow when it did
    not count; box = quartiles, thick line = median, whiskers = 1.5 IQR (as `boxplot`)."""
    boxes = [b for _, slots in groups for b in slots if b is not None]
    extremes, kind = _values_and_axis(boxes, log)
    n_series = max(len(series), 1)
    legend = n_series > 1 or bool(series and series[0])
    left, right = 70, 14
    top: float = 36 + (20 if legend else 0)
    n_groups = max(len(groups), 1)
    slot_w = (width - left - right) / n_groups
    longest = max((_text_width(g, 11) for g, _ in groups), default=0)
    rotate = longest > slot_w - 4
    label_h = longest * 0.6 + 14 if rotate else 18  # a rotated label whole: the plot leaves it room
    plot_bottom = height - label_h - (26 if x_label else 8)
    body, extra = title_block(title, width, 14)
    top += extra
    if legend:
        body += _series_legend(series, left)
    if not extremes:
        body.append(_text(left, top + 30, "no run values to plot", fill=AXIS))
        return _svg(width, height, title, body)
    scale = Scale(*padded_domain(extremes, kind), plot_bottom, top, kind)
    body += _value_axis(scale, left, width - right, _tick_formatter(kind), horizontal=False)
    body.append(_line(left, plot_bottom, width - right, plot_bottom))
    body.append(_line(left, top, left, plot_bottom))
    axis_label = f"{unit} (log scale)" if kind == "log10" else unit
    size = min(12.0, max(7.0, (plot_bottom - top) / max(len(axis_label), 1) / CHAR_W))  # fits, smaller
    body.append(_text(14, (top + plot_bottom) / 2, axis_label, anchor="middle", size=size, rotate=-90))
    if x_label:
        body.append(_text((left + width - right) / 2, height - 8, x_label, anchor="middle", size=12))
    rng = random.Random(seed)
    thinned = False
    box_w = min(44.0, slot_w * 0.8 / n_series)
    for gi, (name, slots) in enumerate(groups):
        x0 = left + slot_w * gi
        if gi:
            body.append(_line(x0, top, x0, plot_bottom, stroke=GRID))
        cx_label = x0 + slot_w / 2
        if rotate:
            body.append(_text(cx_label + 4, plot_bottom + 14, name, anchor="end", size=11, rotate=-35))
        else:
            body.append(_text(cx_label, plot_bottom + 15, name, anchor="middle", size=11))
        for si, b in enumerate(slots):
            if b is None:
                continue
            color = PALETTE[(si if n_series > 1 else gi) % len(PALETTE)]
            cx = x0 + slot_w / 2 + (si - (n_series - 1) / 2) * box_w
            drawn, many = _one_box(b, color, cx, box_w, scale, unit, rng)
            body += drawn
            thinned = thinned or many
    if thinned:
        body.append(_text(10, height + 8, THINNED.format(MAX_DOTS), size=11, fill=AXIS))
        height += 16
    return _svg(width, height, title, body)


def _series_legend(series: Sequence[str], left: float) -> list[str]:
    """A swatch and name per series, in a row above the plot."""
    out = []
    x: float = left
    for k, name in enumerate(series):
        color = PALETTE[k % len(PALETTE)]
        out.append(_rect(x, 29, 12, 12, fill=color, opacity=0.35, stroke=color))
        out.append(_text(x + 17, 39, name or "–", size=11))
        x += 30 + _text_width(name or "–", 11)
    return out


def _one_box(
    b: Box, color: str, cx: float, box_w: float, scale: Scale, unit: str, rng
) -> tuple[list[str], bool]:
    """One box at `cx`: whiskers, quartile box, median, a jittered dot per counted run and a hollow one per
    run that did not count; and whether its dots were thinned."""
    out = []
    half = box_w * 0.36
    vals = list(_finite(b.values))
    thinned = False
    if vals:
        lo, q1, med, q3, hi = box_stats(vals)
        out.append(_line(cx, scale(lo), cx, scale(q1), stroke=INK))
        out.append(_line(cx, scale(q3), cx, scale(hi), stroke=INK))
        for w in (lo, hi):
            out.append(_line(cx - half * 0.6, scale(w), cx + half * 0.6, scale(w), stroke=INK))
        tip = (
            f"{b.label}: median {fmt_num(med, 4)} {unit}, IQR {fmt_num(q1, 4)}–{fmt_num(q3, 4)}, "
            f"n={len(vals)}"
        )
        out.append(_rect(cx - half, scale(q3), 2 * half, scale(q1) - scale(q3), fill=color, opacity=0.18,
                         stroke=color, width=1.2, title=tip))  # fmt: skip
        out.append(_line(cx - half, scale(med), cx + half, scale(med), stroke=INK, width=2.5))
        thinned = len(vals) > MAX_DOTS
        for v in dots(vals, lo, hi):
            out.append(_circle(cx + rng.uniform(-0.3, 0.3) * box_w, scale(v), 2.3, fill=color, opacity=0.7))
    thinned = thinned or len(b.excluded) > MAX_DOTS
    for e in excluded_dots(b.excluded):
        if e is not None and math.isfinite(e):
            jitter = rng.uniform(-0.3, 0.3) * box_w
            out.append(_circle(cx + jitter, scale(e), 2.5, fill="white", stroke=color, title="invalid run"))
    return out, thinned


def _finite(values: Iterable[float | None]) -> Iterator[float]:
    """The values a box shows: recorded (not None) and finite."""
    return (v for v in values if v is not None and math.isfinite(v))


def _values_and_axis(boxes, log: bool | None) -> tuple[tuple[float, ...], str]:
    """The smallest and the largest finite value the boxes show (kept and excluded; () when none) and the
    axis they take: log10 when asked or (None) when they span widely, never with a value <= 0. The extremes
    alone set the axis (`padded_domain`, `wants_log`): a list of every value of a plot of three cells of
    300,000 runs each was 28 MB."""
    lows, highs = [], []
    for vs in (vs for b in boxes for vs in (b.values, b.excluded)):
        low = min(_finite(vs), default=None)
        if low is not None:
            lows.append(low)
            highs.append(max(_finite(vs)))
    extremes = (min(lows), max(highs)) if lows else ()
    if log is None:
        log = wants_log(extremes)
    if log and extremes and extremes[0] <= 0:
        log = False
    return extremes, "log10" if log else "linear"
