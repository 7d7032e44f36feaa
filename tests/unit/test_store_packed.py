"""Monitor samples packed per run and source (store schema 7) with each row's summary (schema 10), the
migrations of older stores, and the analysis's reads: a cell in one query, the monitor series reduced to the
plotted points by the database from the rows' summaries, and sample by sample where a row has none."""

from __future__ import annotations

import math
import sqlite3
import statistics
from array import array

from boardlab.analysis import analyze, monitor_series, sections
from boardlab.analysis.monitor import MAX_POINTS, MonitorSeries, scale_of
from boardlab.report.plot import MAX_SERIES_POINTS
from boardlab.report.plot.lines import downsample
from boardlab.report.render import render_sections
from boardlab.store import STORE_SCHEMA, Store, packed
from boardlab.store.migrations import MIGRATIONS, RUN_COLUMNS

from helpers import CAMPAIGN_COLUMNS_11, CAMPAIGN_COUNTS, make_campaign_db, results_in_runs

# (source, t_ns, value) of one run, in no particular order; two equal times, a negative value, a big integer
SAMPLES = [
    ("temp.zone0_mc", 200, 45_100.0),
    ("cpu0.busy_pct", 100, 3.25),
    ("cpu0.busy_pct", 0, -0.5),
    ("temp.zone0_mc", 0, 45_000.0),
    ("cpu0.busy_pct", 100, 7.0),
    ("worker.rss_kib", 2**40, 1.0e300),
]


def _schema_6_store(path) -> None:
    """A store as boardlab wrote it before schema 7: per-sample rows in `series`."""
    conn = sqlite3.connect(path)
    for _, sql in MIGRATIONS[:6]:
        conn.executescript(sql)
    conn.executescript(
        """
        INSERT INTO meta VALUES ('schema_version', '6');
        INSERT INTO boards(id, fingerprint, label, inventory_json, first_seen_unix_s)
            VALUES (1, 'f', 'b', '{}', 0);
        INSERT INTO campaigns(id, name, plan_hash, plan_source, plan_text, board_id, boardlab_version, root,
            status, started_unix_s, environment_json)
            VALUES (1, 'c', 'h', 'p', '', 1, '0', '/', 'complete', 1, '{}');
        INSERT INTO cells(id, campaign_id, key, workload, params_json, condition, condition_json, metric,
            unit, higher_is_better) VALUES (1, 1, 'k', 'crc32', '{}', 'baseline', '{}', 'ns', 'ns', 0);
        """
    )
    for run_id in (1, 2):
        conn.execute(
            "INSERT INTO runs(id, campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns,"
            " exit_code, ok, valid, rusage_json, gate_waited_s, gate_timed_out, gate_detail,"
            " condition_state_json, monitor_json) VALUES (?, 1, 1, ?, 1, ?, ?, 1, 0, 1, 1, '{}', 0, 0, '',"
            " '{}', '{}')",
            (run_id, run_id, run_id, 1000.0 + run_id),
        )
    conn.executemany("INSERT INTO series(run_id, source, t_ns, value) VALUES (1, ?, ?, ?)", SAMPLES)
    conn.commit()
    conn.close()


def _expected() -> list[tuple]:
    """What a store reads back: by source, then time; equal times in the order they were recorded."""
    return sorted(SAMPLES, key=lambda s: (s[0], s[1]))


def test_packed_rows_read_back_bit_for_bit():
    rows = packed.pack(SAMPLES)
    assert [r[0] for r in rows] == ["cpu0.busy_pct", "temp.zone0_mc", "worker.rss_kib"]
    got = [
        (src, t, v) for src, pk, n, tb, vb in rows for t, v in zip(*packed.unpack(pk, n, tb, vb), strict=True)
    ]
    assert got == _expected()
    assert all(len(tb) == len(vb) == 8 * n for _, _, n, tb, vb in rows)
    assert packed.unpack(2, 1, b"\0" * 8, b"\0" * 8) is None  # an unknown layout is refused, not misread
    assert packed.unpack(1, 2, b"\0" * 8, b"\0" * 16) is None  # so is a short array


def test_a_schema_6_store_reads_as_before_and_migration_7_packs_its_series(tmp_path):
    db = tmp_path / "old.db"
    _schema_6_store(db)
    with Store.open(db, create=False) as reader:  # a reader changes nothing, reads the old rows
        assert reader.schema_version() == 6
        assert [tuple(s) for s in reader.series(1)] == _expected()
        assert [(r, s, list(t)) for r, s, t, _ in reader.run_series([2, 1])][0] == (
            1,
            "cpu0.busy_pct",
            [0, 100, 100],
        )
    with Store.open(db) as store:  # a writer migrates
        assert store.schema_version() == STORE_SCHEMA
        assert [tuple(s) for s in store.series(1)] == _expected()
        assert store.series(2) == []
        tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "series" not in tables and "run_series" in tables
        assert tuple(store.conn.execute("SELECT count(*), sum(samples) FROM run_series").fetchone()) == (3, 6)
        assert [s["source"] for s in store.series(1)][:3] == ["cpu0.busy_pct"] * 3
        assert store.series(1)[0]["t_ns"] == 0 and store.series(1)[-1]["value"] == 1.0e300


def _every_sample(store, campaign_id) -> tuple[float, dict[str, list[tuple[float, float]]]]:
    """t0 and every monitor sample of the campaign in memory: source -> (s since t0, value) in time order."""
    runs = list(store.runs(campaign_id))
    t0 = min(r["started_unix_s"] for r in runs)
    raw: dict[str, list] = {}
    for r in runs:
        for row in store.series(r["id"]):
            raw.setdefault(row["source"], []).append(
                (r["started_unix_s"] - t0 + row["t_ns"] / 1e9, row["value"])
            )
    for points in raw.values():
        points.sort(key=lambda p: p[0])
    return t0, raw


def _old_monitor_series(store, campaign_id):
    """The report's monitor points as boardlab computed them before: every sample in memory, then the plot's
    own downsampling per line over that line's time range."""
    _, raw = _every_sample(store, campaign_id)
    times = [t for pts in raw.values() for t, _ in pts]
    div, unit = (60.0, "min") if max(times) - min(times) > 600 else (1.0, "s")
    lines = {
        s: downsample([(t / div, v / scale_of(s)) for t, v in pts], MAX_SERIES_POINTS)
        for s, pts in raw.items()
        if scale_of(s) is not None
    }
    return unit, lines


def _reference_series(store, campaign_id) -> MonitorSeries:
    """The monitor points as analysis.monitor defines them, from every sample in memory: MAX_POINTS buckets
    over one range for all sources, from 0 (or an earlier sample) to the last run's start plus the latest
    sample time of any run; per bucket the exact means (fmean) of its samples' times and values."""
    t0, raw = _every_sample(store, campaign_id)
    last_start = max(r["started_unix_s"] for r in store.runs(campaign_id)) - t0
    t_ns = [row["t_ns"] for r in store.runs(campaign_id) for row in store.series(r["id"])]
    lo, hi = min(0.0, min(t_ns) / 1e9), last_start + max(t_ns) / 1e9
    div, unit = (60.0, "min") if hi - lo > 600 else (1.0, "s")
    span = (hi / div - lo / div) or 1.0
    lines = {}
    for s, pts in raw.items():
        scale = scale_of(s)
        if scale is None:
            continue
        if len(pts) <= MAX_POINTS:
            lines[s] = [(t / div, v / scale) for t, v in pts]
            continue
        buckets: dict[int, list] = {}
        for t, v in pts:
            k = min(int((t / div - lo / div) / span * MAX_POINTS), MAX_POINTS - 1)
            buckets.setdefault(k, []).append((t, v))
        lines[s] = [
            (statistics.fmean(t for t, _ in b) / div, statistics.fmean(v for _, v in b) / scale)
            for b in (buckets[k] for k in sorted(buckets))
        ]
    return MonitorSeries(unit, lines, len(raw))


def _same_points(got: dict, want: dict) -> bool:
    """The same lines with the same number of points, equal up to the rounding of sums taken in another order
    (the database adds whole rows' sums, the reference every sample): far below what a plot can show."""
    return got.keys() == want.keys() and all(
        len(got[s]) == len(want[s])
        and all(
            math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
            for p, q in zip(got[s], want[s], strict=True)
            for a, b in zip(p, q, strict=True)
        )
        for s in want
    )


def _monitor_html(series: MonitorSeries) -> str:
    return render_sections([sections.monitor(series)], "html")


def test_the_monitor_series_are_the_means_of_every_sample_per_bucket(tmp_path):
    assert MAX_POINTS == MAX_SERIES_POINTS
    # 408 runs over 612 s (minutes, 2040 samples per source: bucketed) and 68 runs (seconds, 340: all kept)
    for n in (12, 2):
        db = make_campaign_db(tmp_path / f"c{n}.db", n=n)
        with Store.open(db, create=False) as store:
            got = monitor_series(store, 1)
            want = _reference_series(store, 1)
            unit, lines = _old_monitor_series(store, 1)
        assert (
            got.time_unit == want.time_unit == ("min" if n == 12 else "s")
            and got.sources == want.sources == 6
        )
        assert _same_points(got.lines, want.lines)
        sizes = {len(pts) for pts in got.lines.values()}
        assert (100 < min(sizes) and max(sizes) <= MAX_POINTS) if n == 12 else sizes == {340}, sizes
        if n == 2:  # every sample kept: no sum, the very values
            assert got.lines == want.lines
        # every source here spans the whole campaign: the plot's own downsampling gives the same, the same SVG
        assert unit == got.time_unit and _same_points(got.lines, lines)
        assert _monitor_html(got) == _monitor_html(MonitorSeries(unit, lines, 6))


def test_the_analysis_reads_a_cell_in_one_query_whatever_its_runs(tmp_path):
    """No query per run: the statements of a campaign's analysis and monitor series do not grow with runs."""
    counts = []
    for n in (5, 12):  # both with more than MAX_POINTS samples per source: bucketed
        db = make_campaign_db(tmp_path / f"q{n}.db", n=n)
        with Store.open(db, create=False) as store:
            seen: list[str] = []
            store.conn.set_trace_callback(seen.append)
            a = analyze(store, 1)
            monitor_series(store, 1)
            store.conn.set_trace_callback(None)
        assert sum(len(c.runs) for c in a.cells) == 34 * n
        counts.append(len(seen))
    assert counts[0] == counts[1] < 200, counts


def test_the_series_extents_are_each_rows_first_and_last_time_as_the_samples_say(tmp_path):
    """The monitor's first pass reads each run's and source's first and last time, cut by the database from
    the packed times (signed, a big one too), as the full read of the samples gives them; an older store's
    per-sample rows give the same."""
    old = tmp_path / "old.db"
    _schema_6_store(old)
    with Store.open(old, create=False) as reader:
        assert reader.schema_version() == 6
        assert list(reader.campaign_series_extents(1)) == [(1, 1001.0, *e) for e in (
            ("cpu0.busy_pct", 3, 0, 100), ("temp.zone0_mc", 2, 0, 200),
            ("worker.rss_kib", 1, 2**40, 2**40))]  # fmt: skip
    with Store.open(old):  # a writer packs them (migration 7)
        pass
    db = make_campaign_db(tmp_path / "e.db", n=2)
    for path in (old, db):
        with Store.open(path, create=False) as store:
            assert store.schema_version() >= 7
            full = [
                (r, s, src, len(t), t[0], t[-1]) for r, s, src, t, _ in store.campaign_series(1) if len(t)
            ]
            assert list(store.campaign_series_extents(1)) == full and full


def _summaries(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT run_id, source, t_first_ns, t_last_ns, t_sum_ns, value_sum FROM run_series ORDER BY 1, 2"
        ).fetchall()
    finally:
        conn.close()


def test_the_database_sums_whole_rows_and_python_reads_the_rest_with_the_same_points(tmp_path, monkeypatch):
    """Rows whose samples fall in one bucket are summed by the database from their summaries (schema 10);
    rows that span buckets, or have no summary (an ingested older file, a NaN, a sum out of range), are read
    sample by sample; a store before schema 10 is read sample by sample throughout. The points are the
    same."""
    db = make_campaign_db(tmp_path / "c.db", n=12)
    with Store.open(db, create=False) as store:
        want = monitor_series(store, 1)
        t0, lo, hi = store.series_grid(1)
        summed = list(store.series_bucket_sums(1, t0, 60.0, lo / 60, hi / 60 - lo / 60, MAX_POINTS))
        runs = sorted({run_id for *_, run_id in summed if run_id is not None})
        rows = list(store.series_rows(1, runs))
    assert (t0, lo, hi) == (1_700_000_000.0, 0.0, 407 * 1.5 + 0.4)  # the last run: 0.4 s of samples
    # runs 0.4 s long, a bucket 0.87 s wide here: many runs span two buckets (at 10^5 runs, few)
    assert 0 < len(runs) < 408 * 0.6 and len(rows) == 6 * len(runs)
    assert sum(n for _, _, n, *_ in summed) == 408 * 30  # every sample counted
    with monkeypatch.context() as m:  # the runs summed in slices of 50 by start time: the same points
        m.setattr(Store, "_SUM_RUNS", 50)
        with Store.open(db, create=False) as store:
            sliced = monitor_series(store, 1)
    assert sliced.time_unit == want.time_unit and _same_points(sliced.lines, want.lines)
    # rows without a summary, or with part of one, as an ingest of an older file or a NaN leaves them
    conn = sqlite3.connect(db)
    conn.execute("UPDATE run_series SET t_first_ns = NULL, t_last_ns = NULL WHERE run_id % 3 = 0")
    conn.execute("UPDATE run_series SET t_sum_ns = NULL WHERE run_id % 5 = 0")
    conn.execute("UPDATE run_series SET value_sum = NULL WHERE run_id % 7 = 0")
    conn.commit()
    with Store.open(db, create=False) as store:
        partly = monitor_series(store, 1)
    # the same store before schema 10 (and 9, its runs' summary columns): no row summaries at all; a
    # writer's migrations compute them again
    conn.executescript(
        "ALTER TABLE run_series DROP COLUMN t_first_ns; ALTER TABLE run_series DROP COLUMN t_last_ns;"
        " ALTER TABLE run_series DROP COLUMN t_sum_ns; ALTER TABLE run_series DROP COLUMN value_sum;"
        " DROP INDEX runs_by_campaign_start; UPDATE meta SET value = '8' WHERE key = 'schema_version';"
        + "".join(f" ALTER TABLE runs DROP COLUMN {c};" for c in RUN_COLUMNS)
        + "".join(f" ALTER TABLE campaigns DROP COLUMN {c};" for c in CAMPAIGN_COLUMNS_11)
        + " DROP INDEX artifacts_by_campaign;"  # and schema 12's index
        + "".join(f" ALTER TABLE campaigns DROP COLUMN {c};" for c in CAMPAIGN_COUNTS)  # 14's and 15's
    )
    with conn:
        results_in_runs(conn)  # and 16's results apart
    conn.close()
    with Store.open(db, create=False) as store:
        assert store.schema_version() == 8
        before = monitor_series(store, 1)
    fresh = make_campaign_db(tmp_path / "f.db", n=12)
    with Store.open(db):
        pass
    assert _summaries(db) == _summaries(fresh)
    for other in (partly, before):
        assert other.time_unit == want.time_unit and _same_points(other.lines, want.lines)
        assert _monitor_html(other) == _monitor_html(want)


def test_a_rows_summary_is_its_first_and_last_time_and_its_sums():
    rows = packed.pack_summarized(SAMPLES)
    assert [r[:5] for r in rows] == packed.pack(SAMPLES)
    assert [r[5:] for r in rows] == [
        (0, 100, 200, 9.75),
        (0, 200, 200, 90_100.0),
        (2**40, 2**40, 2**40, 1.0e300),
    ]
    t, v = array("q", [0, 2**62, 2**62]), array("d", [1e308, 1e308, float("nan")])
    assert packed.summarize(t, v) == (0, 2**62, None, None)  # beyond int64; an overflow (then a NaN)
    assert packed.summarize(t, array("d", [1.0, float("inf"), -float("inf")]))[3] is None
    assert packed.summarize(t, array("d", [1.0, 2.0, float("inf")]))[3] == float("inf")
    assert packed.summarize(array("q"), array("d")) == (None, None, 0, 0.0)
