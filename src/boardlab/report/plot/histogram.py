"""Histograms of merged latency buckets: log counts, linear or log value axis, the overflow as a bar."""

from __future__ import annotations

import math
from collections.abc import Sequence

from boardlab.report.plot.axes import (
    AXIS,
    GRID,
    INK,
    PALETTE,
    Scale,
    _line,
    _rect,
    _svg,
    _text,
    _text_width,
    fmt_si,
    fmt_tick,
    log_ticks,
    nice_ticks,
    text_lines,
    tick_labels,
    title_block,
    wrap,
)

# --- histograms ---------------------------------------------------------------------------------------------


def bin_factor(n_buckets: int, max_bars: int) -> int:
    """Buckets per drawn bar: 1, 2, 5, 10, 20, 50, ... so that at most `max_bars` bars cover `n_buckets`."""
    k = 0
    while True:
        f = (1, 2, 5)[k % 3] * 10 ** (k // 3)
        if math.ceil(n_buckets / f) <= max_bars:
            return f
        k += 1


LOG_BARS_PER_DECADE = 30


def histogram_bars(
    counts: Sequence[int], n_buckets: int, *, x_log: bool, max_bars: int = 160
) -> list[tuple[int, int, int]]:
    """The non-empty bars of the first `n_buckets` buckets: (first bucket, end bucket, summed count).

    Linear: every bar `bin_factor` buckets wide. Log: one bar per bucket while buckets are wider than
    1/LOG_BARS_PER_DECADE of a decade, then bars of equal width on the log axis (edges at 10^(j/30), rounded
    up to whole buckets)."""
    if x_log:
        edges = {0, n_buckets}
        j = 0
        while (e := math.ceil(10 ** (j / LOG_BARS_PER_DECADE) - 1e-9)) < n_buckets:
            edges.add(e)
            j += 1
        bounds = sorted(edges)
    else:
        f = bin_factor(n_buckets, max_bars)
        bounds = [*range(0, n_buckets, f), n_buckets]
    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        total = sum(counts[a:b])
        if total:
            out.append((a, b, total))
    return out


def histogram_plot(
    counts: Sequence[int],
    bucket_width: float,
    overflow: int,
    *,
    title: str,
    unit: str,
    subtitle: str | None = None,
    x_max: float | None = None,
    x_min: float | None = None,
    x_log: bool | None = None,
    y_max: float | None = None,
    show_overflow: bool | None = None,
    markers: Sequence[tuple[str, float]] = (),
    width: int = 440,
    height: int = 250,
    max_bars: int = 160,
    color: str = PALETTE[0],
    title_size: int = 12,
) -> str:
    """A latency histogram: x = value from 0 to `x_max` (default: the last non-empty bucket), y = samples on a
    log scale, so a single late sample stays visible beside millions of ordinary ones. x is linear with one
    bar per bucket when at most `max_bars` buckets are shown; beyond that (`x_log` None) a log axis keeps the
    bulk of fast samples readable beside a tail decades longer, with bars of equal width on that axis
    (`histogram_bars`); the y label says what a bar holds. The overflow (samples at or beyond the histogram's
    limit) is a last bar of its own, labelled ">= limit": its values are unknown. `markers` are dashed
    vertical lines (label, value), e.g. the p99. Shared `x_min`, `x_max`, `x_log` and `y_max` make panels
    comparable."""
    limit = len(counts) * bucket_width
    last = max((i for i, c in enumerate(counts) if c), default=-1)
    x_hi = x_max if x_max is not None else (last + 1) * bucket_width
    x_hi = max(min(x_hi, limit), bucket_width)
    n_buckets = max(1, math.ceil(x_hi / bucket_width - 1e-9))
    if x_log is None:
        x_log = n_buckets > max_bars
    bars = histogram_bars(counts, n_buckets, x_log=x_log, max_bars=max_bars)
    if show_overflow is None:
        show_overflow = overflow > 0
    top_count = max([c for _, _, c in bars] + ([overflow] if show_overflow else []) + [1])
    small = width < 500
    left, right = (54 if small else 66), 12
    body, extra = title_block(title, width, title_size, 8, 18)  # a long title wraps; the figure grows
    sub = wrap(subtitle, int((width - 16) / (11 * 0.55))) if subtitle else []
    body += text_lines(8, 33 + extra, sub, 13, size=11)
    grow = int(extra + 13 * max(len(sub) - 1, 0))
    height += grow
    top = 30 + (14 if subtitle else 0) + grow
    plot_bottom = height - 40
    over_w = 46 if show_overflow else 0
    plot_right = width - right - over_w - (8 if show_overflow else 0)
    x_end = n_buckets * bucket_width
    # a log axis starts a little below `x_min` (the smallest latency to show), bucket 0 ([0, w)) at w/2
    x_lo = max(bucket_width / 2, (x_min or 0) / 1.25)
    sx = Scale(x_lo, x_end, left, plot_right, "log10") if x_log else Scale(0.0, x_end, left, plot_right)

    def at(v: float) -> float:
        return sx(max(v, x_lo)) if x_log else sx(v)

    sy = Scale(0.5, max(y_max or 0, top_count) * 1.6, plot_bottom, top, "log10")
    if x_log:
        xticks = [t for t in log_ticks(x_lo, x_end) if t <= x_end]
        xlabels = tick_labels(xticks, fmt_si)
    else:
        xticks = [t for t in nice_ticks(0.0, x_end, 4 if small else 6) if t >= 0]
        xlabels = tick_labels(xticks, fmt_tick)
    for t, label in zip(xticks, xlabels, strict=True):
        p = at(t)
        body.append(_line(p, top, p, plot_bottom, stroke=GRID))
        body.append(_text(p, plot_bottom + 14, label, anchor="middle", size=10, fill=AXIS))
    yticks = [t for t in log_ticks(1.0, sy.hi) if t >= 1 and float(t).is_integer()]
    for t, label in zip(yticks, tick_labels(yticks, fmt_si), strict=True):
        p = sy(t)
        body.append(_line(left, p, plot_right, p, stroke=GRID))
        body.append(_text(left - 6, p + 4, label, anchor="end", size=10, fill=AXIS))
    body.append(_line(left, plot_bottom, plot_right, plot_bottom))
    body.append(_line(left, top, left, plot_bottom))
    body.append(
        _text(12, (top + plot_bottom) / 2, f"{_per_bar(bars, bucket_width, unit, x_log)} (log)",
              anchor="middle", size=10, rotate=-90)
    )  # fmt: skip
    x_label = f"latency [{unit}]" + (" (log scale)" if x_log else "")
    body.append(_text((left + plot_right) / 2, plot_bottom + 30, x_label, anchor="middle", size=11))
    if not bars and not overflow:
        body.append(_text(left + 10, top + 30, "no samples", fill=AXIS))
    for a, b, total in bars:
        lo_v, hi_v = a * bucket_width, b * bucket_width
        x0, x1 = at(lo_v), at(hi_v)
        y = sy(total)
        body.append(
            _rect(x0, y, max(x1 - x0 - (0.4 if x1 - x0 > 2 else 0), 0.8), plot_bottom - y, fill=color,
                  opacity=0.85, title=f"[{fmt_tick(lo_v)}, {fmt_tick(hi_v)}) {unit}: {total} samples")
        )  # fmt: skip
    body += _markers(markers, at, x_end, top, plot_bottom, plot_right)
    if show_overflow:
        body += _overflow_bar(overflow, limit, unit, sy, width - right - over_w, over_w, top, plot_bottom)
    return _svg(width, height, title, body)


def _per_bar(bars, bucket_width: float, unit: str, x_log: bool) -> str:
    """What one bar counts, for the y title: a log axis' bars, or a linear one's bucket width."""
    widths = {b - a for a, b, _ in bars}
    if x_log:
        return "samples per bar"
    if widths and max(widths) * bucket_width != 1:
        return f"samples per {fmt_tick(max(widths) * bucket_width)} {unit}"
    return "samples"


def _markers(markers, at, x_end: float, top: float, bottom: float, plot_right: float) -> list[str]:
    """Dashed vertical lines at `markers` (label, value), each label beside its line, kept inside the plot."""
    out = []
    for k, (label, v) in enumerate(markers):
        if v is None or not 0 <= v <= x_end:
            continue
        p = at(v)
        mark = PALETTE[1 + k % 3]
        out.append(_line(p, top, p, bottom, stroke=mark, width=1.2, dash="4 3"))
        near_end = p > plot_right - _text_width(label, 10) - 4
        out.append(_text(p - 3 if near_end else p + 3, top + 10 + 11 * k, label, size=10, fill=mark,
                         anchor="end" if near_end else "start"))  # fmt: skip
    return out


def _overflow_bar(overflow: int, limit: float, unit: str, sy, ox: float, over_w: float, top: float,
                  bottom: float) -> list[str]:  # fmt: skip
    """The samples at or beyond the histogram's limit: a bar of its own past a dashed line, its values
    unknown."""
    out = [_line(ox - 4, top, ox - 4, bottom, stroke=AXIS, dash="2 3")]
    text = f">= {fmt_tick(limit)}"
    if overflow:
        y = sy(overflow)
        title = f"overflow: {overflow} samples at or beyond {fmt_tick(limit)} {unit} (values unknown)"
        out.append(_rect(ox + 6, y, over_w - 12, bottom - y, fill=PALETTE[1], opacity=0.85, title=title))
        out.append(_text(ox + over_w / 2, y - 4, str(overflow), anchor="middle", size=10, fill=INK))
    else:
        out.append(_text(ox + over_w / 2, bottom - 4, "0", anchor="middle", size=10, fill=AXIS))
    out.append(_text(ox + over_w / 2, bottom + 14, text, anchor="middle", size=10, fill=INK))
    return out
