"""The store on a real PostgreSQL server (started by the test, tests/pg.py) next to SQLite: one schema from
the same migrations, the same reads on both, `boardlab ingest` (idempotent, resumable, all or nothing) and
report/compare/export over PostgreSQL giving the numbers they give over the boards' own files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from boardlab.errors import InputError
from boardlab.export import EXPORT_SCHEMA
from boardlab.governor.store_io import load_artifact, save_artifact
from boardlab.model.run import GateResult, Histogram, MetricResult, RunEnergy, RunResult
from boardlab.store import STORE_SCHEMA, Store
from boardlab.store.ingest import ingest_file, ingest_files

from helpers import make_campaign_db, reaped, results_in_runs, run_cli

pytestmark = pytest.mark.integration


# ---- what a store holds, independent of its ids ----


def canonical(store: Store) -> dict:
    """Every campaign's content keyed by identities (board fingerprint, plan hash, cell key, repetition,
    attempt), never by ids: what ingest must carry over exactly."""
    out = {}
    for camp in store.campaigns():
        board = store.board(camp["board_id"])
        runs = {}
        for r in store.runs(camp["id"]):
            ident = (r["cell_key"], r["repetition"], r["attempt"])
            row = {k: r[k] for k in r.keys() if k not in ("id", "campaign_id", "cell_id")}
            metrics = {
                m["metric"]: {k: m[k] for k in m.keys() if k != "run_id"} for m in store.run_metrics(r["id"])
            }
            row["metrics"] = metrics
            row["values"] = {name: store.run_values(r["id"], name) for name in [*metrics, "iteration_ns"]}
            row["series"] = [tuple(s) for s in store.series(r["id"])]
            row["histograms"] = [
                {k: h[k] for k in h.keys() if k != "run_id"} for h in store.histograms(r["id"])
            ]
            runs[ident] = row
        energy = [
            {k: e[k] for k in e.keys() if k != "run_id"} | {"run": runs_by_id(store, camp["id"])[e["run_id"]]}
            for e in store.run_energy(camp["id"])
        ]
        out[(board["fingerprint"], camp["plan_hash"])] = {
            "board": {k: board[k] for k in ("fingerprint", "label", "inventory_json")},
            "campaign": {k: camp[k] for k in camp.keys() if k not in ("id", "board_id")},
            "cells": [
                {k: c[k] for k in c.keys() if k not in ("id", "campaign_id")} for c in store.cells(camp["id"])
            ],
            "runs": runs,
            "energy": energy,
            "sources": [
                {k: s[k] for k in s.keys() if k != "campaign_id"} for s in store.energy_sources(camp["id"])
            ],
            "idle": [
                {k: s[k] for k in s.keys() if k != "campaign_id"} for s in store.idle_windows(camp["id"])
            ],
            "artifact": load_artifact(store, camp["id"], "sweep"),
        }
    return out


def runs_by_id(store: Store, campaign_id: int) -> dict[int, tuple]:
    return {r["id"]: (r["cell_key"], r["repetition"], r["attempt"]) for r in store.runs(campaign_id)}


def decorate(path: Path) -> None:
    """Adds what make_campaign_db leaves out and a report reads: energy sources, idle windows, a campaign
    artifact, and a run with a histogram and an energy row."""
    with Store.open(path) as store:
        cid = store.campaigns()[-1]["id"]
        store.record_energy_sources(
            cid,
            [("rapl", {"kind": "counter"}, True, None, True), ("ina", {}, False, "unsupported: none", False)],
        )
        store.record_idle(
            cid,
            "rapl",
            0,
            {
                "started_unix_s": 1.5,
                "duration_s": 2.0,
                "energy_j": 3.25,
                "power_w": 1.625,
                "quantization_j": 0.01,
                "samples": 20,
            },
        )
        save_artifact(store, cid, "sweep", {"points": [1, 2, 3], "unit": "khz"})
        cell = store.cells(cid)[0]
        run = RunResult(
            cell_key=cell["key"], repetition=99, attempt=1, seq=10_000, started_unix_s=1_700_100_000.25,
            wall_ns=4_000_000_000, cpu=0, exit_code=0, ok=True, valid=True, invalid_reason=None, value=7.5,
            metrics=(MetricResult(cell["metric"], cell["unit"], bool(cell["higher_is_better"]),
                                  (7.0, 7.5, 8.0), 7.5),),
            iterations_ns=(10, 20, 30), warmup_iterations=1, warmup_capped=False, rusage={"utime_us": 5},
            gate=GateResult(0.5, False, "idle"), condition_state={"x": 1}, monitor={"m": 2},
            series=(("cpu0.busy_pct", 0, 1.0), ("cpu0.busy_pct", 100, 2.0)),
            histograms=(Histogram("latency_us", 1.0, "us", (5, 3, 0, 1), 2, 11),),
            energy=(RunEnergy("rapl", "counter", 1, 4_000_000_001, 12.5, 3.125, 4.0, 0.02, 40, 0.1, ("w",)),),
            aa_arm="A1",
        )  # fmt: skip
        store.record_run(cid, cell["id"], run)


def make_board(
    path: Path, board: str, *, n: int = 3, speed: float = 1.0, first_rep: int = 1, status="complete"
) -> Path:
    return make_campaign_db(path, board=board, n=n, speed=speed, seed=7, first_rep=first_rep, status=status)


def n_runs(store: Store) -> int:
    return sum(len(store.runs(c["id"])) for c in store.campaigns())


# ---- one schema, two backends ----


def test_migrations_give_equivalent_schemas(pg_url, tmp_path):
    with Store.open(pg_url) as pgs, Store.open(tmp_path / "s.db") as lite:
        assert pgs.schema_version() == lite.schema_version() == STORE_SCHEMA
        a, b = pgs.describe_schema(), lite.describe_schema()
    assert set(a) == set(b) and "runs" in a and len(a) >= 12
    for table in a:
        assert a[table] == b[table], table
    kinds = {k for cols in a.values() for _, k, *_ in cols}
    assert kinds == {"integer", "real", "text", "blob"}  # nothing a backend spells its own way


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "direct.db")
    return request.getfixturevalue("pg_url")


def test_the_same_writes_read_back_the_same_on_both(store_target, tmp_path):
    """make_campaign_db writes through the Store API (campaigns, cells, runs, series, energy) directly
    into each backend; both read back the same content as a SQLite reference."""
    for target in (tmp_path / "ref.db", store_target):  # a campaign, then resumed (ensure_cells again)
        make_board(target, "b1", n=2, status="running")
        make_board(target, "b1", n=3, first_rep=3)
        decorate(target)
    with Store.open(tmp_path / "ref.db", create=False) as ref, Store.open(store_target, create=False) as got:
        want, have = canonical(ref), canonical(got)
    for d in (want, have):  # what each writer stamps itself: a new uid and its own clock (heartbeat too)
        for camp in d.values():
            for k in ("uid", "started_unix_s", "finished_unix_s", "heartbeat_unix_s"):
                camp["campaign"].pop(k)
    assert have == want and len(want) == 1
    with Store.open(store_target, create=False) as got:  # a reader writes nothing
        with pytest.raises(Exception, match="read-only|readonly"):
            got.conn.execute("DELETE FROM boards")


def test_a_reader_refuses_an_empty_postgresql_database(pg_url):
    with pytest.raises(InputError, match="no boardlab store in this database"):
        Store.open(pg_url, create=False)
    proc = run_cli("report", "--db", pg_url, "--format", "md")
    assert proc.returncode == 2 and "boardlab ingest" in proc.stderr and "Traceback" not in proc.stderr


def test_an_unreachable_server_is_one_line_exit_2(pg_server, tmp_path):
    url = pg_server.url("no_such_db").replace(str(pg_server.port), str(pg_server.port)) + "?password=secret"
    proc = run_cli("export", "--db", url)
    assert proc.returncode == 2 and "cannot connect" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---- ingest ----


def test_ingest_twice_adds_nothing_the_second_time(pg_url, tmp_path):
    src = make_board(tmp_path / "a.db", "board-a")
    decorate(src)
    with Store.open(src, create=False) as s:
        want, total = canonical(s), n_runs(s)
    first = ingest_file(src, pg_url)
    assert (first.campaigns, first.campaigns_added, first.runs_added, first.runs_skipped) == (1, 1, total, 0)
    second = ingest_file(src, pg_url)
    assert (second.campaigns_added, second.runs_added, second.runs_skipped) == (0, 0, total)
    assert second.campaign_ids == first.campaign_ids and first.boards == ("board-a",)
    with Store.open(pg_url, create=False) as t:
        assert n_runs(t) == total and len(t.campaigns()) == 1 and len(t.boards()) == 1
        assert canonical(t) == want  # every row of every table, uid included


def test_ingest_after_the_campaign_resumed_adds_only_the_new_runs(pg_url, tmp_path):
    src = make_board(tmp_path / "a.db", "board-a", n=2, status="running")
    with Store.open(src, create=False) as s:
        before = n_runs(s)
    assert ingest_file(src, pg_url).runs_added == before
    make_board(src, "board-a", n=4, first_rep=3)  # the same campaign resumed on the board: reps 3 and 4
    decorate(src)
    with Store.open(src, create=False) as s:
        want, after = canonical(s), n_runs(s)
    assert after > before
    again = ingest_file(src, pg_url)
    assert (again.campaigns_added, again.runs_added, again.runs_skipped) == (0, after - before, before)
    with Store.open(pg_url, create=False) as t:
        assert canonical(t) == want and t.campaigns()[0]["status"] == "complete"
    # an older copy of the file, ingested after the newer one, neither duplicates nor rolls back
    old = make_board(tmp_path / "old.db", "board-a", n=2, status="running")
    assert ingest_file(old, pg_url).campaigns_added == 1  # a different campaign (its own uid)
    with Store.open(pg_url, create=False) as t:
        assert len(t.campaigns()) == 2 and n_runs(t) == after + before
        # each campaign's count of its runs, kept by the ingest (store schema 14), not the file's copied
        assert sorted(t.count_runs(int(c["id"])) for c in t.campaigns()) == [before, after]


def test_two_boards_into_one_store_and_into_sqlite(pg_url, tmp_path):
    a = make_board(tmp_path / "a.db", "board-a")
    b = make_board(tmp_path / "b.db", "board-b", speed=2.0)
    proc = run_cli("ingest", str(a), str(b), "--db", pg_url, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [f["boards"] for f in doc["files"]] == [["board-a"], ["board-b"]]
    assert all(f["runs_skipped"] == 0 and f["runs_added"] > 0 for f in doc["files"])
    # the same files merged into a SQLite store hold the same content
    merged = tmp_path / "merged.db"
    assert run_cli("ingest", str(a), str(b), "--db", str(merged)).returncode == 0
    with Store.open(pg_url, create=False) as t, Store.open(merged, create=False) as m:
        assert canonical(t) == canonical(m) and len(t.boards()) == 2


def test_a_failure_mid_ingest_leaves_nothing(pg_url, tmp_path):
    src = make_board(tmp_path / "a.db", "board-a")
    with pytest.raises(RuntimeError, match="injected failure after 40 runs"):
        ingest_file(src, pg_url, fail_after_runs=40)
    with Store.open(pg_url, create=False) as t:
        assert t.campaigns() == [] and t.boards() == []
    # into a SQLite store the ingest created: no file stays
    with pytest.raises(RuntimeError):
        ingest_file(src, str(tmp_path / "new.db"), fail_after_runs=3)
    assert not any(p.name.startswith("new.db") for p in tmp_path.iterdir())
    # the same file then goes in whole
    with Store.open(src, create=False) as s:
        assert ingest_file(src, pg_url).runs_added == n_runs(s)


def test_a_killed_ingest_leaves_nothing(pg_server, pg_url, tmp_path):
    import psycopg

    src = make_campaign_db(tmp_path / "big.db", board="big", n=40)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "ingest", str(src), "--db", pg_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    with reaped(proc):
        with psycopg.connect(pg_url, autocommit=True) as watch:
            deadline = time.monotonic() + 60
            seen = None
            while seen is None and time.monotonic() < deadline and proc.poll() is None:
                # the ingest's session, inside its transaction, busy with the runs (its last statement
                # stays shown between statements): the board and the campaign are already written
                seen = watch.execute(
                    "SELECT query FROM pg_stat_activity WHERE datname = current_database()"
                    " AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')"
                    " AND (query LIKE 'INSERT INTO runs %' OR query LIKE 'COPY %')"
                ).fetchone()
                time.sleep(0.002)
            assert seen and proc.poll() is None, (
                "the ingest ended before it could be killed: make the file bigger"
            )
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            deadline = time.monotonic() + 20  # the server notices the closed connection and rolls back
            while time.monotonic() < deadline:
                busy = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
                    "pg_backend_pid()"
                ).fetchone()[0]
                if not busy:
                    break
                time.sleep(0.05)
    with Store.open(pg_url, create=False) as t:
        assert t.campaigns() == [] and t.boards() == [] and n_runs(t) == 0
    with Store.open(src, create=False) as s:
        assert ingest_file(src, pg_url).runs_added == n_runs(s)


def test_a_server_lost_mid_ingest_is_exit_1_saying_what_was_kept(pg_server, pg_url, tmp_path):
    """The server ends the ingest's session while it copies the second file's runs (pg_terminate_backend: as
    a restart or a failover would). Before, that was "cannot connect ... (exit 2)", bad input; it is a runtime
    failure, the first file stays whole, nothing of the second is there, and the same command finishes it."""
    import psycopg

    small = make_campaign_db(tmp_path / "small.db", board="small", n=2)
    big = make_campaign_db(tmp_path / "big.db", board="big", n=40)
    proc = subprocess.Popen(
        [sys.executable, "-m", "boardlab", "ingest", str(small), str(big), "--db", pg_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with reaped(proc):
        with psycopg.connect(pg_url, autocommit=True) as watch:
            deadline, pid, small_in = time.monotonic() + 60, None, False
            while pid is None and time.monotonic() < deadline and proc.poll() is None:
                if not small_in:  # the small board's file committed (no table yet: the store is being made)
                    with contextlib.suppress(psycopg.errors.UndefinedTable):
                        small_in = bool(
                            watch.execute("SELECT 1 FROM boards WHERE label = 'small'").fetchone()
                        )
                    continue
                row = watch.execute(  # then the copy of the big board's runs
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <>"
                    " pg_backend_pid() AND (query LIKE 'INSERT INTO runs %' OR query LIKE 'COPY %')"
                ).fetchone()
                pid = row[0] if row else None
                time.sleep(0.002)
            assert pid is not None and proc.poll() is None, "the ingest ended before its session could be cut"
            watch.execute("SELECT pg_terminate_backend(%s)", (pid,))
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "the connection to the PostgreSQL store was lost" in err and "cannot connect" not in err, err
    assert f"nothing of {big} was stored; the 1 file(s) before it are in the store ({small})" in err, err
    assert "Traceback" not in err
    with Store.open(pg_url, create=False) as t:
        assert [b["label"] for b in t.boards()] == ["small"]
    with Store.open(small, create=False) as s:
        small_runs = n_runs(s)
    with Store.open(big, create=False) as s:
        big_runs = n_runs(s)
    again = run_cli("ingest", str(small), str(big), "--db", pg_url)
    assert again.returncode == 0, again.stderr
    with Store.open(pg_url, create=False) as t:
        assert n_runs(t) == small_runs + big_runs


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "newer", "empty"])
def test_a_bad_file_is_refused_exit_2_and_nothing_written(pg_url, tmp_path, damage):
    import sqlite3

    good = make_board(tmp_path / "good.db", "board-a")
    bad = tmp_path / "bad board.db"
    if damage == "garbage":
        bad.write_bytes(b"not a database at all\n" * 100)
    elif damage == "truncated":
        data = good.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "foreign":
        with sqlite3.connect(bad) as c:
            c.execute("CREATE TABLE t (x)")
    elif damage == "newer":
        shutil.copy(good, bad)
        with sqlite3.connect(bad) as c:
            c.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    else:
        bad.write_bytes(b"")
    proc = run_cli(
        "ingest", str(good), str(bad), "--db", pg_url
    )  # the good file first: still nothing written
    assert proc.returncode == 2, proc.stderr
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    with Store.open(pg_url) as t:  # opened as a writer: an empty store, migrated, with nothing in it
        assert t.campaigns() == [] and t.boards() == []


def test_damage_inside_pages_is_found_by_the_integrity_check(pg_url, tmp_path):
    """A file whose header is fine but whose pages are damaged (a flipped block in the middle)."""
    good = make_campaign_db(tmp_path / "good.db", board="board-a", n=6)
    bad = tmp_path / "bad.db"
    data = bytearray(good.read_bytes())
    page = 4096
    mid = (len(data) // page // 2) * page
    data[mid + 8 : mid + page] = b"\xa5" * (page - 8)
    bad.write_bytes(bytes(data))
    proc = run_cli("ingest", str(bad), "--db", pg_url)
    assert proc.returncode == 2 and str(bad) in proc.stderr and "corrupt" in proc.stderr.lower(), proc.stderr
    with Store.open(pg_url) as t:
        assert t.campaigns() == []


# ---- report, compare and export over PostgreSQL ----


def _without(doc, keys=("db", "campaign_id", "cell_id")):
    if isinstance(doc, dict):
        return {k: _without(v, keys) for k, v in doc.items() if k not in keys}
    if isinstance(doc, list):
        return [_without(v, keys) for v in doc]
    return doc


def test_report_compare_export_over_postgresql_match_the_board_files(pg_url, tmp_path):
    a = make_board(tmp_path / "a.db", "board-a")
    b = make_board(tmp_path / "b.db", "board-b", speed=2.0)
    decorate(a)
    assert run_cli("ingest", str(a), str(b), "--db", pg_url).returncode == 0
    # report: the same Markdown and text (the latest campaign, and by board)
    for fmt in ("md", "text"):
        want = run_cli("report", "--db", str(a), "--format", fmt)
        got = run_cli("report", "--db", pg_url, "--board", "board-a", "--format", fmt)
        assert want.returncode == got.returncode == 0, got.stderr
        assert got.stdout == want.stdout
    html = run_cli("report", "--db", pg_url, "--board", "board-a", "-o", str(tmp_path / "r.html"))
    assert html.returncode == 0 and "<svg" in (tmp_path / "r.html").read_text(), html.stderr
    latest = run_cli("report", "--db", pg_url, "--format", "md").stdout  # board-b's: ingested last
    assert "- campaign: 2 " in latest  # its id in the shared store; 1 in its own file
    assert (
        latest.replace("- campaign: 2 ", "- campaign: 1 ")
        == run_cli("report", "--db", str(b), "--format", "md").stdout
    )
    # compare: board A against board B inside one store, as across the two files
    want = run_cli("compare", str(a), str(b), "--json")
    got = run_cli("compare", pg_url, pg_url, "--board-a", "board-a", "--board-b", "board-b", "--json")
    assert want.returncode == got.returncode == 0, got.stderr
    wdoc, gdoc = json.loads(want.stdout), json.loads(got.stdout)
    assert _without(gdoc) == _without(wdoc)
    assert any(c["verdict"] for c in gdoc["cells"]) and gdoc["a"]["board"] == "board-a"
    assert gdoc["a"]["db"].startswith("postgresql://")
    bad = run_cli("compare", pg_url, pg_url, "--board-a", "nope", "--board-b", "board-b")
    assert bad.returncode == 2 and "board-a, board-b" in bad.stderr
    # export: every record of each board, the same values
    want_a = json.loads(run_cli("export", "--db", str(a)).stdout)["runs"]
    want_b = json.loads(run_cli("export", "--db", str(b)).stdout)["runs"]
    got = json.loads(run_cli("export", "--db", pg_url).stdout)
    assert got["schema"] == EXPORT_SCHEMA
    assert _without(got["runs"]) == _without(want_a + want_b)
    assert {r["board"] for r in got["runs"]} == {"board-a", "board-b"}


def test_parquet_partitioned_by_board_reads_back_in_duckdb(pg_url, tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow not installed (the analysis extra)")
    duckdb = pytest.importorskip("duckdb", reason="duckdb not installed (the test extra)")
    a = make_board(tmp_path / "a.db", "board-a")
    b = make_board(tmp_path / "b.db", "board-b", speed=2.0)
    assert run_cli("ingest", str(a), str(b), "--db", pg_url).returncode == 0
    out = tmp_path / "fleet parquet"
    proc = run_cli("export", "--db", pg_url, "--format", "parquet", "--partition", "board", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet")) == [
        "board=board-a/part-0.parquet",
        "board=board-b/part-0.parquet",
    ]
    manifest = json.loads((out / "boardlab-export.json").read_text())
    records = json.loads(run_cli("export", "--db", pg_url).stdout)["runs"]
    per_board = {}
    for r in records:
        per_board[r["board"]] = per_board.get(r["board"], 0) + 1
    assert manifest == {"schema": EXPORT_SCHEMA, "partition": "board", "boards": per_board}
    # the query docs/results.md shows
    glob = str(out / "**" / "*.parquet")
    rows = duckdb.sql(
        f"""SELECT board, workload, condition, median(value) AS median_value, count(*) AS runs
        FROM read_parquet('{glob}', hive_partitioning = true)
        WHERE valid GROUP BY ALL ORDER BY board, workload, condition"""
    ).fetchall()
    import statistics

    want: dict = {}
    for r in records:
        if r["valid"]:
            want.setdefault((r["board"], r["workload"], r["condition"]), []).append(r["value"])
    assert [(r[0], r[1], r[2]) for r in rows] == sorted(want)
    for board, workload, condition, median, n in rows:
        values = want[(board, workload, condition)]
        assert n == len(values) and median == pytest.approx(statistics.median(values), rel=1e-12)
    # a second export replaces the first; a directory that is not an export is refused
    assert (
        run_cli(
            "export", "--db", pg_url, "--format", "parquet", "--partition", "board", "-o", str(out)
        ).returncode
        == 0
    )
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    proc = run_cli("export", "--db", pg_url, "--format", "parquet", "--partition", "board", "-o", str(other))
    assert proc.returncode == 2 and "not an earlier boardlab export" in proc.stderr
    assert [p.name for p in other.iterdir()] == ["keep.txt"]


# ---- older files and older stores ----


def _downgrade(path: Path, version: int) -> None:
    """Turns a file into what an older boardlab wrote: the columns and tables of later migrations gone."""
    import sqlite3

    with sqlite3.connect(path) as c:
        c.execute("DROP INDEX campaigns_by_uid")
        c.execute("ALTER TABLE campaigns DROP COLUMN uid")
        if version < 4:
            c.execute("DROP TABLE energy_sources")
            c.execute("DROP TABLE run_energy")
            c.execute("DROP TABLE energy_idle")
        if version < 3:
            c.execute("ALTER TABLE runs DROP COLUMN aa_arm")
        results_in_runs(c)
        c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))


@pytest.mark.parametrize("version", [2, 4])
def test_a_file_from_an_older_boardlab_ingests_idempotently(pg_url, tmp_path, version):
    src = make_board(tmp_path / "old.db", "board-a")
    decorate(src)
    _downgrade(src, version)
    with Store.open(src, create=False) as s:
        total = n_runs(s)
        values = sorted(
            (r["cell_key"], r["repetition"], r["value"] or 0.0) for r in s.runs(s.campaigns()[0]["id"])
        )
    first = ingest_file(src, pg_url)
    second = ingest_file(src, pg_url)
    assert (first.runs_added, second.runs_added, second.runs_skipped, second.campaigns_added) == (
        total,
        0,
        total,
        0,
    )
    with Store.open(pg_url, create=False) as t:
        camp = t.campaigns()[0]
        assert camp["uid"].startswith("derived-") and len(t.campaigns()) == 1
        got = sorted((r["cell_key"], r["repetition"], r["value"] or 0.0) for r in t.runs(camp["id"]))
        assert got == values
        assert len(t.run_energy(camp["id"])) == (1 if version >= 4 else 0)
        assert [h["name"] for r in t.runs(camp["id"]) for h in t.histograms(r["id"])] == ["latency_us"]


def test_a_postgresql_store_at_an_older_schema_is_migrated_and_keeps_its_rows(pg_url, monkeypatch):
    import boardlab.store.db as db

    with monkeypatch.context() as m:
        m.setattr(db, "MIGRATIONS", db.MIGRATIONS[:4])
        m.setattr(db, "STORE_SCHEMA", 4)
        with Store.open(pg_url) as old:
            assert old.schema_version() == 4
            old.upsert_board("fp-x", "x", {"model": "old"})
            assert "uid" not in {c for c, *_ in old.describe_schema()["campaigns"]}
    with Store.open(pg_url) as new:
        assert new.schema_version() == STORE_SCHEMA and [b["label"] for b in new.boards()] == ["x"]
        assert "uid" in {c for c, *_ in new.describe_schema()["campaigns"]}


def test_a_foreign_or_newer_postgresql_database_is_refused(pg_server, pg_url, tmp_path):
    import psycopg

    with Store.open(pg_url) as s:
        s.conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    for create in (True, False):
        with pytest.raises(InputError, match="newer boardlab"):
            Store.open(pg_url, create=create)
    other = pg_server.new_database()
    with psycopg.connect(other, autocommit=True) as c:
        c.execute("CREATE TABLE invoices (id int)")
    proc = run_cli("ingest", str(make_board(tmp_path / "b.db", "b")), "--db", other)
    assert proc.returncode == 2 and "did not write" in proc.stderr and "createdb" in proc.stderr
    with psycopg.connect(other, autocommit=True) as c:  # untouched
        assert (
            c.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchone()[0]
            == 1
        )


def test_cross_board_report_over_postgresql_matches_the_same_boards_in_sqlite(pg_url, tmp_path):
    a = make_board(tmp_path / "a.db", "board-a")
    b = make_board(tmp_path / "b.db", "board-b", speed=2.0)
    lite = tmp_path / "lab.db"
    for db in (pg_url, str(lite)):
        assert run_cli("ingest", str(a), str(b), "--db", db).returncode == 0
    args = ("report", "--board", "board-a", "--across-boards", "--format", "md")
    got = run_cli(*args[:1], "--db", pg_url, *args[1:])
    want = run_cli(*args[:1], "--db", str(lite), *args[1:])
    assert got.returncode == want.returncode == 0, got.stderr
    assert got.stdout == want.stdout and "| board-b / board-a |" in got.stdout


# ---- ingest speed: reference checks and binary COPY ----


def _replication_role_while_copying(monkeypatch) -> list[str]:
    """session_replication_role as each copy of runs begins, inside the ingest's transaction."""
    from boardlab.store import ingest as ingest_mod

    seen: list[str] = []
    copy_runs = ingest_mod._Copier.copy_runs

    def spy(self, tid, run_map):
        seen.append(self.target.conn.execute("SHOW session_replication_role").fetchone()[0])
        return copy_runs(self, tid, run_map)

    monkeypatch.setattr(ingest_mod._Copier, "copy_runs", spy)
    return seen


def test_reference_checks_are_off_during_ingest_only_for_a_role_allowed_to(pg_server, tmp_path, monkeypatch):
    import uuid

    import psycopg

    src = make_board(tmp_path / "a.db", "board-a")
    decorate(src)
    with Store.open(src, create=False) as s:
        want = canonical(s)
    role = f"lab_{uuid.uuid4().hex[:12]}"  # roles are the whole server's: a name of this test's own
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")  # neither a superuser nor granted SET ON PARAMETER
        admin.execute(f"CREATE DATABASE {role} OWNER {role}")
    plain = f"postgresql://{role}@127.0.0.1:{pg_server.port}/{role}"
    seen = _replication_role_while_copying(monkeypatch)
    after: list[str] = []

    def then(store, result):  # after the file's commit, on the same connection
        after.append(store.conn.execute("SHOW session_replication_role").fetchone()[0])

    superuser = pg_server.new_database()
    notes: list[str] = []
    assert ingest_files([src], superuser, then=then, note=notes.append)[0].runs_added > 0
    assert notes == []
    # a role that may not set it keeps PostgreSQL's checks (once per statement since store schema 13: nothing
    # worth a note), and its ingest is not disturbed by the refusal
    assert ingest_files([src], plain, then=then, note=notes.append)[0].runs_added > 0
    assert seen == ["replica", "origin"]  # the superuser's copy skipped the reference triggers
    assert after == ["origin", "origin"]  # SET LOCAL: gone with the transaction
    assert notes == []
    # granted it (PostgreSQL 15), the owner's ingest takes the superuser's path
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"GRANT SET ON PARAMETER session_replication_role TO {role}")
    granted = pg_server.new_database(owner=role)
    assert ingest_files([src], granted, note=notes.append)[0].runs_added > 0
    assert seen[-1] == "replica" and notes == []
    for url in (superuser, plain, granted):
        with Store.open(url, create=False) as t:
            assert canonical(t) == want


def test_text_that_copy_text_format_would_escape_arrives_unchanged(pg_url, tmp_path):
    """The rows go in COPY's binary format: tabs, newlines, backslashes, a literal \\N and non-ASCII text,
    NULLs, extreme integers and doubles arrive as the board stored them."""
    import sqlite3

    src = make_board(tmp_path / "a.db", "board-a")
    tricky = "tab\there\nnewline\\backslash \\N \r\u2603 \u202e"
    conn = sqlite3.connect(src)
    with conn:
        conn.execute(
            "UPDATE runs SET invalid_reason=?, error=?, gate_detail=?, wall_ns=?, value=?, cpu=NULL"
            " WHERE id=(SELECT min(id) FROM runs)",
            (tricky, tricky[::-1], "\\.", 2**63 - 1, -1e100),  # the largest measured value a store holds
        )
        conn.execute("UPDATE runs SET value=5e-324 WHERE id=(SELECT max(id) FROM runs)")
    conn.close()
    with Store.open(src, create=False) as s:
        want = canonical(s)
    ingest_file(src, pg_url)
    with Store.open(pg_url, create=False) as t:
        got = canonical(t)
    assert got == want
    assert tricky in {r["invalid_reason"] for c in got.values() for r in c["runs"].values()}


def test_a_store_with_triggers_of_its_own_keeps_every_trigger_during_ingest(pg_url, tmp_path, monkeypatch):
    src = make_board(tmp_path / "a.db", "board-a")
    Store.open(pg_url).close()  # the store's tables, then an audit trigger of the lab's on its runs
    with Store.open(pg_url) as store:
        for sql in (
            "CREATE SCHEMA audit",
            "CREATE TABLE audit.seen (run_id BIGINT)",
            "CREATE FUNCTION audit.saw() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN INSERT INTO audit.seen VALUES (NEW.id); RETURN NEW; END $$",
            "CREATE TRIGGER audited AFTER INSERT ON runs FOR EACH ROW EXECUTE FUNCTION audit.saw()",
        ):
            store.conn.execute(sql)
    seen = _replication_role_while_copying(monkeypatch)
    added = ingest_file(src, pg_url).runs_added
    assert seen == ["origin"]  # the superuser's ingest left the triggers on: the lab's fires too
    with Store.open(pg_url, create=False) as t:
        assert t.conn.execute("SELECT count(*) FROM audit.seen").fetchone()[0] == added > 0


def test_the_monitor_series_over_postgresql_are_the_ones_of_the_board_file(pg_url, tmp_path):
    """The database's sums per time bucket (trunc, LEAST, float8 arithmetic on PostgreSQL) give the same
    points and the same monitor plots as SQLite; so do rows without a summary, read sample by sample on
    both."""
    from boardlab.analysis import monitor_series, sections
    from boardlab.report.render import render_sections

    db = make_campaign_db(tmp_path / "c.db", n=12)
    assert run_cli("ingest", str(db), "--db", pg_url).returncode == 0

    def same(a, b) -> bool:
        return (
            a.time_unit == b.time_unit
            and a.lines.keys() == b.lines.keys()
            and all(
                len(a.lines[s]) == len(b.lines[s])
                and all(p == pytest.approx(q, rel=1e-12) for p, q in zip(a.lines[s], b.lines[s], strict=True))
                for s in a.lines
            )
        )

    with Store.open(db, create=False) as lite:
        want = monitor_series(lite, 1)
    for damage in (None, "t_first_ns", "value_sum"):
        if damage:
            with Store.open(pg_url) as store:
                store.conn.execute(f"UPDATE run_series SET {damage} = NULL WHERE run_id % 3 = 0")
        with Store.open(pg_url, create=False) as store:
            got = monitor_series(store, 1)
        assert same(got, want) and len(got.lines) == 6, damage
        html = render_sections([sections.monitor(got)], "html")
        assert html == render_sections([sections.monitor(want)], "html")
