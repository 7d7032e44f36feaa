"""The report's neutral document model: sections of prose, tables and figures, built once by `analysis`
and laid out by each renderer of `boardlab.report` (HTML with inline SVG, Markdown, text).

A renderer supplies only the markup (headings, paragraphs, rows and dividers, a plot for a figure), the way
hyperfine's markup exporter does; every word and number is decided here, once, for all formats. A figure is a
plot specification (a record per kind of plot holding its arguments), never SVG: `report.plot` draws it, text
and Markdown leave it out.

`formats` on a block says where it appears ("html", "md", "text"); most blocks appear everywhere. Table cells
are already-formatted strings (`analysis.format`), so the three formats print the same digits.
"""

from __future__ import annotations

import functools
import typing
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, overload

from boardlab.analysis.format import field_words

ALL = frozenset({"html", "md", "text"})
RICH = frozenset({"html", "md"})  # the text report is a compact summary: long notes stay out of it
HTML = frozenset({"html"})


@dataclass(frozen=True)
class Column:
    """A table column: its name, its unit (shown as `name [unit]`), and whether it is numeric
    (right-aligned)."""

    name: str
    unit: str | None = None
    numeric: bool = False

    @property
    def header(self) -> str:
        """`name [unit]`; a name that is a field name (`rss_MiB`, `cpu_pct_one_cpu`) in words, with the unit
        its end declares unless the column names one (analysis.format.field_words)."""
        words = field_words(self.name)
        if not self.unit or words == self.name:
            return f"{words} [{self.unit}]" if self.unit else words
        name, _, said = words.partition(" [")
        if said.startswith("% "):  # "% of one CPU" says more than the column's "%"
            return words
        return f"{name} [{self.unit}]"


@dataclass(frozen=True)
class Table:
    """Rows of formatted strings. `note_column`: a long free-text column that HTML shows as a full-width line
    under its row. `text_columns`: the columns the compact text report keeps (None = all but the note).
    `row_classes` and `cell_classes` are hints (e.g. "flagged", "v-slowdown") that only HTML uses."""

    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str | None = None
    note_column: str | None = None
    text_columns: tuple[str, ...] | None = None
    row_classes: tuple[str, ...] = ()
    cell_classes: tuple[dict[int, str], ...] = ()
    css: str = ""  # an extra class of the whole table in HTML
    badge_column: str | None = None  # a status column HTML shows as colored badges (OK / WARN / FAIL)
    fold: str | None = None  # HTML folds the table under this summary line
    emphasis_column: str | None = None  # a column HTML sets in bold (the value decided on)
    formats: frozenset[str] = ALL
    links: tuple[
        dict[int, str], ...
    ] = ()  # per row: column index -> a site-relative URL (boardlab serve's pages)
    notes: tuple[str, ...] = ()  # said once under the table instead of on every row (see `table_notes`)

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.columns)

    @property
    def numeric(self) -> tuple[bool, ...]:
        return tuple(c.numeric for c in self.columns)


@dataclass(frozen=True)
class Prose:
    """A paragraph. `small`: explanatory text (HTML sets it smaller). `strong`: a warning that must stand
    out."""

    text: str
    small: bool = False
    strong: bool = False
    banner: bool = False  # a notice at the top (a campaign still running)
    bold: tuple[str, ...] = ()  # parts of the text set in bold
    formats: frozenset[str] = ALL


@dataclass(frozen=True)
class Items:
    """A bullet list."""

    items: tuple[str, ...]
    formats: frozenset[str] = ALL


@dataclass(frozen=True)
class Preformatted:
    text: str
    summary: str | None = None  # HTML folds it under this summary line
    formats: frozenset[str] = ALL


@dataclass(frozen=True)
class Figure:
    """A plot: `spec` is one of the plot specifications below (PlotSpec), a record per kind of plot of
    `report.plot` holding exactly that plot's arguments, so a wrong or missing argument fails where the figure
    is built, not when a report is drawn. Only HTML draws figures."""

    spec: PlotSpec
    formats: frozenset[str] = HTML


@dataclass(frozen=True)
class Multiples:
    """Small multiples: figures laid side by side where the page is wide enough."""

    figures: tuple[Figure, ...]
    formats: frozenset[str] = HTML


@dataclass(frozen=True)
class Facts:
    """Label/value pairs (the report's header; the summary card). `cards`: HTML shows them as tiles."""

    pairs: tuple[tuple[str, str], ...]
    cards: bool = False
    formats: frozenset[str] = ALL
    title: str | None = None  # a group's name (the summary card's study)


Block = Table | Prose | Items | Preformatted | Figure | Multiples | Facts


@dataclass(frozen=True)
class Section:
    """A titled part of the report; `level` 2 is a top-level section, 3 a subsection."""

    title: str
    blocks: tuple[Block, ...] = ()
    level: int = 2
    formats: frozenset[str] = ALL
    anchor: str = ""  # a stable id for links and tests (HTML id)


@dataclass(frozen=True)
class Document:
    title: str
    sections: tuple[Section, ...] = field(default_factory=tuple)


# ---- plot data: the records a plot specification holds, besides numbers and strings ------------------------


@dataclass(frozen=True)
class Box:
    """One box of a boxplot group: the valid runs' values, and runs that did not count (shown hollow)."""

    label: str
    values: Sequence[float]
    excluded: Sequence[float] = ()
    note: str = ""  # shown right of the box, e.g. "n=10"


@dataclass(frozen=True)
class HeatCell:
    """One cell of a heatmap: the cost ratio (> 1 = worse), the verdict and a tooltip."""

    ratio: float | None
    verdict: str | None  # a VerdictKind, or None when there is no comparison
    confounded: bool = False
    tooltip: str = ""


@dataclass(frozen=True)
class Line:
    """A line of (x, y) points; a y of None breaks it (e.g. between runs). `errors` are optional (low, high)
    bars per point, in y units. `color`: an index into the plot palette, or None for the next one."""

    label: str
    points: Sequence[tuple[float, float | None]]
    errors: Sequence[tuple[float, float] | None] | None = None
    markers: bool = True
    color: int | None = None


class Points(Sequence[tuple[float, float]]):
    """A line's (x, y) points held as two float arrays (16 bytes a point, not a tuple and two floats' 100):
    a cell's runs in run order are tens of thousands of points. Read as a sequence of (x, y) tuples."""

    __slots__ = ("xs", "ys")

    def __init__(self, xs: Iterable[float], ys: Iterable[float]) -> None:
        self.xs, self.ys = array("d", xs), array("d", ys)
        if len(self.xs) != len(self.ys):
            raise ValueError(f"{len(self.xs)} x values for {len(self.ys)} y values")

    def __len__(self) -> int:
        return len(self.xs)

    @overload
    def __getitem__(self, i: int) -> tuple[float, float]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[float, float]]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return Points(self.xs[i], self.ys[i])
        return self.xs[i], self.ys[i]

    def __iter__(self) -> Iterator[tuple[float, float]]:
        return zip(self.xs, self.ys, strict=True)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Points) and (self.xs, self.ys) == (other.xs, other.ys)

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside: as a list, unhashable

    def __repr__(self) -> str:
        return f"Points({len(self)} points)"


@dataclass(frozen=True)
class Histogram:
    """One panel of a histogram figure: merged bucket counts (bucket i = [i*w, (i+1)*w)) and the overflow."""

    title: str
    counts: Sequence[int]
    bucket_width: float
    overflow: int
    limit: float | None
    subtitle: str = ""
    markers: Sequence[tuple[str, float]] = ()
    missing: str | None = None  # why there is no histogram to draw


# ---- plot specifications: one record per kind of plot, its fields the plot function's arguments ----------
# The names and defaults are the plot functions' own (report.plot): `draw` calls the plot with the fields.
# `kind` is what a figure was called when it was a kind and a dict of arguments: serve's .json twin of a
# report still says it (web.pages.figure_twin), so what a reader of the twin gets does not change.


@dataclass(frozen=True)
class BoxplotSpec:
    """Horizontal boxplots sharing a value axis (`report.plot.boxplot`); `log` None: decided by the span."""

    kind: ClassVar[str] = "boxplot"  # the plot's name in JSON (serve's .json twin): not a field
    boxes: Sequence[Box]
    title: str
    unit: str
    log: bool | None = None
    width: int = 800
    seed: int = 0  # of the jitter of the dots: a figure draws the same every time


@dataclass(frozen=True)
class GroupedBoxplotSpec:
    """Vertical boxplots, one category per group and one box per series in each (`report.plot
    .grouped_boxplot`); a None slot is a combination without data."""

    kind: ClassVar[str] = "grouped_boxplot"
    groups: Sequence[tuple[str, Sequence[Box | None]]]
    series: Sequence[str]
    title: str
    unit: str
    x_label: str = ""
    log: bool | None = None
    width: int = 800
    height: int = 340
    seed: int = 0


@dataclass(frozen=True)
class HeatmapSpec:
    """Rows x columns colored by a cost ratio (`report.plot.heatmap`); `cells` keyed by (row, column)."""

    kind: ClassVar[str] = "heatmap"
    rows: Sequence[str]
    cols: Sequence[str]
    cells: dict[tuple[int, int], HeatCell]
    title: str
    width: int = 800
    limit: float = 2.0  # the ratio where the colors saturate (and 1/limit)


@dataclass(frozen=True)
class LinePlotSpec:
    """Lines on linear, log10 or log2 axes (`report.plot.line_plot`; more lines than a reader tells apart, a
    heatmap of a row per line). `y_kind` "auto": log10 when the values span enough. `x_format`/`y_format`
    name a tick formatter of `report.plot.FORMATS` ("bytes", "si"): a name, so the spec stays plain data."""

    kind: ClassVar[str] = "line_plot"
    lines: Sequence[Line]
    title: str
    x_label: str
    y_label: str
    x_kind: str = "linear"
    y_kind: str = "linear"
    x_format: str | None = None
    y_format: str | None = None
    y_zero: bool = False
    width: int = 800
    height: int = 300
    legend: bool = True
    frame: str | None = None  # a border color
    title_size: int = 14
    subtitle: str | None = None
    x_integer: bool = False


@dataclass(frozen=True)
class SeriesPlotSpec:
    """Monitor series over time: a line plot whose lines `draw` downsamples to about a point per pixel and
    breaks at the gaps between runs. The line plot's arguments, less the tick formatters it does not use."""

    kind: ClassVar[str] = "series_plot"
    lines: Sequence[Line]
    title: str
    x_label: str
    y_label: str
    x_kind: str = "linear"
    y_kind: str = "linear"
    y_zero: bool = False
    width: int = 800
    height: int = 300
    legend: bool = True
    frame: str | None = None
    title_size: int = 14
    subtitle: str | None = None
    x_integer: bool = False


@dataclass(frozen=True)
class HistogramsSpec:
    """One histogram per panel on shared axes (`report.plot.histograms`); `unit` of the value axis."""

    kind: ClassVar[str] = "histograms"
    panels: Sequence[Histogram]
    unit: str


@dataclass(frozen=True)
class BarsSpec:
    """Horizontal bars with their values (`report.plot.bars`): (name, value) in `unit`."""

    kind: ClassVar[str] = "bars"
    bars: Sequence[tuple[str, float]]
    unit: str
    title: str
    width: int = 420


PlotSpec = (
    BoxplotSpec | GroupedBoxplotSpec | HeatmapSpec | LinePlotSpec | SeriesPlotSpec | HistogramsSpec | BarsSpec
)
PLOT_SPECS: tuple[type[PlotSpec], ...] = typing.get_args(PlotSpec)  # every kind, in the union's order


def table_notes(whys: Sequence[Sequence[str]]) -> tuple[list[str], tuple[str, ...]]:
    """Explanations that repeat on several rows said once: (each row's own text, the table's notes). A
    sentence on every row becomes a note of the whole table; one on some rows a numbered note the row
    cites."""
    count: dict[str, int] = {}
    for why in whys:
        for w in dict.fromkeys(why):
            count[w] = count.get(w, 0) + 1
    everywhere = [w for w, n in count.items() if n == len(whys) and n > 1]
    shared = [w for w, n in count.items() if 1 < n < len(whys)]
    notes = tuple(f"Every row: {w}" for w in everywhere) + tuple(
        f"({i}) {w}" for i, w in enumerate(shared, 1)
    )
    rows = []
    for why in whys:
        own = [w for w in dict.fromkeys(why) if count[w] == 1 or len(whys) == 1]
        cites = [f"({shared.index(w) + 1})" for w in dict.fromkeys(why) if w in shared]
        rows.append("; ".join(own + ([f"see note {', '.join(cites)}"] if cites else [])))
    return rows, notes


def section(title: str, *blocks: Block | None, level: int = 2, anchor: str = "", **kw) -> Section:
    """A section of the given blocks, leaving out None (a block that does not apply)."""
    return Section(title, tuple(b for b in blocks if b is not None), level=level, anchor=anchor, **kw)


# ---- a document kept as JSON (boardlab.summary stores `model.records.to_plain(document)`), read back -------

RECORDS = (Document, Section, Prose, Items, Preformatted, Figure, Multiples, Facts, Table, Column, Box,
           HeatCell, Line, Histogram, *PLOT_SPECS)  # fmt: skip


def from_plain(value: Any) -> Any:
    """A document (or any part of one) from its plain JSON (`model.records.to_plain`: each record an object
    with its class name under "type", sequences as lists), with the records, tuples, frozensets and integer
    keys its fields declare (`model.records.from_plain`): what `boardlab serve` renders a stored report from,
    through the same escaping renderers as `boardlab report`, never from stored HTML. A "type" that is not one
    of RECORDS raises ValueError."""
    from boardlab.model.records import from_plain as decode

    return decode(Any, value, _record_kinds())


@functools.cache
def _record_kinds() -> dict[str, type]:
    return {kind.__name__: kind for kind in RECORDS}
