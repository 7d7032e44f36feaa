"""Monitor samples packed per run and source (store schema 7), the migration of older stores, and the
analysis's reads: a cell in one query, the monitor series reduced to the plotted points in streamed passes."""

from __future__ import annotations

import sqlite3

from boardlab.analysis import analyze, monitor_series
from boardlab.analysis.monitor import MAX_POINTS, scale_of
from boardlab.report.plot import MAX_SERIES_POINTS
from boardlab.report.plot.lines import downsample
from boardlab.store import STORE_SCHEMA, Store, packed
from boardlab.store.migrations import MIGRATIONS

from helpers import make_campaign_db

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
        INSERT INTO boards(id, fingerprint, label, inventory_json, first_seen_unix_s) VALUES (1, 'f', 'b', '{}', 0);
        INSERT INTO campaigns(id, name, plan_hash, plan_source, plan_text, board_id, boardlab_version, root,
            status, started_unix_s, environment_json) VALUES (1, 'c', 'h', 'p', '', 1, '0', '/', 'complete', 1, '{}');
        INSERT INTO cells(id, campaign_id, key, workload, params_json, condition, condition_json, metric, unit,
            higher_is_better) VALUES (1, 1, 'k', 'crc32', '{}', 'baseline', '{}', 'ns', 'ns', 0);
        """
    )
    for run_id in (1, 2):
        conn.execute(
            "INSERT INTO runs(id, campaign_id, cell_id, repetition, attempt, seq, started_unix_s, wall_ns,"
            " exit_code, ok, valid, rusage_json, gate_waited_s, gate_timed_out, gate_detail,"
            " condition_state_json, monitor_json) VALUES (?, 1, 1, ?, 1, ?, ?, 1, 0, 1, 1, '{}', 0, 0, '', '{}', '{}')",
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


def _old_monitor_series(store, campaign_id):
    """The report's monitor points as boardlab computed them before: every sample in memory, then the plot's
    own downsampling per line (the reference the streamed reduction must equal exactly)."""
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
    times = [t for pts in raw.values() for t, _ in pts]
    div, unit = (60.0, "min") if max(times) - min(times) > 600 else (1.0, "s")
    lines = {
        s: downsample([(t / div, v / scale_of(s)) for t, v in pts], MAX_SERIES_POINTS)
        for s, pts in raw.items()
        if scale_of(s) is not None
    }
    return unit, lines


def test_the_streamed_monitor_series_are_the_points_the_plot_drew_from_every_sample(tmp_path):
    assert MAX_POINTS == MAX_SERIES_POINTS
    # 408 runs over 612 s (minutes, 2040 samples per source: bucketed) and 68 runs (seconds, 340: all kept)
    for n in (12, 2):
        db = make_campaign_db(tmp_path / f"c{n}.db", n=n)
        with Store.open(db, create=False) as store:
            got = monitor_series(store, 1)
            unit, lines = _old_monitor_series(store, 1)
        assert got.time_unit == unit == ("min" if n == 12 else "s")
        assert got.lines == lines and got.sources == 6
        sizes = {len(pts) for pts in got.lines.values()}
        assert (100 < min(sizes) and max(sizes) <= MAX_POINTS) if n == 12 else sizes == {340}, sizes


def test_the_analysis_reads_a_cell_in_one_query_whatever_its_runs(tmp_path):
    """No query per run: the statements of a campaign's analysis and monitor series do not grow with runs."""
    counts = []
    for n in (4, 12):
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
            ("cpu0.busy_pct", 3, 0, 100), ("temp.zone0_mc", 2, 0, 200), ("worker.rss_kib", 1, 2**40, 2**40))]  # fmt: skip
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


def test_how_often_finished_buckets_close_changes_no_point(tmp_path, monkeypatch):
    """Buckets close every CLOSE_EVERY runs, later than they could: no later sample reaches them, so the
    points are the same whether they close after every run or only at the end."""
    from boardlab.analysis import monitor

    db = make_campaign_db(tmp_path / "c.db", n=12)
    with Store.open(db, create=False) as store:
        seen = []
        for every in (1, 7, monitor.CLOSE_EVERY, 10**9):
            monkeypatch.setattr(monitor, "CLOSE_EVERY", every)
            seen.append(monitor_series(store, 1))
    assert all(s == seen[0] for s in seen) and seen[0].lines
