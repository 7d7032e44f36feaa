"""A damaged results database (a value of the wrong type, a JSON column that is not JSON) is one error
naming the table, the column and the row, exit 2, from every reader and from `ingest`, which copies nothing
(docs/results.md "A damaged database")."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from boardlab.store import Store
from boardlab.store.verify import JSON_SHAPES, DamagedStore

from helpers import make_campaign_db, results_in_runs, run_cli

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
    # issue 39: what the readers take from inside the JSON, and the numbers they sum
    ("campaigns", "inventory_json", "[1, 2]"),  # history read it for every user of a shared store
    ("campaigns", "inventory_json", '{"kernel": "6.1.0"}'),  # .get("release") of a string
    ("boards", "inventory_json", '{"compatible": ["ti,am335x", 7]}'),  # ", ".join()
    ("boards", "inventory_json", '{"caches": [{"type": "Data", "size_kib": 32}]}'),  # int(c["level"])
    ("boards", "inventory_json", '{"online_cpus": 4}'),  # len()
    ("campaigns", "environment_json", '{"checks": ["ok"]}'),  # .get("status") of each
    ("campaigns", "environment_json", '{"skipped_workloads": []}'),  # .items()
    ("campaigns", "notes_json", '{"reruns": 1e400}'),  # json.loads reads infinity; int() of it
    ("campaigns", "monitor_json", '{"interval_s": "1 s"}'),  # 1 / it
    ("runs", "value", 1e308),  # two of them overflowed math.fsum
    ("runs", "value", -1e308),
    ("run_values", "value", 2e100),
    ("run_metrics", "median", 1e300),
    ("run_energy", "energy_j", 1e308),
    ("run_energy", "warnings_json", '[["a list"]]'),  # counted by text: a list is no key
    ("run_energy", "end_ns", 0),  # the run's duration, divided by (found by make fuzz)
    ("energy_sources", "spec_json", '{"note": 0.1}'),  # the sources' table: "; ".join() (make fuzz)
    ("energy_sources", "spec_json", '{"resolution": "1 uJ"}'),  # formatted as a number
    ("run_series", "t_last_ns", None),  # a first sample time without a last
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
        conn.execute("INSERT OR IGNORE INTO run_results(run_id, worker_json) VALUES (1, '{}')")
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
        if (table, column) == ("runs", "worker_json"):  # where a store before schema 16 kept the results
            results_in_runs(conn)
            conn.execute("UPDATE meta SET value='15' WHERE key='schema_version'")
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


def test_an_empty_file_is_named_exit_2_by_every_reader(tmp_path):
    """A 0-byte file (a copy cut short, `touch`) was 'no such table: campaigns', exit 1."""
    empty = tmp_path / "empty.db"
    empty.touch()
    for argv in (
        ("report", "--db", str(empty), "--format", "text"),
        ("export", "--db", str(empty), "--format", "csv", "-o", str(tmp_path / "out.csv")),
        ("history", "--db", str(empty), "--plan", "quick"),
        ("compare", str(empty), str(empty)),
        ("ingest", str(empty), "--db", str(tmp_path / "lab.db")),
        ("serve", "--db", str(empty), "--port", "0"),
    ):
        proc = run_cli(*argv, timeout=60)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert (
            f"{empty}: no boardlab results in this file" in proc.stderr and "Traceback" not in proc.stderr
        ), (
            argv,
            proc.stderr,
        )
    assert empty.stat().st_size == 0 and not (tmp_path / "lab.db").exists()


def test_a_reingest_of_a_damaged_copy_keeps_the_stored_inventory_and_history_works(pristine, tmp_path):
    shared = tmp_path / "shared.db"
    assert run_cli("ingest", str(pristine), "--db", str(shared)).returncode == 0
    before = shared.read_bytes()
    db = tmp_path / "damaged.db"
    rowid = _damage(pristine, db, "campaigns", "inventory_json", "not json at all")
    proc = run_cli("ingest", str(db), "--db", str(shared))
    assert proc.returncode == 2 and f"(campaigns.inventory_json, row id {rowid})" in proc.stderr, proc.stderr
    assert shared.read_bytes() == before
    (plan,) = {r[0] for r in sqlite3.connect(shared).execute("SELECT name FROM campaigns")}
    proc = run_cli("history", "--db", str(shared), "--plan", plan, "--format", "text")
    assert proc.returncode in (0, 1) and "internal error" not in proc.stderr, proc.stderr


def test_a_file_whose_campaign_has_the_uid_of_another_plans_is_not_merged_into_it(tmp_path):
    """Same board, same campaign uid, another plan (its hash): before, its runs were merged into the stored
    campaign of the other plan."""
    first = make_campaign_db(tmp_path / "first.db", name="quick", board="bbb-1", n=2)
    second = make_campaign_db(tmp_path / "second.db", name="nightly", board="bbb-1", n=2)
    (uid,) = sqlite3.connect(first).execute("SELECT uid FROM campaigns").fetchone()
    with sqlite3.connect(second) as conn:
        conn.execute("UPDATE campaigns SET uid=?", (uid,))
    shared = tmp_path / "shared.db"
    assert run_cli("ingest", str(first), "--db", str(shared)).returncode == 0
    before = shared.read_bytes()
    proc = run_cli("ingest", str(second), "--db", str(shared))
    assert proc.returncode == 2, proc.stderr
    assert (
        f"{second}: campaign 'nightly' (uid {uid}, plan hash h-nightly-1) has the uid of campaign 'quick'"
        in (proc.stderr)
    )
    assert "a campaign runs one plan, so nothing was ingested" in proc.stderr
    assert shared.read_bytes() == before


def test_a_monitor_row_with_a_first_time_and_no_last_is_read_where_the_store_is_not_verified(
    pristine, tmp_path
):
    """A PostgreSQL store is not verified by its readers (ingest verified what went in): the plot's reader
    takes a row with one summary time and not the other as one without a summary, and reads its samples."""
    from boardlab.analysis import latest_campaign_id
    from boardlab.analysis.monitor import monitor_series

    db = tmp_path / "half.db"
    shutil.copy(pristine, db)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE run_series SET t_last_ns = NULL")
    conn.close()
    with Store.open(db, create=False, verify=False) as store:
        cid = latest_campaign_id(store)
        t0, lo, hi = store.series_grid(cid)
        assert hi > lo
        with Store.open(pristine, create=False) as whole:
            assert monitor_series(store, cid) == monitor_series(whole, latest_campaign_id(whole))
