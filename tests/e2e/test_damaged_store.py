"""A damaged results database (a value of the wrong type, a JSON column that is not JSON) is one error
naming the table, the column and the row, exit 2, from every reader and from `ingest`, which copies nothing
(docs/results.md "A damaged database")."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from boardlab.store import Store
from boardlab.store.verify import JSON_SHAPES, DamagedStore

from helpers import make_campaign_db, run_cli

# (table, column, the damaged value): text in typed columns, then non-JSON in every JSON column
CASES = [
    ("runs", "value", "fast"),
    ("runs", "wall_ns", "12.5 ms"),
    ("runs", "started_unix_s", 1e300),
    ("run_values", "value", "n/a"),
    ("run_series", "t_ns", b"\x00\x01"),  # packed samples: not 8 bytes a sample
    ("run_series", "samples", "many"),
    ("run_series", "packing", 2),
    ("cells", "higher_is_better", "yes"),
    ("campaigns", "finished_unix_s", "yesterday"),
    *((table, column, "{not json") for table, column in JSON_SHAPES),
    ("runs", "monitor_json", "[1, 2]"),  # JSON, but not the object its readers expect
    ("run_histograms", "counts_json", '[1, "x"]'),
    ("campaigns", "board_id", 999),  # a reference to a row that is not there
    ("runs", "cell_id", 99999),
]


def _complete(path) -> None:
    """Adds a row to the tables make_campaign_db leaves empty, so every column can be damaged."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO run_histograms(run_id, name, bucket_width, unit, counts_json, overflow, total)"
            " VALUES (1, 'latency', 1.0, 'us', '[3, 4]', 0, 7)"
        )
        conn.execute(
            "INSERT INTO energy_sources(campaign_id, name, spec_json, supported, reason, is_primary)"
            " VALUES (1, 'rapl', '{}', 0, 'unsupported: none', 1)"
        )
        conn.execute(
            "INSERT INTO run_energy(run_id, source, method, start_ns, end_ns, energy_j, power_avg_w,"
            " power_peak_w, quantization_j, samples, update_interval_s, warnings_json)"
            " VALUES (1, 'rapl', 'counter', 0, 10, 1.0, 1.0, 1.0, 0.1, 2, 0.1, '[]')"
        )
    conn.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    path = make_campaign_db(tmp_path_factory.mktemp("damaged") / "board.db", board="bbb-1", n=3)
    _complete(path)
    with Store.open(path, create=False) as store:
        store.verify()  # the undamaged file passes
    return path


def _damage(pristine, dest, table: str, column: str, value) -> str:
    """Damages the last row of `table`; returns how the error names that row."""
    shutil.copy(pristine, dest)
    with sqlite3.connect(dest) as conn:
        if table == "run_values":  # WITHOUT ROWID: named by its primary key
            run_id, metric, it = conn.execute(
                "SELECT run_id, metric, iteration FROM run_values ORDER BY run_id DESC LIMIT 1"
            ).fetchone()
            conn.execute(
                f"UPDATE run_values SET {column}=? WHERE run_id=? AND metric=? AND iteration=?",
                (value, run_id, metric, it),
            )
            return f'"run_id" {run_id}, "metric" {metric!r}, "iteration" {it}'
        if table == "run_series":  # WITHOUT ROWID too
            run_id, source = conn.execute(
                "SELECT run_id, source FROM run_series ORDER BY run_id DESC, source DESC LIMIT 1"
            ).fetchone()
            conn.execute(
                f"UPDATE run_series SET {column}=? WHERE run_id=? AND source=?", (value, run_id, source)
            )
            return f'"run_id" {run_id}, "source" {source!r}'
        rowid = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
        conn.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (value, rowid))
    conn.close()
    return str(rowid)


@pytest.mark.parametrize(("table", "column", "value"), CASES, ids=[f"{t}.{c}" for t, c, _ in CASES])
def test_every_reader_open_names_the_damaged_table_column_and_row(pristine, tmp_path, table, column, value):
    db = tmp_path / "damaged.db"
    rowid = _damage(pristine, db, table, column, value)
    with pytest.raises(DamagedStore) as err:
        Store.open(db, create=False)
    assert f"damaged results database ({table}.{column}, row id {rowid})" in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize(("table", "column", "value"), [CASES[0], ("cells", "params_json", "{x")])
def test_report_export_compare_across_boards_and_ingest_exit_2(pristine, tmp_path, table, column, value):
    db = tmp_path / "damaged.db"
    rowid = _damage(pristine, db, table, column, value)
    where = f"damaged results database ({table}.{column}, row id {rowid})"
    good = make_campaign_db(tmp_path / "good.db", board="odroid", n=3)
    shared = tmp_path / "shared.db"
    assert run_cli("ingest", str(good), "--db", str(shared)).returncode == 0
    before = shared.read_bytes()
    commands = [
        ("report", "--db", str(db), "--format", "text"),
        ("export", "--db", str(db), "--format", "csv", "-o", str(tmp_path / "out.csv")),
        ("compare", str(db), str(good)),
        ("ingest", str(db), "--db", str(shared)),
    ]
    for argv in commands:
        proc = run_cli(*argv)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert where in proc.stderr and "Traceback" not in proc.stderr, (argv, proc.stderr)
    assert shared.read_bytes() == before  # ingest verified the file before it copied anything
    assert not (tmp_path / "out.csv").exists()
    # the shared store damaged after an ingest (by hand): the cross-board report says where
    _damage(shared, tmp_path / "shared2.db", table, column, value)
    proc = run_cli("report", "--db", str(tmp_path / "shared2.db"), "--across-boards", "--format", "md")
    assert proc.returncode == 2 and f"damaged results database ({table}.{column}" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [("runs", "value", "fast"), ("runs", "rusage_json", "{not json"), ("run_series", "t_ns", b"\x00\x01")],
    ids=["read by the analysis", "not read by it", "monitor samples"],
)
def test_a_report_checks_the_store_beside_its_analysis_and_writes_nothing_from_a_damaged_one(
    pristine, tmp_path, table, column, value
):
    """`report` checks the store while it analyses it: a damage is the error it says (exit 2) whether or not
    the analysis met the damaged value first, and no report file appears."""
    db = tmp_path / "damaged.db"
    rowid = _damage(pristine, db, table, column, value)
    for fmt in ("md", "html"):
        out = tmp_path / f"report.{fmt}"
        proc = run_cli("report", "--db", str(db), "--format", fmt, "-o", str(out))
        assert proc.returncode == 2, proc.stderr
        assert f"damaged results database ({table}.{column}, row id {rowid})" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and not out.exists()
    proc = run_cli("report", "--db", str(pristine), "--format", "md", "-o", str(tmp_path / "good.md"))
    assert proc.returncode == 0 and (tmp_path / "good.md").exists(), proc.stderr
