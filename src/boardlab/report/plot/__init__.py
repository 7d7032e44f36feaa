"""Tiny, dependency-free SVG plots for the HTML report, one module per kind (axes, boxplot, heatmap, lines,
histogram, bars), and `draw`, which turns a document figure (`analysis.document.Figure`: a plot specification,
a record per kind of plot) into one of them. Figures are plot specifications; only this package knows SVG."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

from boardlab.analysis import document as doc
from boardlab.analysis.document import Box, Figure, HeatCell, Histogram, Line
from boardlab.report.plot.axes import (
    PALETTE,
    Scale,
    esc,
    fmt_bytes,
    fmt_num,
    fmt_si,
    fmt_tick,
    log_ticks,
    nice_ticks,
    tick_labels,
    wants_log,
)
from boardlab.report.plot.bars import bars
from boardlab.report.plot.boxplot import box_stats, boxplot, grouped_boxplot
from boardlab.report.plot.heatmap import diverging_color, heatmap
from boardlab.report.plot.histogram import LOG_BARS_PER_DECADE, histogram_bars, histogram_plot
from boardlab.report.plot.lines import downsample, line_plot, with_gaps
from boardlab.report.plot.seriesmap import MAX_LINES, series_heatmap

__all__ = [
    "LOG_BARS_PER_DECADE",
    "PALETTE",
    "Box",
    "HeatCell",
    "Line",
    "Scale",
    "bars",
    "box_stats",
    "boxplot",
    "diverging_color",
    "downsample",
    "draw",
    "fmt_bytes",
    "fmt_num",
    "fmt_tick",
    "grouped_boxplot",
    "heatmap",
    "histogram_bars",
    "histogram_plot",
    "line_plot",
    "log_ticks",
    "series_heatmap",
    "nice_ticks",
    "tick_labels",
    "wants_log",
]

FORMATS = {"bytes": fmt_bytes, "si": fmt_si}
HISTOGRAM_PANEL_WIDTH = 440  # three histograms side by side on a wide page, one per row on a phone
HISTOGRAM_MAX_BARS = 160  # more buckets than this in the shown range: a log value axis


def _line_plot(spec: doc.LinePlotSpec) -> str:
    """A line figure; with more lines than a reader tells apart (`MAX_LINES`), a heatmap of one row per line:
    decided here, for every study's figures alike."""
    args = _arguments(spec)
    for key in ("x_format", "y_format"):
        if isinstance(args[key], str):
            args[key] = FORMATS[args[key]]
    if spec.y_kind == "auto":
        ys = [y for ln in spec.lines for _, y in ln.points if y is not None]
        args["y_kind"] = "log10" if wants_log(ys, 10) else "linear"
    if len(spec.lines) > MAX_LINES:
        return series_heatmap(**args)
    return line_plot(**args)


MAX_SERIES_POINTS = 700  # per line: about one point per pixel at 800 px


def _series_plot(spec: doc.SeriesPlotSpec) -> str:
    """Monitor series: each line downsampled to about a point per pixel and broken at the gaps between runs;
    more lines than a reader tells apart, a heatmap whose columns bin the time axis."""
    args = _arguments(spec)
    if len(spec.lines) > MAX_LINES:
        return series_heatmap(**args)
    args["lines"] = [
        Line(ln.label, with_gaps(downsample(ln.points, MAX_SERIES_POINTS)), ln.errors, ln.markers, ln.color)
        for ln in spec.lines
    ]
    return line_plot(**args)


def histograms(panels: Sequence[Histogram], unit: str) -> str:
    """One histogram per panel on shared axes so the panels compare, with a caption saying how to read
    them."""
    drawn = [h for h in panels if h.counts and h.bucket_width]
    x_max = max(
        (max((i for i, n in enumerate(h.counts) if n), default=0) + 1) * h.bucket_width for h in drawn
    )
    firsts = [next(i for i, n in enumerate(h.counts) if n) * h.bucket_width for h in drawn if any(h.counts)]
    x_min = min(firsts, default=None)
    x_log = any(min(x_max, h.limit or x_max) / h.bucket_width > HISTOGRAM_MAX_BARS for h in drawn)
    y_max = 1
    for h in drawn:
        n_buckets = max(1, math.ceil(min(x_max, h.limit or x_max) / h.bucket_width - 1e-9))
        shown = histogram_bars(h.counts, n_buckets, x_log=x_log, max_bars=HISTOGRAM_MAX_BARS)
        y_max = max(y_max, h.overflow, *(n for _, _, n in shown))
    show_overflow = any(h.overflow for h in drawn)
    out = [
        '<p class="small">Per cell, the histograms of its valid runs summed bucket by bucket; y = samples on '
        "a log scale, so a single late wake-up stays visible; x = latency on axes shared by the panels, "
        + (
            "on a log scale so that the bulk and a tail decades longer both show (one bar per bucket at the "
            f"low end, then {LOG_BARS_PER_DECADE} bars per decade). "
            if x_log
            else "one bar per bucket. "
        )
        + "The last bar, labelled ≥ the histogram's limit, counts the overflow: samples whose value is "
        "unknown beyond that limit. Dashed: the p99 and the largest latency.</p>",
        '<div class="multiples">',
    ]
    for h in panels:
        if not (h.counts and h.bucket_width):
            out.append(f'<p class="small">{esc(h.title)}: no histogram ({esc(h.missing or "")}).</p>')
            continue
        out.append(
            histogram_plot(
                h.counts,
                h.bucket_width,
                h.overflow,
                title=h.title,
                unit=unit,
                subtitle=h.subtitle,
                x_max=x_max,
                x_min=x_min,
                x_log=x_log,
                y_max=y_max,
                show_overflow=show_overflow,
                markers=h.markers,
                width=HISTOGRAM_PANEL_WIDTH,
                max_bars=HISTOGRAM_MAX_BARS,
            )
        )
    out.append("</div>")
    return "".join(out)


def _arguments(spec: doc.PlotSpec) -> dict[str, Any]:
    """A spec's fields by name: the keyword arguments of its plot function (a shallow copy, so that the
    values stay the spec's own records and arrays)."""
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


# Each kind of plot specification with its drawer: one line per kind (a test checks none is missing).
PLOTS: dict[type, Callable[[Any], str]] = {
    doc.BoxplotSpec: lambda s: boxplot(**_arguments(s)),
    doc.GroupedBoxplotSpec: lambda s: grouped_boxplot(**_arguments(s)),
    doc.HeatmapSpec: lambda s: heatmap(**_arguments(s)),
    doc.LinePlotSpec: _line_plot,
    doc.SeriesPlotSpec: _series_plot,
    doc.HistogramsSpec: lambda s: histograms(**_arguments(s)),
    doc.BarsSpec: lambda s: bars(**_arguments(s)),
}


def draw(figure: Figure) -> str:
    """The SVG (or a small block of them) of a document figure."""
    try:
        plot = PLOTS[type(figure.spec)]
    except KeyError:
        raise ValueError(f"no plot for a {type(figure.spec).__name__}") from None
    return plot(figure.spec)
