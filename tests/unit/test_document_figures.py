"""A figure of the report's document is a typed plot specification (`analysis.document.PlotSpec`, issue 43),
no longer a kind and an untyped dict of arguments: a misspelt or missing argument fails where the figure is
built, not when a report is drawn; every kind of spec has a drawer and holds its plot function's arguments;
and a document of every kind of figure survives the record codec (a campaign's summary keeps it as JSON) equal
to itself."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing

import pytest

from boardlab.analysis import document as doc
from boardlab.model.records import to_plain
from boardlab.report import plot

BOX = doc.Box("a", (1.0, 2.0, 3.0), (9.0,), note="n=3")
LINE = doc.Line("l", ((1.0, 2.0), (2.0, None), (3.0, 4.0)), ((1.5, 2.5), None, (3.5, 4.5)), color=2)
HIST = doc.Histogram("h", (0, 3, 1), 2.0, 1, 8.0, subtitle="s", markers=(("p99", 5.0),))

# One of each kind, with tuples where the codec reads tuples back (a spec built with lists compares unequal
# to its decoded self, but draws the same).
EVERY_KIND = (
    doc.BoxplotSpec(boxes=(BOX,), title="box", unit="ms", seed=3),
    doc.GroupedBoxplotSpec(
        groups=(("g1", (BOX, None)), ("g2", (None, BOX))),
        series=("x", "y"),
        title="g",
        unit="ms",
        x_label="load",
        log=True,
    ),
    doc.HeatmapSpec(
        rows=("r",),
        cols=("c1", "c2"),
        cells={(0, 0): doc.HeatCell(1.2, "slowdown", True, "t"), (0, 1): doc.HeatCell(None, None)},
        title="heat",
        limit=3.0,
    ),
    doc.LinePlotSpec(
        lines=(LINE,),
        title="line",
        x_label="x",
        y_label="y",
        x_kind="log2",
        y_kind="auto",
        x_format="bytes",
        y_format="si",
        frame="#dddddd",
        subtitle="sub",
    ),
    doc.SeriesPlotSpec(lines=(LINE,), title="series", x_label="t", y_label="load", y_zero=True, height=260),
    doc.HistogramsSpec(panels=(HIST, doc.Histogram("none", (), 0.0, 0, None, missing="no runs")), unit="us"),
    doc.BarsSpec(bars=(("decode", 1.5), ("copy", 0.25)), unit="ns/B", title="bars"),
)


def test_every_kind_of_spec_is_in_the_union_and_in_the_examples():
    assert set(typing.get_args(doc.PlotSpec)) == set(doc.PLOT_SPECS) == {type(s) for s in EVERY_KIND}


def test_draw_has_a_drawer_for_every_kind_of_spec_and_draws_each():
    assert set(plot.PLOTS) == set(doc.PLOT_SPECS), "a kind of plot spec without a drawer (or the reverse)"
    for spec in EVERY_KIND:
        assert "<svg" in plot.draw(doc.Figure(spec)), type(spec).__name__


def test_draw_refuses_what_is_not_a_plot_spec():
    with pytest.raises(ValueError, match="no plot for a Box"):
        plot.draw(doc.Figure(BOX))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "function", "left_out"),
    [
        (doc.BoxplotSpec, plot.boxplot, ()),
        (doc.GroupedBoxplotSpec, plot.grouped_boxplot, ()),
        (doc.HeatmapSpec, plot.heatmap, ()),
        (doc.LinePlotSpec, plot.line_plot, ()),
        (doc.SeriesPlotSpec, plot.line_plot, ("x_format", "y_format")),  # a series plot formats no ticks
        (doc.HistogramsSpec, plot.histograms, ()),
        (doc.BarsSpec, plot.bars, ()),
    ],
)
def test_a_spec_holds_its_plot_functions_arguments_with_their_defaults(spec, function, left_out):
    """The spec's fields are the plot function's parameters, by name and default: `draw` passes them as
    keywords, so a parameter added to the plot is a field to add here, not a key a dict may miss."""
    params = {n: p.default for n, p in inspect.signature(function).parameters.items() if n not in left_out}
    fields = {f.name: f.default for f in dataclasses.fields(spec)}
    assert fields.keys() == params.keys()
    assert fields == {
        n: (dataclasses.MISSING if d is inspect.Parameter.empty else d) for n, d in params.items()
    }


def test_a_misspelt_or_missing_argument_fails_where_the_figure_is_built():
    """The dict of old took `{"boxes": ..., "titel": ...}` and failed only when a report drew it."""
    with pytest.raises(TypeError, match="titel"):
        doc.BoxplotSpec(boxes=(BOX,), titel="box", unit="ms")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unit"):
        doc.BarsSpec(bars=(("a", 1.0),), title="bars")  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        EVERY_KIND[0].title = "changed"  # type: ignore[misc]


def test_a_document_of_every_kind_of_figure_round_trips_through_the_codec():
    figures = tuple(doc.Figure(s) for s in EVERY_KIND)
    document = doc.Document("t", (doc.section("s", *figures, doc.Multiples(figures[:2])),))
    plain = json.loads(json.dumps(to_plain(document), allow_nan=False))
    assert [f["spec"]["type"] for f in plain["sections"][0]["blocks"][: len(figures)]] == [
        type(s).__name__ for s in EVERY_KIND
    ]
    back = doc.from_plain(plain)
    assert back == document
    assert [plot.draw(f) for f in back.sections[0].blocks[: len(figures)]] == [plot.draw(f) for f in figures]


def test_a_figure_stored_in_the_old_shape_is_not_read_as_a_new_one():
    """A summary written before the specs (SUMMARY_SCHEMA 5) held `{"kind", "data"}`: it fails to decode
    (and is recomputed, boardlab.summary), never read as a figure without its arguments."""
    old = {"type": "Figure", "kind": "bars", "data": {"bars": [["a", 1.0]], "unit": "u", "title": "t"},
           "formats": ["html"]}  # fmt: skip
    with pytest.raises(TypeError, match="spec"):
        doc.from_plain(old)
    with pytest.raises(ValueError, match="unknown type 'Nonsense'"):
        doc.from_plain({"type": "Figure", "spec": {"type": "Nonsense"}, "formats": ["html"]})


def test_the_campaign_pages_json_twin_keeps_the_figures_shape_of_old():
    """serve's .json twin of a campaign page says a figure as it did when it was a kind and a dict: the old
    key names and values, the arguments the figure left at their defaults added; the rest as stored."""
    from boardlab.web.pages import figure_twin

    figures = tuple(doc.Figure(s) for s in EVERY_KIND)
    prose = doc.Prose("p")
    document = doc.Document("t", (doc.section("s", prose, *figures, doc.Multiples(figures[-1:])),))
    plain = json.loads(json.dumps(to_plain(document), allow_nan=False))
    stored = json.dumps(plain)
    twin = figure_twin(plain)
    assert json.dumps(plain) == stored, "the stored document is read, not changed"
    blocks = twin["sections"][0]["blocks"]
    assert blocks[0] == to_plain(prose) and twin["title"] == "t"
    assert [b["kind"] for b in blocks[1:-1]] == [
        "boxplot", "grouped_boxplot", "heatmap", "line_plot", "series_plot", "histograms", "bars"
    ]  # fmt: skip
    # the stream study's stage bars as their dict was: {"bars", "unit", "title"}
    old = {"bars": [["decode", 1.5], ["copy", 0.25]], "unit": "ns/B", "title": "bars"}
    assert blocks[-2] == {
        "type": "Figure",
        "kind": "bars",
        "data": {**old, "width": 420},
        "formats": ["html"],
    }
    assert blocks[-1]["figures"] == [blocks[-2]] and blocks[-1]["type"] == "Multiples"
    heat = blocks[3]["data"]
    assert heat["cells"]["[0, 0]"] == to_plain(doc.HeatCell(1.2, "slowdown", True, "t"))
