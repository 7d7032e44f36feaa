"""A line figure with more series than a reader tells apart becomes a heatmap, chosen where figures are drawn
(`report.plot.draw`) for every study alike: one row per series sorted as a reader counts, a column per x
value, a colour bar, each row's whole label and values in its tooltip, and an SVG whose size is bounded."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from boardlab.analysis.document import Figure, Line, LinePlotSpec
from boardlab.analysis.format import label_sort_key
from boardlab.report.plot import draw
from boardlab.report.plot.seriesmap import MAX_LINES, abbreviated

SVG = "{http://www.w3.org/2000/svg}"
SIZES = [4096.0 * 4**k for k in range(9)]


def mhz(i: int) -> str:
    f = 100 * (i + 1)
    return f"pattern=random @ policy4 {f} MHz" if f < 1000 else f"pattern=random @ policy4 {f / 1000:g} GHz"


def figure(n_lines: int, label=mhz) -> Figure:
    """n lines given highest first, so that the heatmap's order is its own."""
    lines = [Line(label(i), [(x, 2.0 + i + x / 4096) for x in SIZES]) for i in reversed(range(n_lines))]
    return Figure(LinePlotSpec(lines=lines, title="mem.latency: ns per access by working-set size",
                               x_label="working-set size", y_label="ns per access [ns]",
                               x_kind="log2", y_kind="auto", x_format="bytes"))  # fmt: skip


def test_labels_sort_by_the_quantities_they_name():
    labels = ["policy4 1.1 GHz", "policy4 200 MHz", "cpu10", "cpu2", "1 MiB", "64 KiB", "baseline"]
    assert sorted(labels, key=label_sort_key) == [
        "64 KiB", "1 MiB", "baseline", "cpu2", "cpu10", "policy4 200 MHz", "policy4 1.1 GHz"
    ]  # fmt: skip


def test_a_few_lines_stay_lines_and_many_become_rows_of_a_heatmap():
    few = draw(figure(MAX_LINES))
    assert few.count("<polyline") == MAX_LINES and "too many to tell apart" not in few
    many = draw(figure(744))
    root = ET.fromstring(many)  # well-formed
    assert "<polyline" not in many and "744 series, too many to tell apart as lines" in many
    # one tooltip per row, sorted by frequency (1 GHz after 900 MHz), each with the row's values
    tips = [r.find(f"{SVG}title").text for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(tips) == 744
    assert tips[8].startswith("pattern=random @ policy4 900 MHz: 4 KiB 11, 16 KiB 14,")
    assert tips[9].startswith("pattern=random @ policy4 1 GHz: ")
    # the cells are a bounded number of paths, not one element each: 744 x 9 cells in well under 400 KB
    assert len(root.findall(f"{SVG}path")) <= 32 and len(many) < 400_000
    # row labels thinned so that none overprints another, each with its whole text as a tooltip
    rows = [t for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    ys = [float(t.get("y")) for t in rows]
    assert 20 < len(rows) < 744 and min(b - a for a, b in zip(ys, ys[1:], strict=False)) >= 13
    # a colour bar names the value it shows
    assert any(t.text == "ns per access [ns]" for t in root.iter(f"{SVG}text"))


def test_a_long_label_keeps_its_start_and_its_end():
    label = "pattern=stride, stride 64 B @ policy0 1.4 GHz + policy4 1.9 GHz"
    short = abbreviated(label, 46)
    assert len(short) <= 46 and short.startswith("pattern=stride") and short.endswith("policy4 1.9 GHz")
    assert "…" in short and abbreviated("baseline", 46) == "baseline"
    svg = draw(figure(12, label=lambda i: f"{label} {i}"))
    assert f"<title>{label} 3</title>" in svg  # the whole label where the row shows it cut
