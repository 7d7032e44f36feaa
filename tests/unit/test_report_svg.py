"""The report's SVG plots: well-formed, escaped, deterministic, and drawing what the numbers say."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from boardlab.report import plot as svg
from boardlab.stats import tukey_outliers

NS = {"s": "http://www.w3.org/2000/svg"}
EVIL = "<script>alert('x')</script> & co"


def parse(doc: str) -> ET.Element:
    root = ET.fromstring(doc)  # well-formed XML, or this raises
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    w, h = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert w >= 200 and h >= 100
    return root


def texts(root: ET.Element) -> list[str]:
    """The visible strings (a <title> child inside a <text> is a tooltip, not shown)."""
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


# --- numbers and axes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, sig, expected",
    [
        (0, 3, "0"),
        (1234.7, 3, "1235"),
        (12.345, 3, "12.3"),
        (0.012345, 3, "0.0123"),
        (2.5e7, 3, "25,000,000"),  # never an exponent: a count the caller did not scale is grouped
        (3.7e-5, 2, "0.000037"),
        (-4.56, 3, "-4.56"),
        (None, 3, "–"),
    ],
)
def test_numbers_keep_significant_digits_and_never_an_exponent(x, sig, expected):
    assert svg.fmt_num(x, sig) == expected


def test_byte_sizes_use_binary_prefixes():
    assert [svg.fmt_bytes(v) for v in (512, 4096, 1.5 * 2**20, 2**30)] == [
        "512 B",
        "4 KiB",
        "1.5 MiB",
        "1 GiB",
    ]


def test_linear_ticks_are_round_and_cover_the_range():
    assert svg.nice_ticks(0.3, 9.7, 5) == [2.0, 4.0, 6.0, 8.0]
    assert svg.nice_ticks(0, 1, 5) == [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    ticks = svg.nice_ticks(1234.0, 1287.0)
    assert all(1234 <= t <= 1287 for t in ticks) and len(ticks) >= 3


def test_log_ticks_are_powers_with_intermediates_over_few_decades():
    assert svg.log_ticks(1, 100) == [1, 2, 5, 10, 20, 50, 100]
    assert svg.log_ticks(1, 1e6) == [1, 10, 100, 1e3, 1e4, 1e5, 1e6]
    assert svg.log_ticks(4096, 16 * 2**20, base=2)[0] == 4096


def test_tick_labels_gain_digits_until_neighbours_differ():
    assert svg.tick_labels([1.99, 1.995, 2.0, 2.005], svg.fmt_tick) == ["1.99", "1.995", "2", "2.005"]


def test_scales_map_the_domain_onto_pixels():
    lin = svg.Scale(0, 10, 100, 200)
    assert (lin(0), lin(5), lin(10)) == (100, 150, 200)
    log = svg.Scale(1, 100, 0, 200, "log10")
    assert log(10) == pytest.approx(100)
    with pytest.raises(ValueError):
        svg.Scale(0, 10, 0, 100, "log10")


# --- boxplots -----------------------------------------------------------------------------------------------


def test_box_statistics_match_the_stats_quartiles_and_tukey_whiskers():
    values = [10.0, 10.2, 10.1, 9.9, 10.3, 10.0, 14.0]  # 14 lies beyond 1.5 IQR
    lo, q1, med, q3, hi = svg.box_stats(values)
    t = tukey_outliers(values)
    assert (q1, q3) == (pytest.approx(t.q1), pytest.approx(t.q3))
    assert med == 10.1 and lo == 9.9
    assert hi == 10.3  # the whisker stops at the last value inside the fence; 14 is drawn as a dot only


def test_a_boxplot_draws_every_run_as_a_dot_and_names_the_unit():
    boxes = [svg.Box("baseline", [10, 11, 12, 13]), svg.Box("stress", [20, 21, 22], excluded=[40])]
    root = parse(svg.boxplot(boxes, title="fft", unit="mflops [MFLOPS]"))
    circles = root.findall(".//s:circle", NS)
    assert len(circles) == 4 + 3 + 1
    hollow = [c for c in circles if c.get("fill") == "white"]
    assert len(hollow) == 1  # the excluded (invalid) run
    labels = texts(root)
    assert "mflops [MFLOPS]" in labels and "baseline" in labels and "n=3" in labels
    assert "(log scale)" not in " ".join(labels)


def test_a_box_of_many_runs_draws_a_bounded_number_of_dots_that_keep_its_shape_and_says_so():
    """Up to MAX_DOTS runs every run is a dot; above, MAX_DOTS dots at evenly spaced ranks of the runs within
    the whiskers plus the runs beyond them (at most MAX_DOTS, the extremes included), so the SVG of a million
    runs stays small; the box, whiskers and n are those of every run, and a caption says what is drawn."""
    from boardlab.report.plot.boxplot import MAX_DOTS, dots

    many = [100.0 + (i * 7919 % 1000) / 100 for i in range(5000)] + [200.0, 300.0, 1.0]  # three far runs
    drawn = dots(many, *svg.box_stats(many)[0:5:4])
    assert len(drawn) == MAX_DOTS + 3 and {1.0, 200.0, 300.0} <= set(drawn)
    assert min(d for d in drawn if d > 50) == 100.0 and max(d for d in drawn if d < 150) == 109.99
    assert dots(many[:MAX_DOTS], 0.0, 1e9) == many[:MAX_DOTS]  # every run below the limit
    root = parse(svg.boxplot([svg.Box("big", many, excluded=[150.0] * 500)], title="t", unit="ns"))
    circles = root.findall(".//s:circle", NS)
    assert len(circles) == MAX_DOTS + 3 + MAX_DOTS  # and the invalid runs at most MAX_DOTS too
    labels = texts(root)
    assert "n=5003" in labels and any(t.startswith(f"Over {MAX_DOTS} runs in a box") for t in labels)
    small = texts(parse(svg.boxplot([svg.Box("small", many[:50])], title="t", unit="ns")))
    assert not any(t.startswith("Over ") for t in small)
    grouped = parse(svg.grouped_boxplot([("g", [svg.Box("big", many)])], series=[""], title="t", unit="ns"))
    assert len(grouped.findall(".//s:circle", NS)) == MAX_DOTS + 3


def test_a_boxplot_switches_to_a_log_axis_when_values_span_decades():
    doc = svg.boxplot(
        [svg.Box("1k", [1.0, 1.1, 1.2]), svg.Box("1M", [900.0, 1000.0, 1100.0])], title="t", unit="ns"
    )
    assert "ns (log scale)" in texts(parse(doc))
    forced = svg.boxplot([svg.Box("a", [1.0, 2.0])], title="t", unit="ns", log=False)
    assert "(log scale)" not in forced


def test_boxplots_are_deterministic_and_handle_empty_and_single_runs():
    boxes = [svg.Box("one", [5.0]), svg.Box("none", [])]
    assert svg.boxplot(boxes, title="t", unit="u") == svg.boxplot(boxes, title="t", unit="u")
    parse(svg.boxplot(boxes, title="t", unit="u"))
    assert "no run values" in svg.boxplot([svg.Box("x", [])], title="t", unit="u")


def test_every_text_is_escaped():
    doc = svg.boxplot([svg.Box(EVIL, [1.0, 2.0])], title=EVIL, unit=EVIL)
    root = parse(doc)
    assert "<script>" not in doc
    assert EVIL in texts(root) or any(EVIL in t for t in texts(root))
    assert root.find(".//s:script", NS) is None


# --- heatmap ------------------------------------------------------------------------------------------------


def test_the_diverging_scale_is_white_at_one_red_above_and_blue_below():
    def rgb(c):
        return tuple(int(c[i : i + 2], 16) for i in (1, 3, 5))

    assert svg.diverging_color(1.0) == "#f7f7f7"
    r, _, b = rgb(svg.diverging_color(1.3))
    assert r > b
    r, _, b = rgb(svg.diverging_color(1 / 1.3))
    assert b > r
    assert svg.diverging_color(100) == svg.diverging_color(2.0)  # saturates at the limit
    assert svg.diverging_color(None) == "#dddddd"


def test_heatmap_cells_show_the_ratio_and_verdict_marks():
    cells = {
        (0, 0): svg.HeatCell(1.25, "slowdown", True, tooltip="fft under cpu: ▲"),
        (0, 1): svg.HeatCell(0.8, "speedup"),
        (1, 0): svg.HeatCell(1.0, "no_change"),
        (1, 1): svg.HeatCell(1.1, "inconclusive"),
        (2, 0): svg.HeatCell(None, None, tooltip="no baseline"),
    }
    root = parse(svg.heatmap(["fft", "crc32", EVIL], ["cpu-stress", "memcpy"], cells, title="cost"))
    labels = texts(root)
    assert "1.25× ▲⚠" in labels
    assert "0.800× ▼" in labels and "1.00× =" in labels and "1.10× ?" in labels and "n/a" in labels
    assert any("⚠ confounded" in t for t in labels)  # the key explains the marks
    assert "cpu-stress" in labels and EVIL in labels
    assert len([r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.get("fill") == "#ffffff"]) == 1


def test_a_wide_heatmap_rotates_its_column_labels_and_grows():
    cols = [f"stressor-with-a-long-name-{i}" for i in range(12)]
    cells = {(0, j): svg.HeatCell(1.0 + j / 20, "no_change") for j in range(12)}
    doc = svg.heatmap(["w"], cols, cells, title="t")
    root = parse(doc)
    assert "rotate(-35" in doc
    assert float(root.get("width")) >= 800


# --- line plots ---------------------------------------------------------------------------------------------


def test_a_none_breaks_a_line_into_segments():
    line = svg.Line("cpu", [(0, 1), (1, 2), (2, None), (3, 2), (4, 3)], markers=False)
    root = parse(svg.line_plot([line], title="t", x_label="s", y_label="%"))
    assert len(root.findall(".//s:polyline", NS)) == 2


def test_latency_curves_use_a_log2_axis_with_binary_size_labels_and_error_bars():
    sizes = [4096, 65536, 1 << 20, 16 << 20]
    line = svg.Line(
        "random",
        [(s, v) for s, v in zip(sizes, [1.5, 5, 30, 110], strict=True)],
        errors=[(1.4, 1.6), (4.8, 5.2), (29, 31), (105, 115)],
    )
    root = parse(
        svg.line_plot(
            [line],
            title="lat",
            x_label="size",
            y_label="ns",
            x_kind="log2",
            y_kind="log10",
            x_format=svg.fmt_bytes,
        )
    )
    labels = texts(root)
    assert "4 KiB" in labels and "1 MiB" in labels and "16 MiB" in labels
    assert len(root.findall(".//s:circle", NS)) == 4
    assert len(root.findall(".//s:line", NS)) >= 4  # the error bars (plus grid and axes)
    assert "random" in labels  # the legend


def test_a_subtitle_carries_the_drift_result_in_small_multiples():
    line = svg.Line("runs", [(i, 10 + i) for i in range(10)])
    doc = svg.line_plot(
        [line],
        title="a very long cell label " * 4,
        subtitle="ρ = +1.00, p = 0.001 · baseline",
        x_label="run",
        y_label="ns",
        width=272,
        height=190,
        legend=False,
        frame="#b2182b",
    )
    root = parse(doc)
    labels = texts(root)
    assert "ρ = +1.00, p = 0.001 · baseline" in labels
    # the long title wraps onto lines that together say all of it, none cut; the figure grows to hold them
    title_lines = [t for t in labels if t and t in "a very long cell label " * 4]
    assert len(title_lines) >= 2 and not any(t.endswith("…") for t in labels)
    assert " ".join(title_lines).split() == ("a very long cell label " * 4).split()
    assert int(root.get("height")) > 190


def test_a_drift_plot_of_many_runs_draws_bins_of_consecutive_runs():
    """Up to MAX_DRIFT_POINTS runs every run is a dot; above, DRIFT_BINS bins of consecutive runs: a line
    through each bin's median at its mean position, a bar from its lowest to its highest value, no dots."""
    from boardlab.analysis.document import Points
    from boardlab.analysis.sections import DRIFT_BINS, MAX_DRIFT_POINTS, _binned

    few = Points(map(float, range(MAX_DRIFT_POINTS)), (1.0 + i / 100 for i in range(MAX_DRIFT_POINTS)))
    assert _binned("valid runs", few, 0) == svg.Line("valid runs", few, color=0)
    runs = Points((float(3 * i) for i in range(2000)), (10.0 + (i % 5) + i / 1000 for i in range(2000)))
    line = _binned("valid runs", runs, 1)
    assert len(line.points) == len(line.errors) == DRIFT_BINS and not line.markers
    assert line.points[0] == pytest.approx((13.5, 12.0045)) and line.errors[0] == (10.0, 14.009)  # runs 0-9
    assert [y for _, y in line.points] == sorted(y for _, y in line.points)  # the drift shows
    plot = parse(svg.line_plot([line], title="t", x_label="run", y_label="ns", width=272, height=190))
    assert not plot.findall(".//s:circle", NS) and len(plot.findall(".//s:line", NS)) > DRIFT_BINS


def test_downsampling_bounds_the_points_and_keeps_the_level():
    pts = [(i / 10, 50.0 + (i % 2)) for i in range(10_000)]
    small = svg.downsample(pts, 500)
    assert len(small) <= 500
    assert all(50 <= y <= 51 for _, y in small)
    assert svg.downsample(pts[:10], 500) == pts[:10]


def test_plots_print_in_gray_with_distinct_palette_colors():
    assert len(set(svg.PALETTE)) == len(svg.PALETTE)
    assert all(re.fullmatch(r"#[0-9A-Fa-f]{6}", c) for c in svg.PALETTE)


def test_long_box_labels_wrap_whole_onto_more_lines():
    label = "scenario=soap, source=synthetic, read_mode=canonical, mode=closed, rate_hz=10.0, keepalive=1"
    boxes = [svg.Box(label, [1.0, 2.0, 3.0]), svg.Box("short", [2.0, 3.0, 4.0])]
    labels = texts(parse(svg.boxplot(boxes, title="t", unit="ms")))
    parts = [t for t in labels if any(w in t for w in ("scenario", "read_mode", "rate_hz", "keepalive"))]
    assert len(parts) >= 2 and " ".join(parts).split() == label.split()
    assert not any(t.endswith("…") for t in labels)


def test_heatmap_row_labels_wrap_and_columns_stay_whole():
    row = "io.net (mode=tcp_stream, msg_bytes=1048576, rate_bit_s=100000000, source=synthetic-very-long)"
    col = "cpu-stress with a rather long name @ 2 workers"
    cells = {(0, 0): svg.HeatCell(1.25, "slowdown")}
    labels = texts(parse(svg.heatmap([row], [col], cells, title="Q")))
    assert col in labels and not any(t.endswith("…") for t in labels)
    assert " ".join(t for t in labels if t in row).split() == row.split()


def test_x_tick_labels_never_run_together_and_counts_have_whole_ticks():
    import re

    from boardlab.analysis.document import Line
    from boardlab.report.plot import line_plot
    from boardlab.report.plot.axes import CHAR_W, fmt_bytes

    sizes = [4096 * 2**k for k in range(17)]  # 4 KiB ... 256 MiB
    svg = line_plot([Line("a", [(s, 1.0 + k) for k, s in enumerate(sizes)])], title="t", x_label="size",
                    y_label="ns", x_kind="log2", x_format=fmt_bytes, width=380)  # fmt: skip
    ticks = [(float(x), t) for x, t in re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="10" '
                                                  r'fill="#666666" text-anchor="middle">([^<]+)</text>',
                                                  svg)]  # fmt: skip
    assert len(ticks) >= 2
    for (x0, a), (x1, b) in zip(ticks, ticks[1:], strict=False):
        assert x1 - x0 >= (len(a) + len(b)) * 10 * CHAR_W / 2, (a, b)
    campaigns = line_plot([Line("c", [(1.0, 5.0), (2.0, 5.1), (3.0, 5.0)])], title="t", x_label="campaign #",
                          y_label="ms", width=380, x_integer=True)  # fmt: skip
    labels = re.findall(r'text-anchor="middle">([^<]+)</text>', campaigns)
    assert {"1", "2", "3"} <= set(labels) and not any(re.fullmatch(r"\d+\.\d+", t) for t in labels[:3])


def test_the_axis_of_boxes_comes_from_their_extremes_as_it_came_from_every_value():
    """The boxes' axis is taken from the smallest and largest finite value (a list of every value of three
    cells of 300,000 runs was 28 MB): the same axis as every value gave, NaN and None left out."""
    import math
    import random

    from boardlab.analysis.document import Box
    from boardlab.report.plot.axes import padded_domain, wants_log
    from boardlab.report.plot.boxplot import _values_and_axis

    def every_value(boxes, log):
        vs = [v for b in boxes for v in (*b.values, *b.excluded) if v is not None and math.isfinite(v)]
        log = wants_log(vs) if log is None else log
        kind = "log10" if log and not any(v <= 0 for v in vs) else "linear"
        return (padded_domain(vs, kind) if vs else None), kind

    rng = random.Random(7)

    def kept():
        return [rng.choice([rng.uniform(-1, 50), rng.lognormvariate(0, 2), math.nan]) for _ in range(5)]

    def excluded():
        return [rng.choice([None, math.inf, rng.uniform(0.01, 900)]) for _ in range(rng.randint(0, 3))]

    for trial in range(300):
        boxes = [Box("b", kept(), excluded()) for _ in range(rng.randint(0, 3))]
        for log in (None, True, False):
            extremes, kind = _values_and_axis(boxes, log)
            assert ((padded_domain(extremes, kind) if extremes else None), kind) == every_value(boxes, log), (
                trial
            )
