"""What a reader takes in at a glance: labels name only what varies and never an unset parameter, values
carry SI prefixes with their unit, an explanation shared by rows is said once, times per run are shown and
exported, and per-second series are drawn for any workload that stores them."""

from __future__ import annotations

import csv
import io
import json

import pytest

from boardlab.analysis import document as doc
from boardlab.analysis.format import cell_label, display_unit, fmt_num, fmt_si, section_labels
from boardlab.analysis.studies import series as series_study

from helpers import make_campaign_db, make_services_db


def test_a_label_never_shows_an_unset_parameter_and_names_only_what_varies():
    params = {"scenario": "position", "source": "synthetic", "read_mode": None, "mode": None}
    assert cell_label("svc.scenario", params) == "svc.scenario (scenario=position, source=synthetic)"
    assert cell_label("svc.scenario", params, ["source", "read_mode"]) == "svc.scenario (source=synthetic)"
    assert cell_label("svc.scenario", params, ["read_mode"]) == "svc.scenario"
    labels = section_labels(
        [
            ("svc.scenario", params),
            ("svc.scenario", {**params, "source": "nmea", "read_mode": "canonical"}),
            ("crc32", {"size": 4096}),
        ]
    )
    assert labels == [
        "svc.scenario (source=synthetic)",
        "svc.scenario (source=nmea, read_mode=canonical)",
        "crc32",
    ]


@pytest.mark.parametrize(
    ("unit", "value", "shown"),
    [
        ("bit/s", 1.101e10, "11.01 Gbit/s"),
        ("bit/s", 5.2e5, "520.0 kbit/s"),
        ("MB/s", 4.87, "4.870 MB/s"),
        ("MB/s", 4870.0, "4.870 GB/s"),
        ("B/s", 2.5e8, "250.0 MB/s"),
        ("ops/s", 123456.0, "123.5 kops/s"),
        ("Hz", 0.5, "0.5000 Hz"),
        ("ns", 12345.0, "12.35 µs"),
        ("bytes", 3 * 2**20, "3.000 MiB"),
        ("%", 3.2, "3.200 %"),
    ],
)
def test_values_take_an_si_prefix_with_their_unit_and_no_exponent(unit, value, shown):
    div, label = display_unit(unit, value)
    assert f"{fmt_num(value / div, 4)} {label}" == shown


def test_the_one_si_formatter_serves_values_and_axis_ticks():
    from boardlab.report.plot import axes

    assert fmt_si(1.101e10, "bit/s") == "11.0 Gbit/s" and fmt_si(4.87e6, "B/s") == "4.87 MB/s"
    assert fmt_si(None, "bit/s") == "–"
    assert [axes.fmt_si(x) for x in (0.1, 1, 1500, 1e6, 2.5e9)] == ["0.1", "1", "1.5k", "1M", "2.5G"]


def test_an_explanation_on_several_rows_becomes_one_note():
    rows, notes = doc.table_notes([["same", "own a", "some"], ["same", "some"], ["same", "own c"]])
    assert notes == ("Every row: same", "(1) some")
    assert rows == ["own a; see note (1)", "see note (1)", "own c"]
    assert doc.table_notes([["only"]]) == (["only"], ())


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return make_campaign_db(tmp_path_factory.mktemp("labels") / "s.db", n=10)


def _report(db, fmt: str) -> str:
    from boardlab.analysis.core import analyze
    from boardlab.analysis.sections import build_document
    from boardlab.report.render import render_document
    from boardlab.store import Store

    with Store.open(db) as store:
        a = analyze(store, store.campaigns()[-1]["id"])
    return render_document(build_document(a), fmt)


def test_the_comparison_table_says_a_shared_reason_once_under_it(synthetic):
    md = _report(synthetic, "md")
    part = md.split("## Comparisons")[1]
    table = [ln for ln in part.splitlines() if ln.startswith("| ")][2:]
    notes = [ln for ln in part.splitlines() if ln.startswith(("Every row:", "("))]
    assert table and notes, part[:2000]
    for note in notes:  # a note's sentence is in no row any more
        sentence = note.split(": ", 1)[1] if note.startswith("Every row") else note.split(") ", 1)[1]
        assert not any(sentence.strip() in row for row in table), sentence


def test_times_per_run_in_the_cell_table_of_every_format(synthetic):
    md, text = _report(synthetic, "md"), _report(synthetic, "text")
    assert "user / system / wall per run [s]" in md and "user/sys/wall s" in text
    # the synthetic runs: 1 us of user time, no system time recorded, 0.5 s wall
    assert "0.000 / – / 0.500" in md and "0.000 / – / 0.500" in text


def test_every_export_format_carries_the_cpu_times_of_each_run(synthetic, tmp_path):
    from boardlab.export import EXPORT_SCHEMA, FIELDS, run_records, to_csv, to_json
    from boardlab.store import Store

    assert EXPORT_SCHEMA == 3 and FIELDS.index("user_time_us") == FIELDS.index("wall_ns") + 1
    with Store.open(synthetic) as store:
        records = run_records(store)
    assert {r["user_time_us"] for r in records} == {1} and {r["system_time_us"] for r in records} == {None}
    doc_ = json.loads(to_json(records))
    assert doc_["schema"] == 3 and doc_["runs"][0]["user_time_us"] == 1
    rows = list(csv.DictReader(io.StringIO(to_csv(records).decode().split("\n", 1)[1])))
    assert rows[0]["user_time_us"] == "1" and rows[0]["system_time_us"] == ""
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (the analysis extra)")
    from boardlab.export import to_parquet

    table = pq.read_table(io.BytesIO(to_parquet(records)))
    assert table.column("user_time_us").to_pylist()[0] == 1
    assert table.schema.metadata[b"boardlab_export_schema"] == b"3"


def test_per_second_series_are_binned_per_second_across_runs():
    from boardlab.model.worker_result import SeriesSamples

    runs = [
        [SeriesSamples("cpu", "a", "%", ((1.02, 2.0), (2.0, 4.0)))],
        [SeriesSamples("cpu", "a", "%", ((0.98, 6.0), (2.01, 5.0), (3.0, 1.0), (4.0, None)))],
        [SeriesSamples("cpu", "a", "%", ((1.0, 3.0),))],
    ]
    (band,) = series_study.bands(runs)
    assert band.seconds == (1.0, 2.0, 3.0) and band.n_runs == 3
    assert band.median == (3.0, 4.5, 1.0) and band.low == (2.0, 4.0, 1.0) and band.high == (6.0, 5.0, 1.0)


def test_a_service_that_stopped_ends_its_line_and_says_so_instead_of_falling_to_zero():
    """A stopped process still reads 0% CPU until it is reaped, but has no memory any more: its CPU line
    ends where its RSS does, and its legend says when it stopped; a service that ran on is unchanged."""
    from boardlab.model.worker_result import SeriesSamples

    def run(stop_s):
        gps_cpu = tuple((float(t), 5.0 if t <= stop_s else 0.0) for t in range(1, 13))
        gps_rss = tuple((float(t), 1e6) for t in range(1, stop_s + 1))
        app = tuple((float(t), 3.0) for t in range(1, 13))
        return [SeriesSamples("cpu_pct_one_cpu", "gps", "%", gps_cpu),
                SeriesSamples("rss_bytes", "gps", "bytes", gps_rss),
                SeriesSamples("cpu_pct_one_cpu", "app", "%", app)]  # fmt: skip

    bands = {(b.metric, b.label): b for b in series_study.bands([run(5), run(6), run(7)])}
    gps = bands[("cpu_pct_one_cpu", "gps")]
    assert gps.stopped_s == 6 and max(gps.seconds) == 8 and 0.0 not in gps.median[:-1]
    assert (
        bands[("cpu_pct_one_cpu", "app")].stopped_s is None
        and max(bands[("cpu_pct_one_cpu", "app")].seconds) == 12
    )
    fig = series_study._figure("t", [gps, bands[("cpu_pct_one_cpu", "app")]], 800)
    assert [ln.label for ln in fig.spec.lines] == ["gps (stopped at 6 s)", "app"]


def test_the_series_section_draws_a_line_per_service_and_pss_beside_rss(tmp_path):
    from boardlab.analysis.core import analyze
    from boardlab.store import Store

    db = make_services_db(tmp_path / "v.db", n=3)
    with Store.open(db) as store:
        a = analyze(store, store.campaigns()[-1]["id"])
    record = a.study(series_study.__name__)
    assert record is not None and len(record.cells) == 4  # 2 cells x 2 conditions
    (section,) = series_study.sections(a, record)
    figures = [b for b in section.blocks if isinstance(b, doc.Figure)]
    pairs = [b for b in section.blocks if isinstance(b, doc.Multiples)]
    cpu = [f for f in figures if f.spec.y_label.startswith("cpu_pct_one_cpu")]
    assert len(cpu) == 4 and [ln.label for ln in cpu[0].spec.lines] == ["position", "orientation", "dot"]
    assert all(ln.errors and len(ln.errors) == 12 for ln in cpu[0].spec.lines)  # min-max per second
    assert len(pairs) == 4 and [f.spec.y_label.split(" ")[0] for f in pairs[0].figures] == [
        "rss_bytes",
        "pss_bytes",
    ]
    assert "MiB" in pairs[0].figures[0].spec.y_label
    # the summary card groups the services' headline figures under their study
    from boardlab.analysis.sections import summary_card

    card = summary_card(a)
    assert [b.title for b in card.blocks if isinstance(b, doc.Facts)] == ["Vehicle services"]
